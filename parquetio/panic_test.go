package parquetio

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/storeopt/storeopt/panics"
)

// smallChunk is an uncompressed chunk of 50 rows: timestamp_ns and a string column with nulls.
func smallChunk(t *testing.T) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: TimestampColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 50 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%7))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return encodePlainWith(t, sc, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed)), nil, rec)
}

// readEvery opens data and reads all its rows, returning the first error.
func readEvery(data []byte) error {
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Timestamps(context.Background()); err != nil {
		return err
	}
	br, err := c.Batches(context.Background(), 100)
	if err != nil {
		return err
	}
	defer br.Release()
	for r := br.Next(); r != nil; r = br.Next() {
	}
	return br.Err()
}

// Bytes of the input that make arrow-go's decoder panic are the input's fault: every such panic
// (found by overwriting single bytes of a chunk's first page headers and data) is an
// *InputError naming the step, never an internal error.
func TestDecoderPanicsAreInputErrors(t *testing.T) {
	data := smallChunk(t)
	var panicked int
	for pos := 4; pos < min(len(data)-8, 600); pos++ {
		for _, v := range []byte{0x00, 0x80, 0xff} {
			d := bytes.Clone(data)
			d[pos] = v
			err := readEvery(d)
			if pe, ok := panics.As(err); ok {
				t.Fatalf("byte %d = %#x: the decoder's panic is reported as an internal error: %v\n%s", pos, v, err, pe.Stack)
			}
			if err != nil && strings.Contains(err.Error(), "reader panicked on malformed data") {
				if !IsInputError(err) {
					t.Fatalf("byte %d = %#x: %v (%T) is not an input error", pos, v, err, err)
				}
				panicked++
			}
		}
	}
	if panicked == 0 {
		t.Fatal("no corrupt byte made the decoder panic: the test proves nothing")
	}
	t.Logf("%d corrupt bytes made the decoder panic", panicked)
}

// A panic of storeopt's own code while reading a chunk is a bug, not bad input: an internal
// error (*panics.Error) with the stack of the panic, whether storeopt's code panicked itself or
// misused an Arrow value (here a batch reader whose schema a bug truncated: arrow's Schema.Field
// is called out of range by BatchReader.Next).
func TestStoreoptPanicsWhileReadingAreInternalErrors(t *testing.T) {
	c, err := Open(bytes.NewReader(smallChunk(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := c.Batches(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Release()
	br.schema = arrow.NewSchema(br.schema.Fields()[:1], nil) // the bug
	if rec := br.Next(); rec != nil {
		t.Fatal("a batch read with a truncated schema")
	}
	err = br.Err()
	pe, ok := panics.As(err)
	if !ok || IsInputError(err) {
		t.Fatalf("got %v (%T), want an internal error", err, err)
	}
	if !strings.Contains(string(pe.Stack), "parquetio.(*BatchReader).Next") || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("error %q, stack:\n%s", err, pe.Stack)
	}

	// storeopt's own panic inside a guarded step.
	err = func() (err error) {
		defer guard(&err, "read page headers")
		var sizes map[int]int64
		sizes[1] = 2 // a nil map: storeopt's bug
		return nil
	}()
	if pe, ok := panics.As(err); !ok || IsInputError(err) || !strings.Contains(string(pe.Stack), "TestStoreoptPanicsWhileReadingAreInternalErrors") {
		t.Fatalf("got %v (%T), want an internal error with the stack", err, err)
	}
}
