package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/plan"
)

// noteChunk encodes chunk number chunk of a topic with a nullable string column "note" that is
// null in every row but, when huge > 0, the middle one, which holds huge bytes; written by
// arrow-go with its defaults (dictionary encoding on), the column typed noteType.
func noteChunk(t *testing.T, chunk, rows, huge int, noteType arrow.DataType) ([]byte, chunkstats.Stats) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "note", Type: noteType, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	value := strings.Repeat("map snapshot ", huge/13+1)[:huge]
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i*8+chunk) * 1000) // chunks interleave
		bld.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
		if huge == 0 || i != rows/2 {
			bld.Field(2).AppendNull()
			continue
		}
		switch b := bld.Field(2).(type) {
		case *array.StringBuilder:
			b.Append(value)
		case *array.BinaryDictionaryBuilder:
			if err := b.AppendString(value); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return encodeChunk(t, rec)
}

// runPolicy runs Lease, ReadSort, every WriteChunks group and Commit of one compaction of the
// topic under run token; planned, when not nil, gets the stored plan before it is written.
func runPolicy(t *testing.T, a *activities.Activities, id int64, token, pol string, planned func(*plan.Plan)) activities.ReadSortResult {
	t.Helper()
	ctx := activities.WithRun(context.Background(), "test-owner", token)
	l, err := a.Lease(ctx, activities.LeaseInput{TopicID: id, Policy: pol})
	if err != nil {
		t.Fatalf("%s: lease: %v", pol, err)
	}
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, Policy: l.Policy})
	if err != nil {
		t.Fatalf("%s: read-sort: %v", pol, err)
	}
	if planned != nil {
		rec, err := a.Catalog.LoadPlan(ctx, id, token)
		if err != nil {
			t.Fatal(err)
		}
		var p plan.Plan
		if err := json.Unmarshal(rec.Body, &p); err != nil {
			t.Fatal(err)
		}
		planned(&p)
	}
	for g := range rs.Groups {
		if _, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: g}); err != nil {
			t.Fatalf("%s: write-chunks group %d: %v", pol, g, err)
		}
	}
	if _, err := a.Commit(ctx, activities.CommitInput{TopicID: id}); err != nil {
		t.Fatalf("%s: commit: %v", pol, err)
	}
	return rs
}

// TestLeveledOutputOfAHugeValueIsRewritable: a topic of small chunks with one 4 MB string among
// nulls (dictionary-encoded by its writer, as a string column and as an Arrow dictionary) is
// compacted by a leveled pass and then by a full pass, with a 256 MiB memory pool: the full pass
// rewrites storeopt's own L1 chunk (storeopt never refuses its own output), and the L1 chunk
// is not cut into row groups of a handful of rows.
func TestLeveledOutputOfAHugeValueIsRewritable(t *testing.T) {
	for _, noteType := range []arrow.DataType{arrow.BinaryTypes.String,
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}} {
		t.Run(noteType.String(), func(t *testing.T) {
			const chunks, rows = 6, 200
			ctx := context.Background()
			a, id := chunkTopic(t, 256<<20, "huge", "huge/notes", chunks, func(i int) ([]byte, chunkstats.Stats) {
				huge := 0
				if i == chunks/2 {
					huge = 4 << 20
				}
				return noteChunk(t, i, rows, huge, noteType)
			})
			cat, b := a.Catalog, a.Bucket

			runPolicy(t, a, id, "run-leveled", "leveled", nil)
			l1, err := cat.Chunks(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range l1 {
				data, err := b.ReadAll(ctx, c.ObjectKey)
				if err != nil {
					t.Fatal(err)
				}
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				groups := pf.NumRowGroups()
				smallest := pf.NumRows()
				for rg := range groups - 1 {
					smallest = min(smallest, pf.MetaData().RowGroup(rg).NumRows())
				}
				pf.Close()
				recorded := chunkstats.MaxRowBytes(c.ColumnStats)
				t.Logf("after leveled: chunk %s: %d rows in %d row groups (Arrow bytes %d, largest row recorded %d), smallest row group but the last %d rows",
					c.ObjectKey, c.RowCount, groups, c.ArrowSizeBytes, recorded, smallest)
				// The largest row is the 4 MiB note and a few bytes of the other columns.
				if recorded < 4<<20 || recorded > 4<<20+64 {
					t.Errorf("chunk %s: largest row recorded as %d bytes, the row holds %d", c.ObjectKey, recorded, 4<<20)
				}
				// At most the huge row in a row group of its own and the rows before and after it.
				if groups > 3 {
					t.Errorf("chunk %s: %d rows in %d row groups (the smallest %d rows): row groups of a handful of rows",
						c.ObjectKey, c.RowCount, groups, smallest)
				}
			}
			runPolicy(t, a, id, "run-full", "full", func(p *plan.Plan) {
				// The full pass bounds storeopt's own chunk by the row it recorded.
				for _, in := range p.Inputs {
					if in.ObjectKey == l1[0].ObjectKey && in.MaxRowBytes != chunkstats.MaxRowBytes(l1[0].ColumnStats) {
						t.Errorf("full plan bounds the rows of %s by %d bytes, storeopt recorded %d",
							in.ObjectKey, in.MaxRowBytes, chunkstats.MaxRowBytes(l1[0].ColumnStats))
					}
				}
			})
		})
	}
}
