package verify

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/internal/arrowtypes"
)

// readCase reads the chunk of one type case with pqarrow (as storeopt reads rows) as one batch.
func readCase(t *testing.T, tc arrowtypes.Case, rows int) arrow.RecordBatch {
	t.Helper()
	data, err := arrowtypes.File(tc, rows)
	if err != nil {
		t.Fatal(err)
	}
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
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		if cols[i], err = array.Concatenate(tbl.Column(i).Data().Chunks(), memory.DefaultAllocator); err != nil {
			t.Fatal(err)
		}
		defer cols[i].Release()
	}
	return array.NewRecordBatch(tbl.Schema(), cols, tbl.NumRows())
}

// The digest of every type of internal/arrowtypes does not depend on how rows are sliced into
// batches or ordered, and changes when one value changes.
func TestDigestEveryType(t *testing.T) {
	for _, tc := range arrowtypes.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			rec := readCase(t, tc, 12)
			defer rec.Release()
			var h Hasher
			whole := h.Record(rec)
			var parts Digest
			for _, cut := range [][2]int64{{7, 12}, {0, 3}, {3, 7}} { // other order, sliced batches
				s := rec.NewSlice(cut[0], cut[1])
				h.AddRows(&parts, s, 0, s.NumRows())
				s.Release()
			}
			if parts != whole || whole.Rows != 12 {
				t.Fatalf("whole %s, parts %s", whole, parts)
			}
			// Rows 0 and 2 of column v differ (the six values are distinct where it matters):
			// swapping v between them changes the multiset of rows.
			v := rec.Column(1)
			a, b, c := array.NewSlice(v, 2, 3), array.NewSlice(v, 1, 2), array.NewSlice(v, 0, 1)
			rest := array.NewSlice(v, 3, int64(v.Len()))
			swapped, err := array.Concatenate([]arrow.Array{a, b, c, rest}, memory.DefaultAllocator)
			for _, x := range []arrow.Array{a, b, c, rest} {
				x.Release()
			}
			if err != nil {
				t.Fatal(err)
			}
			defer swapped.Release()
			other := array.NewRecordBatch(rec.Schema(), []arrow.Array{rec.Column(0), swapped}, rec.NumRows())
			defer other.Release()
			if h.Record(other) == whole {
				t.Fatalf("digest does not see values of column %s move between rows", v.DataType())
			}
		})
	}
}
