package compaction

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/parquetio"
)

// corruptBatch damages a batch on its way to the encoder when a test enables the faults
// OutputDropRow or OutputChangeValue (builds with the storeopt_faults tag only), so tests can
// prove that verification catches lost and changed rows. Otherwise it returns rec.
func corruptBatch(rec arrow.RecordBatch, tsField int, mem memory.Allocator) arrow.RecordBatch {
	if !faults.Enabled || rec.NumRows() < 2 {
		return rec
	}
	n := rec.NumRows()
	switch {
	case faults.Triggered(faults.OutputDropRow):
		s := rec.NewSlice(1, n)
		rec.Release()
		return s
	case faults.Triggered(faults.OutputChangeValue):
		c := int(rec.NumCols()) - 1 // the last column, usually a varying value
		if c == tsField {
			c = 0
		}
		col := rec.Column(c)
		a, b := array.NewSlice(col, 1, 2), array.NewSlice(col, 1, n)
		changed, err := array.Concatenate([]arrow.Array{a, b}, mem)
		a.Release()
		b.Release()
		if err != nil {
			return rec
		}
		cols := append([]arrow.Array(nil), rec.Columns()...)
		cols[c] = changed
		out := array.NewRecordBatch(rec.Schema(), cols, n)
		changed.Release()
		rec.Release()
		return out
	}
	return rec
}

// writerLayout returns the layout to write with: layout itself, or, when a test enables the fault
// OutputAlterMetadata, a copy whose footer gains one key/value pair.
func writerLayout(layout *parquetio.Layout) *parquetio.Layout {
	if !faults.Enabled || !faults.Triggered(faults.OutputAlterMetadata) {
		return layout
	}
	return layout.WithKeyValue("storeopt:altered", "yes")
}
