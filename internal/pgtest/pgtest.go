// Package pgtest gives tests a fresh, migrated catalog database on a real PostgreSQL server.
//
// The server is the one at $STOREOPT_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); its user must be allowed to
// create databases. A test is skipped when the server is unreachable, unless $CI is set: then it
// fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/catalog"
)

// DefaultServerURL is used when STOREOPT_TEST_DATABASE_URL is unset.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the URL of the test server's maintenance database.
func ServerURL() string {
	if u := os.Getenv("STOREOPT_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultServerURL
}

// NewDatabase creates a database named storeopt_t_<16 hex digits> on the test server, migrates
// it with catalog.Migrate, drops it (WITH (FORCE)) when the test ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dbURL := NewEmptyDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := catalog.Migrate(ctx, dbURL); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// NewEmptyDatabase is NewDatabase without the migration: the database has no tables.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	server := ServerURL()
	admin, err := connect(ctx, server)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("pgtest: PostgreSQL test server %s unreachable, skipping (set STOREOPT_TEST_DATABASE_URL; with CI set this fails): %v",
				catalog.RedactURL(server), err)
		}
		t.Fatalf("pgtest: PostgreSQL test server %s unreachable (CI is set, so this is a failure): %v", catalog.RedactURL(server), err)
	}
	defer admin.Close(context.Background())

	var random [8]byte
	if _, err := rand.Read(random[:]); err != nil {
		t.Fatalf("pgtest: random database name: %v", err)
	}
	name := "storeopt_t_" + hex.EncodeToString(random[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v", name, catalog.RedactURL(server), err)
	}
	t.Cleanup(func() { dropDatabase(t, server, name) })

	dbURL, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// NewCatalog opens a catalog on a fresh database (NewDatabase) and closes it when the test ends.
func NewCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	dbURL := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := catalog.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func connect(ctx context.Context, connString string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func dropDatabase(t testing.TB, server, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := connect(ctx, server)
	if err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
		return
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

// withDatabase returns connString pointing at database name (URL or key=value form).
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil { // err quotes the URL: do not leak its password
			return "", fmt.Errorf("test server URL %s does not parse", catalog.RedactURL(connString))
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// key=value: a later keyword overrides an earlier one
	return connString + " dbname=" + name, nil
}
