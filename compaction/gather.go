package compaction

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// span is rows [from, to) of a record batch that the collector holds a reference to.
type span struct {
	rec      arrow.RecordBatch
	from, to int64
}

// gatherable reports whether gatherSpans can copy every column of schema: fixed-width types of
// whole bytes (integers, floats, timestamps, decimals, fixed-size binary…) and binary or string
// columns with 32-bit offsets, at the top level. Other schemas (nested, dictionary, boolean,
// large offsets, extension types) are merged by slicing and concatenating.
func gatherable(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if _, ok := gatherKind(f.Type); !ok {
			return false
		}
	}
	return true
}

// gatherKind returns the byte width of a fixed-width column (0 for binary/string) and whether the
// type is gatherable.
func gatherKind(dt arrow.DataType) (width int, ok bool) {
	switch dt.ID() {
	case arrow.BINARY, arrow.STRING:
		return 0, true
	case arrow.DICTIONARY, arrow.EXTENSION, arrow.BOOL, arrow.NULL:
		return 0, false
	}
	fw, isFixed := dt.(arrow.FixedWidthDataType)
	if !isFixed || fw.BitWidth() <= 0 || fw.BitWidth()%8 != 0 {
		return 0, false
	}
	return fw.BitWidth() / 8, true
}

// gatherSpans copies the rows of spans, in order, into one new record batch of schema (whose
// columns must be gatherable). It costs one buffer copy per column and span, where slicing every
// short run and concatenating the slices costs an Arrow array per column and run: merging
// interleaved inputs emits runs of one or two rows.
func gatherSpans(schema *arrow.Schema, spans []span, mem memory.Allocator) (arrow.RecordBatch, error) {
	var rows int64
	for _, s := range spans {
		rows += s.to - s.from
	}
	cols := make([]arrow.Array, schema.NumFields())
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for i, f := range schema.Fields() {
		width, _ := gatherKind(f.Type)
		var (
			data *array.Data
			err  error
		)
		if f.Type.ID() == arrow.BINARY || f.Type.ID() == arrow.STRING {
			data, err = gatherBinary(f.Type, spans, i, rows, mem)
		} else {
			data = gatherFixed(f.Type, width, spans, i, rows, mem)
		}
		if err != nil {
			release()
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		cols[i] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	release()
	return rec, nil
}

// gatherValidity returns the validity bitmap of column i over spans (nil when no row is null)
// and the null count.
func gatherValidity(spans []span, i int, rows int64, mem memory.Allocator) (*memory.Buffer, int) {
	nulls := 0
	for _, s := range spans {
		col := s.rec.Column(i)
		if col.NullN() > 0 {
			n := int(s.to - s.from)
			nulls += n - bitutil.CountSetBits(col.NullBitmapBytes(), col.Data().Offset()+int(s.from), n)
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(rows)))
	bits := buf.Bytes()
	var pos int64
	for _, s := range spans {
		col := s.rec.Column(i)
		n := s.to - s.from
		if col.NullN() == 0 {
			bitutil.SetBitsTo(bits, pos, n, true)
		} else {
			bitutil.CopyBitmap(col.NullBitmapBytes(), col.Data().Offset()+int(s.from), int(n), bits, int(pos))
		}
		pos += n
	}
	return buf, nulls
}

func gatherFixed(dt arrow.DataType, width int, spans []span, i int, rows int64, mem memory.Allocator) *array.Data {
	validity, nulls := gatherValidity(spans, i, rows, mem)
	values := memory.NewResizableBuffer(mem)
	values.Resize(int(rows) * width)
	dst := values.Bytes()
	var pos int64
	for _, s := range spans {
		col := s.rec.Column(i).Data()
		src := col.Buffers()[1].Bytes()
		off := int64(col.Offset())
		n := copy(dst[pos*int64(width):], src[(off+s.from)*int64(width):(off+s.to)*int64(width)])
		pos += int64(n / width)
	}
	data := array.NewData(dt, int(rows), []*memory.Buffer{validity, values}, nil, nulls, 0)
	if validity != nil {
		validity.Release()
	}
	values.Release()
	return data
}

func gatherBinary(dt arrow.DataType, spans []span, i int, rows int64, mem memory.Allocator) (*array.Data, error) {
	var total int64
	for _, s := range spans {
		offs := binaryOffsets(s.rec.Column(i).Data())
		total += int64(offs[s.to] - offs[s.from])
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("%d bytes of values exceed 32-bit offsets", total)
	}
	validity, nulls := gatherValidity(spans, i, rows, mem)
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(int(rows+1) * 4)
	values := memory.NewResizableBuffer(mem)
	values.Resize(int(total))
	od, vd := offsets.Bytes(), values.Bytes()
	var pos, at int64
	for _, s := range spans {
		col := s.rec.Column(i).Data()
		offs := binaryOffsets(col)
		var src []byte
		if b := col.Buffers()[2]; b != nil {
			src = b.Bytes()
		}
		base := offs[s.from]
		for r := s.from; r < s.to; r++ {
			binary.LittleEndian.PutUint32(od[pos*4:], uint32(at+int64(offs[r]-base)))
			pos++
		}
		n := copy(vd[at:], src[base:offs[s.to]])
		at += int64(n)
	}
	binary.LittleEndian.PutUint32(od[pos*4:], uint32(at))
	data := array.NewData(dt, int(rows), []*memory.Buffer{validity, offsets, values}, nil, nulls, 0)
	if validity != nil {
		validity.Release()
	}
	offsets.Release()
	values.Release()
	return data, nil
}

// binaryOffsets returns the 32-bit value offsets of a binary or string array, indexed by row from
// the array's own first row.
func binaryOffsets(d arrow.ArrayData) []int32 {
	return arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+d.Len()+1]
}
