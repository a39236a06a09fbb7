package app

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob/memblob"
)

// An object of several row groups is read in shares by several goroutines: every row is read
// once, whatever the parallelism and however the row groups divide among the shares.
func TestReadObjectsSplitsRowGroups(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var keys []string
	var want int64
	for i, groups := range []int{1, 5, 7} {
		bld := array.NewInt64Builder(memory.DefaultAllocator)
		for r := range groups * 100 {
			bld.Append(int64(r))
		}
		col := bld.NewArray()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		var buf bytes.Buffer
		fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100)), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
		key := []string{"a", "b", "c"}[i] + ".parquet"
		if err := b.WriteAll(ctx, key, buf.Bytes(), nil); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
		want += int64(groups * 100)
	}
	for _, parallel := range []int{1, 2, 3, 8} {
		st, err := ReadObjects(ctx, b, keys, parallel)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != want || st.Objects != 3 {
			t.Errorf("parallel %d: %d rows of %d objects, want %d of 3", parallel, st.Rows, st.Objects, want)
		}
	}
}
