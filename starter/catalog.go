package main

import (
	"context"
	"fmt"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/policy"
)

func migrateCatalog(ctx context.Context, e *env) error {
	if err := catalog.Migrate(ctx, e.cfg.DatabaseURL); err != nil {
		return fmt.Errorf("migrate catalog: %w", err)
	}
	return nil
}

// openCatalog migrates and opens the catalog.
func openCatalog(ctx context.Context, e *env) (*catalog.Catalog, error) {
	if err := migrateCatalog(ctx, e); err != nil {
		return nil, err
	}
	return catalog.Open(ctx, e.cfg.DatabaseURL)
}

// openData migrates and opens the catalog and opens the store; close releases both.
func openData(ctx context.Context, e *env) (cat *catalog.Catalog, bucket *blob.Bucket, close func(), err error) {
	cat, err = openCatalog(ctx, e)
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

// checkScope returns an error naming the first sequence or topic of the scope terms that is not
// in the catalog (app.CheckScope), so that a mistyped name fails before a run that would
// optimize nothing.
func checkScope(ctx context.Context, e *env, terms []string) error {
	scope, err := policy.ParseScope(terms)
	if err != nil || scope.All() {
		return err
	}
	// Only read: the worker owns the catalog's schema, and a starter that merely checks a name
	// changes nothing.
	cat, err := catalog.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer cat.Close()
	topics, err := cat.ListTopics(ctx)
	if err != nil {
		return err
	}
	locators := make([]string, len(topics))
	for i, t := range topics {
		locators[i] = t.Locator
	}
	return app.CheckScope(locators, scope)
}
