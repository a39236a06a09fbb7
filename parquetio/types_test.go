package parquetio

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/storeopt/storeopt/internal/arrowtypes"
)

// plainRead reads data with plain pqarrow and returns its Arrow schema and every row rendered.
func plainRead(t testing.TB, data []byte) (*arrow.Schema, []string, error) {
	t.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, err
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var rows []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var parts []string
			for _, col := range rec.Columns() {
				parts = append(parts, col.ValueStr(i))
			}
			rows = append(rows, strings.Join(parts, "|"))
		}
	}
	return tbl.Schema(), rows, nil
}

// dictionaryEncoded reports whether column chunk leaf of every row group of data has a
// dictionary page.
func dictionaryEncoded(t testing.TB, data []byte, leaf int) bool {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	for rg := range pf.NumRowGroups() {
		cc, err := pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
		if err != nil {
			t.Fatal(err)
		}
		if !cc.HasDictionaryPage() {
			return false
		}
	}
	return true
}

// Every type of issue 8's point 3 is read in its storage type, written back with the input's
// footer verbatim, read back by plain pqarrow with the same Arrow types and values, and digested
// identically before and after.
func TestEveryTypeRoundTrips(t *testing.T) {
	for _, tc := range arrowtypes.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			in, err := arrowtypes.File(tc, 600)
			if err != nil {
				t.Fatal(err)
			}
			c, dIn, err := readAll(in, 97)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			out := rewrite(t, in, 97)
			back, dOut, err := readAll(out, 97)
			if err != nil {
				t.Fatalf("read the output: %v", err)
			}
			if d := FirstFooterDifference(c.Footer, back.Footer); d != "" {
				t.Fatalf("footer: %s", d)
			}
			if dIn != dOut || dIn.Rows != 600 {
				t.Fatalf("digest of the input %s, of the output %s", dIn, dOut)
			}
			sIn, rowsIn, errIn := plainRead(t, in)
			sOut, rowsOut, errOut := plainRead(t, out)
			if errIn != nil || errOut != nil {
				// arrow-go cannot read the input with its stored schema (arrow.json in v18.8.0):
				// it must fail the same way on the output.
				if errIn == nil || errOut == nil || errIn.Error() != errOut.Error() {
					t.Fatalf("plain pqarrow reads the input with error %v, the output with error %v", errIn, errOut)
				}
				t.Logf("plain pqarrow cannot read input nor output: %v", errIn)
				return
			}
			if !sIn.Equal(sOut) || sIn.Field(1).Type.String() != back.Schema.Field(1).Type.String() {
				t.Fatalf("pqarrow reads the input as %s, the output as %s", sIn.Field(1).Type, sOut.Field(1).Type)
			}
			if strings.Join(rowsIn, "\n") != strings.Join(rowsOut, "\n") {
				t.Fatalf("rows differ:\n%s\n---\n%s", strings.Join(rowsIn[:6], "\n"), strings.Join(rowsOut[:6], "\n"))
			}
			if tc.Dict && !dictionaryEncoded(t, out, 1) {
				t.Fatalf("the output of a dictionary column is not dictionary-encoded")
			}
			t.Logf("stored %s, read as %s", cmpOr(tc.Stored, tc.Written), sOut.Field(1).Type)
		})
	}
}

func cmpOr(a, b arrow.DataType) arrow.DataType {
	if a != nil {
		return a
	}
	return b
}
