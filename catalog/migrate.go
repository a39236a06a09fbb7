package catalog

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockID is the key of the PostgreSQL advisory lock held while migrating (advisory locks
// are per database, so it only serializes migrations of the same catalog).
const migrateLockID int64 = 0x73746f72656f7074 // "storeopt"

// Migrate brings the catalog schema at databaseURL to the newest version embedded in this
// binary (goose migrations in catalog/migrations, version table goose_db_version). It is
// idempotent, and concurrent calls from several processes are serialized by an advisory lock:
// the first applies the migrations, the others then find nothing to do. Errors never contain
// the password of databaseURL.
func Migrate(ctx context.Context, databaseURL string) error {
	return MigrateTo(ctx, databaseURL, 0)
}

// MigrateTo is Migrate up to schema version (0 = the newest): for tests of a migration on a
// catalog of an older version.
func MigrateTo(ctx context.Context, databaseURL string, version int64) error {
	if err := migrate(ctx, databaseURL, version); err != nil {
		return redactError(databaseURL, fmt.Errorf("catalog: migrate %s: %w", RedactURL(databaseURL), err))
	}
	return nil
}

func migrate(ctx context.Context, databaseURL string, version int64) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close() // also ends the lock session if unlocking failed

	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys)
	if err != nil {
		return err
	}

	lockConn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer lockConn.Close()
	// pg_advisory_lock waits (no polling); a cancelled ctx cancels the wait.
	if _, err := lockConn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrateLockID); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer lockConn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockID) //nolint:errcheck // closing the session releases it too

	if version > 0 {
		_, err = provider.UpTo(ctx, version)
	} else {
		_, err = provider.Up(ctx)
	}
	return err
}
