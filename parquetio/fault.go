package parquetio

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// changeable says whether changeFirstValue can change values: a fixed-width column of whole
// bytes whose first value is valid.
func changeable(values arrow.Array) bool {
	return changeableType(values.DataType()) && values.Len() > 0 && values.IsValid(0) &&
		len(values.Data().Buffers()) == 2 && values.Data().Buffers()[1] != nil
}

// changeableType says whether values of type dt can be changed by changeFirstValue (when the
// first one is valid): fixed-width values of whole bytes.
func changeableType(dt arrow.DataType) bool {
	fw, ok := dt.(arrow.FixedWidthDataType)
	return ok && fw.BitWidth() >= 8 && fw.BitWidth()%8 == 0
}

// changeFirstValue returns a copy of values (changeable) whose first value has its lowest bit
// flipped: the encoder fault of faults.EncodeChangeValue (builds with the storeopt_faults tag).
func changeFirstValue(values arrow.Array, mem memory.Allocator) arrow.Array {
	d := values.Data()
	width := d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
	src := d.Buffers()[1].Bytes()
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(src))
	copy(buf.Bytes(), src)
	buf.Bytes()[d.Offset()*width] ^= 1
	changed := array.NewData(d.DataType(), d.Len(), []*memory.Buffer{d.Buffers()[0], buf}, nil, d.NullN(), d.Offset())
	buf.Release()
	defer changed.Release()
	return array.MakeFromData(changed)
}
