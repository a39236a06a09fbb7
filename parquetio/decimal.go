package parquetio

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// decimalAsFixed returns decimal values for a FIXED_LEN_BYTE_ARRAY column whose length is not
// the minimal one for the decimal's precision (DuckDB stores DECIMAL(22, 2) in 16 bytes, the
// minimum being 10) as fixed-size binary values of the column's length, big-endian two's
// complement: arrow-go v18.8.0 takes the bytes of such values from the wrong offset (its writer
// assumes the minimal length) and shifts every value. Other arrays are returned as they are
// (ok false).
func decimalAsFixed(values arrow.Array, descr *schema.Column, mem memory.Allocator) (fixed arrow.Array, ok bool) {
	if descr.PhysicalType() != parquet.Types.FixedLenByteArray {
		return nil, false
	}
	width := descr.TypeLength()
	var precision int32
	var value func(i int) []byte
	var be [32]byte
	switch a := values.(type) {
	case *array.Decimal128:
		precision = a.DataType().(*arrow.Decimal128Type).Precision
		value = func(i int) []byte {
			v := a.Value(i)
			binary.BigEndian.PutUint64(be[:8], uint64(v.HighBits()))
			binary.BigEndian.PutUint64(be[8:16], v.LowBits())
			return be[:16]
		}
	case *array.Decimal256:
		precision = a.DataType().(*arrow.Decimal256Type).Precision
		value = func(i int) []byte {
			v := a.Value(i).Array()
			for k := range 4 {
				binary.BigEndian.PutUint64(be[8*k:], v[3-k])
			}
			return be[:32]
		}
	default:
		return nil, false
	}
	if int(pqarrow.DecimalSize(precision)) == width {
		return nil, false
	}
	b := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: width})
	defer b.Release()
	b.Reserve(values.Len())
	out := make([]byte, width)
	for i := range values.Len() {
		if values.IsNull(i) {
			b.AppendNull()
			continue
		}
		full := value(i)
		sign := byte(0)
		if full[0]&0x80 != 0 {
			sign = 0xff
		}
		// Sign-extend or cut to the column's width: the value fits its precision, so the cut
		// bytes are sign bytes.
		for k := range out {
			src := len(full) - width + k
			if src < 0 {
				out[k] = sign
			} else {
				out[k] = full[src]
			}
		}
		b.Append(out)
	}
	return b.NewArray(), true
}
