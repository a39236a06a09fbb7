// Package testrows is the brute-force reader tests compare storeopt's window reads and
// compactions with: it reads ingested chunks with plain pqarrow and orders rows in the global
// order of docs/design.md#deterministic-output (timestamp_ns ascending, then ingestion order of
// the chunk, then stored row index).
package testrows

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/topicread"
)

// Row is one ingested row with what orders it.
type Row struct {
	Ts      int64 // timestamp_ns (0 when Null)
	Null    bool  // timestamp_ns is null
	Ordinal int   // ingestion order of its chunk
	Index   int64 // stored row index in that chunk
	Text    string
}

// Read returns the rows of the chunk at key, ingested as ordinal.
func Read(ctx context.Context, b *blob.Bucket, key string, ordinal int) ([]Row, error) {
	data, err := b.ReadAll(ctx, key)
	if err != nil {
		return nil, err
	}
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var out []Row
	for tr.Next() {
		rec := tr.RecordBatch()
		ts := rec.Column(rec.Schema().FieldIndices("timestamp_ns")[0]).(*array.Int64)
		for i := range int(rec.NumRows()) {
			r := Row{Ordinal: ordinal, Index: int64(len(out)), Text: Text(rec, i), Null: ts.IsNull(i)}
			if !r.Null {
				r.Ts = ts.Value(i)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Text renders row i of rec: every column's value, "|"-separated.
func Text(rec arrow.RecordBatch, i int) string {
	parts := make([]string, rec.NumCols())
	for c, col := range rec.Columns() {
		parts[c] = col.ValueStr(i)
	}
	return strings.Join(parts, "|")
}

// Window returns the texts of the rows with from <= timestamp_ns < to, in global order.
func Window(rows []Row, from, to int64) []string {
	var in []Row
	for _, r := range rows {
		if !r.Null && r.Ts >= from && r.Ts < to {
			in = append(in, r)
		}
	}
	slices.SortFunc(in, func(a, b Row) int {
		switch {
		case a.Ts != b.Ts:
			return cmp(a.Ts, b.Ts)
		case a.Ordinal != b.Ordinal:
			return a.Ordinal - b.Ordinal
		}
		return cmp(a.Index, b.Index)
	})
	out := make([]string, len(in))
	for i, r := range in {
		out[i] = r.Text
	}
	return out
}

func cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FirstDifference returns the first index where a and b differ (the shorter length when one is a
// prefix of the other).
func FirstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// ReadAll returns the rows of the chunks at keys, keys[i] ingested as ordinal i (the objects of
// ingested chunks stay in the store after compactions, so they are the brute-force truth).
func ReadAll(ctx context.Context, b *blob.Bucket, keys []string) ([]Row, error) {
	var out []Row
	for o, key := range keys {
		rows, err := Read(ctx, b, key, o)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// Span returns the smallest and largest non-null timestamp of rows.
func Span(rows []Row) (lo, hi int64) {
	lo, hi = 1<<63-1, -1<<63
	for _, r := range rows {
		if !r.Null {
			lo, hi = min(lo, r.Ts), max(hi, r.Ts)
		}
	}
	return lo, hi
}

// CheckWindow reads the window [from, to) of the topic with topicread.Window (what starter read
// runs) and compares its rows, in order, with the brute-force Window of rows; it returns what the
// read fetched, or an error naming the first difference.
func CheckWindow(ctx context.Context, cat *catalog.Catalog, b *blob.Bucket, locator string, rows []Row, from, to int64) (topicread.Stats, error) {
	var got []string
	st, err := topicread.Window(ctx, cat, b, locator, from, to, nil, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			got = append(got, Text(rec, i))
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("window [%d, %d): %w", from, to, err)
	}
	want := Window(rows, from, to)
	if !slices.Equal(got, want) {
		return st, fmt.Errorf("window [%d, %d): %d rows, want %d (first difference at %d)", from, to, len(got), len(want), FirstDifference(got, want))
	}
	if st.Rows != int64(len(want)) {
		return st, fmt.Errorf("window [%d, %d): stats say %d rows, %d read", from, to, st.Rows, len(want))
	}
	return st, nil
}
