package chunkstats

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/internal/arrowtypes"
)

// Every type of internal/arrowtypes, as storeopt reads it, gets its column's null count, the
// timestamp facts and the same statistics however the rows are sliced into batches (Arrow bytes
// too, except for dictionaries, whose size is an estimate per batch).
func TestStatsEveryType(t *testing.T) {
	for _, tc := range arrowtypes.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			data, err := arrowtypes.File(tc, 60)
			require.NoError(t, err)
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			switch {
			case err != nil && tc.PlainReadFails:
				t.Skipf("pqarrow cannot read %s with its stored schema (as known): %v", tc.Name, err)
			case err != nil:
				t.Fatalf("pqarrow cannot read %s with its stored schema: %v", tc.Name, err)
			case tc.PlainReadFails:
				t.Fatalf("pqarrow now reads %s: clear its PlainReadFails (internal/arrowtypes) so this test covers it", tc.Name)
			}
			defer tbl.Release()
			stats := func(batch int64) Stats {
				acc, err := NewAccumulator(tbl.Schema())
				require.NoError(t, err)
				tr := array.NewTableReader(tbl, batch)
				defer tr.Release()
				for tr.Next() {
					acc.Add(tr.RecordBatch())
				}
				require.NoError(t, acc.Err())
				return acc.Result()
			}
			whole, sliced := stats(60), stats(7)
			var nulls int64
			for _, c := range tbl.Column(1).Data().Chunks() {
				nulls += int64(c.NullN())
			}
			require.EqualValues(t, 60, whole.RowCount)
			require.Equal(t, nulls, whole.Columns["v"].NullCount)
			require.NotNil(t, whole.MinTimestampNs)
			if tbl.Schema().Field(1).Type.ID() == arrow.DICTIONARY {
				sliced.ArrowSizeBytes = whole.ArrowSizeBytes
			}
			require.Equal(t, whole, sliced)
			require.Positive(t, whole.ArrowSizeBytes)
		})
	}
}
