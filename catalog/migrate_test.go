package catalog_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
)

// appliedVersions returns goose's applied migration versions (with duplicates, if any).
func appliedVersions(t *testing.T, dbURL string) []int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT version_id FROM goose_db_version WHERE is_applied ORDER BY id`)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return versions
}

func TestMigrateIsIdempotent(t *testing.T) {
	dbURL := pgtest.NewDatabase(t) // migrated once already
	before := appliedVersions(t, dbURL)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7}, before)
	for range 2 {
		require.NoError(t, catalog.Migrate(context.Background(), dbURL))
	}
	require.Equal(t, before, appliedVersions(t, dbURL))
}

func TestMigrateConcurrently(t *testing.T) {
	dbURL := pgtest.NewEmptyDatabase(t)
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = catalog.Migrate(context.Background(), dbURL) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "migration %d", i)
	}
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7}, appliedVersions(t, dbURL))

	c, err := catalog.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CreateSequence(context.Background(), "run_1")
	require.NoError(t, err)
}

func TestErrorsHideThePassword(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	// Port 1 refuses connections at once.
	for _, dbURL := range []string{
		"postgres://postgres:" + secret + "@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5",
		"host=127.0.0.1 port=1 user=postgres password=" + secret + " sslmode=disable connect_timeout=5",
		"postgres://postgres:" + secret + "@127.0.0.1:1/postgres?sslmode=bogus",
	} {
		_, err := catalog.Open(context.Background(), dbURL)
		require.Error(t, err)
		require.NotContains(t, err.Error(), secret)
		require.Contains(t, err.Error(), "127.0.0.1", "the error still says where it tried to connect")

		err = catalog.Migrate(context.Background(), dbURL)
		require.Error(t, err)
		require.NotContains(t, err.Error(), secret)
	}
	require.Equal(t, "postgres://u:xxxxx@h/db", catalog.RedactURL("postgres://u:pw@h/db"))
	require.False(t, strings.Contains(catalog.RedactURL("host=h password='a b' user=u"), "a b"))
}
