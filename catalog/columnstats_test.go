package catalog_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/catalog"
)

// TestStoredColumnStats: what the catalog keeps of a chunk's column statistics, without a
// database (the JSON of column_stats; PostgreSQL's JSONB keeps the numbers' values).
func TestStoredColumnStats(t *testing.T) {
	got, err := catalog.StoredColumnStats(map[string]catalog.ColumnStats{
		"f":   {Min: 3.0, Max: 2.5, NullCount: 1, MaxValueBytes: 9},
		"u":   {Min: uint64(7), Max: uint64(math.MaxUint64)},
		"nan": {Min: math.NaN(), Max: math.Inf(1)},
		"s":   {Min: "a\x00", Max: "\xff", NullCount: 2},
		"b":   {Min: false, Max: true},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]catalog.ColumnStats{
		"f":   {Min: int64(3), Max: 2.5, NullCount: 1, MaxValueBytes: 9},
		"u":   {Min: int64(7), Max: float64(math.MaxUint64)},
		"nan": {},
		"s":   {NullCount: 2},
		"b":   {Min: false, Max: true},
	}, got)

	got, err = catalog.StoredColumnStats(nil)
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = catalog.StoredColumnStats(map[string]catalog.ColumnStats{"a\x00": {}})
	require.Error(t, err)
}
