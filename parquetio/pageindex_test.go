package parquetio

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// sparseObject serves only some byte ranges of an object, as a window read fetches them: a read
// inside a range returns what the range holds from there (io.EOF when that is short), a read
// elsewhere nothing (io.EOF), so a reader that strays from the ranges it was given fails or ends
// early instead of reading bytes it did not fetch.
type sparseObject struct {
	data   []byte
	ranges []ByteRange
	off    int64
}

func (s *sparseObject) InMemory() bool { return true }

func (s *sparseObject) ReadAt(p []byte, off int64) (int, error) {
	for _, r := range s.ranges {
		if off >= r.Offset && off < r.End() {
			n := copy(p, s.data[off:r.End()])
			if n < len(p) {
				return n, io.EOF
			}
			return n, nil
		}
	}
	return 0, io.EOF
}

func (s *sparseObject) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.off)
	s.off += int64(n)
	return n, err
}

func (s *sparseObject) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += int64(len(s.data))
	}
	s.off = offset
	return offset, nil
}

// rowTexts renders rows [from, to) of every batch of br, in order.
func rowTexts(t *testing.T, br *BatchReader) []string {
	t.Helper()
	var out []string
	for rec := br.Next(); rec != nil; rec = br.Next() {
		for i := range int(rec.NumRows()) {
			out = append(out, rowText(rec, i))
		}
	}
	if err := br.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func rowText(rec arrow.RecordBatch, i int) string {
	var b bytes.Buffer
	for _, col := range rec.Columns() {
		b.WriteString(col.ValueStr(i))
		b.WriteByte('|')
	}
	return b.String()
}

// Every column of an output has an offset index and timestamp_ns a column index; no data page
// holds more than DataPageRows rows, nor (for the binary column of large values) much more than
// DataPageBytes; and the rows of a window read from only the pages WindowPages names (with the
// footer and the page index) are the chunk's rows, lists and dictionaries included.
func TestWindowPagesReadOnlyTheirPages(t *testing.T) {
	schema := topicSchema()
	const n = 20_000
	data := write(t, schema, n, []int{3000, 777, 5000}, WriterOptions{RowGroupRows: 9000})
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pf := c.pf
	for rg := range pf.NumRowGroups() {
		pi := c.PageIndex(rg)
		if pi.Timestamps == nil || pi.Offsets == nil {
			t.Fatalf("row group %d: no page index", rg)
		}
		pir, err := pf.GetPageIndexReader().RowGroup(rg)
		if err != nil {
			t.Fatal(err)
		}
		for col := range pf.MetaData().Schema.NumColumns() {
			oi, err := pir.GetOffsetIndex(col)
			if err != nil || oi == nil {
				t.Fatalf("row group %d column %d: offset index %v, %v", rg, col, oi, err)
			}
			pages := oi.GetPageLocations()
			for p := range pages {
				if rows := pageEnd(pages, p, c.RowGroupRows(rg)) - pages[p].FirstRowIndex; rows > DataPageRows || rows <= 0 {
					t.Fatalf("row group %d column %d page %d: %d rows", rg, col, p, rows)
				}
			}
			if len(pages) < int(c.RowGroupRows(rg)/DataPageRows) {
				t.Fatalf("row group %d column %d: %d pages for %d rows", rg, col, len(pages), c.RowGroupRows(rg))
			}
		}
	}
	all := rowTexts(t, mustBatches(t, c))
	ctx := context.Background()
	for _, w := range [][2]int64{{0, 10}, {12_345, 12_400}, {89_990, 90_010}, {30_000, 150_000}, {199_000, 1 << 40}, {-5, 0}} {
		var got, want []string
		var fetched int64
		var first int64
		for rg := range c.NumRowGroups() {
			// The reader serves the footer and the page index, then the timestamp pages, then
			// the pages WindowPages names, and nothing else.
			tail := int64(len(data)) - 8 - int64(c.FooterBytes)
			pi := c.PageIndex(rg)
			sparse := &sparseObject{data: data, ranges: []ByteRange{*pi.Timestamps, *pi.Offsets, {tail, int64(len(data)) - tail}}}
			sc, err := Open(sparse, nil)
			if err != nil {
				t.Fatal(err)
			}
			ts, ok, err := sc.TimestampPages(rg, w[0], w[1])
			if err != nil || !ok {
				t.Fatalf("window %v row group %d: %v %v", w, rg, ok, err)
			}
			sparse.ranges = append(sparse.ranges, ts.Ranges...)
			wp, ok, err := sc.WindowPages(ctx, rg, w[0], w[1], 0)
			if err != nil || !ok {
				t.Fatalf("window %v row group %d: %v %v", w, rg, ok, err)
			}
			if wp.From < wp.To {
				sparse.ranges = append(sparse.ranges, wp.Ranges...)
				br, err := sc.RowsOf(ctx, Limits{Rows: 700}, rg, wp.From, wp.To)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rowTexts(t, br)...)
				br.Release()
				fetched += wp.Bytes() + ts.Bytes()
				want = append(want, all[first+wp.From:first+wp.To]...)
			}
			sc.Close()
			// every row of the window lies in the rows read
			for i := first; i < first+c.RowGroupRows(rg); i++ {
				if ts, ok := timestampOf(i); ok && ts >= w[0] && ts < w[1] && (i < first+wp.From || i >= first+wp.To) {
					t.Fatalf("window %v: row %d (ts %d) outside the rows read [%d, %d)", w, i, ts, first+wp.From, first+wp.To)
				}
			}
			first += c.RowGroupRows(rg)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("window %v: %d rows read from the pages, want %d", w, len(got), len(want))
		}
		t.Logf("window %v: %d rows, %d of %d bytes of pages", w, len(got), fetched, len(data))
	}
}

// timestampOf is the timestamp rows() gives row i.
func timestampOf(i int64) (int64, bool) { return i * 10, i%7 != 3 }

func mustBatches(t *testing.T, c *Chunk) *BatchReader {
	t.Helper()
	br, err := c.Batches(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Release)
	return br
}

// Pages of large binary values stay near DataPageBytes: a write of 1024 frames is cut in pieces.
func TestLargeValuesMakeSmallPages(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "data", Type: arrow.BinaryTypes.Binary},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	frame := bytes.Repeat([]byte{7}, 50_000)
	for i := range 300 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		frame[i%len(frame)] = byte(i)
		b.Field(1).(*array.BinaryBuilder).Append(frame)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	pf, err := file.NewParquetReader(bytes.NewReader(writeRecord(t, rec)))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pir, err := pf.GetPageIndexReader().RowGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	oi, err := pir.GetOffsetIndex(1)
	if err != nil {
		t.Fatal(err)
	}
	pages := oi.GetPageLocations()
	for p, loc := range pages {
		rows := pageEnd(pages, p, 300) - loc.FirstRowIndex
		if int64(rows)*50_000 > 2*DataPageBytes {
			t.Fatalf("page %d holds %d frames of 50 kB", p, rows)
		}
	}
	if len(pages) < 300*50_000/(2*DataPageBytes) {
		t.Fatalf("%d pages", len(pages))
	}
}

// TestPagesOfNullTimestampsAreIndexed proves that a row group whose last pages hold only null
// timestamps (nulls sort last) is read by its page index like any other: the column index lists
// min/max for every page, the null ones included, and a window finds exactly its rows.
func TestPagesOfNullTimestampsAreIndexed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const valued, nulls = 3 * DataPageRows, 2*DataPageRows + 100
	for i := range valued + nulls {
		if i < valued {
			b.Field(0).(*array.Int64Builder).Append(int64(i) * 10)
		} else {
			b.Field(0).AppendNull()
		}
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	c, err := Open(bytes.NewReader(writeRecord(t, rec)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, w := range [][2]int64{{0, 10}, {12_345, 12_400}, {0, 1 << 40}} {
		wp, ok, err := c.WindowPages(context.Background(), 0, w[0], w[1], 0)
		if err != nil || !ok {
			t.Fatalf("window %v: %v, %v", w, ok, err)
		}
		wantFrom, wantTo := (w[0]+9)/10, min((w[1]+9)/10, valued)
		if wp.From != wantFrom || wp.To != wantTo {
			t.Errorf("window %v: rows [%d, %d), want [%d, %d)", w, wp.From, wp.To, wantFrom, wantTo)
		}
	}
}
