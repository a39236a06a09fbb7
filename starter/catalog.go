package main

import (
	"context"
	"fmt"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
)

func migrateCatalog(ctx context.Context, e *env) error {
	if err := catalog.Migrate(ctx, e.cfg.DatabaseURL); err != nil {
		return fmt.Errorf("migrate catalog: %w", err)
	}
	return nil
}

// openData migrates and opens the catalog and opens the store; close releases both.
func openData(ctx context.Context, e *env) (cat *catalog.Catalog, bucket *blob.Bucket, close func(), err error) {
	if err := migrateCatalog(ctx, e); err != nil {
		return nil, nil, nil, err
	}
	cat, err = catalog.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return nil, nil, nil, err
	}
	bucket, err = app.OpenStore(ctx, e.cfg.StoreURL)
	if err != nil {
		cat.Close()
		return nil, nil, nil, err
	}
	return cat, bucket, func() {
		if err := bucket.Close(); err != nil {
			e.logger.Warn("close store", "store", app.RedactURL(e.cfg.StoreURL), "error", err)
		}
		cat.Close()
	}, nil
}
