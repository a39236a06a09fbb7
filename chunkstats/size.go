package chunkstats

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ArrowSizeBits returns the logical Arrow size of the values of arr in bits, counting only the
// rows arr covers (a slice of a larger array counts its own share, not the shared buffers), so
// that the same rows give the same size however they are sliced into batches. Accumulator sums
// it over all columns and batches and rounds up to whole bytes once (Stats.ArrowSizeBytes).
//
// util.TotalRecordSize is not used: it counts whole shared buffers for slices and includes
// builder padding, so its result depends on how rows are batched.
//
// The layout counted, per value at each nesting level:
//   - 1 validity bit, whether or not the batch allocated a bitmap (0 for the null type);
//   - fixed-width types (integers, floats, bool, decimals, temporal, fixed-size binary): the
//     type's bit width;
//   - binary and string: one offset (32 bits, 64 for the large variants) plus the value bytes;
//   - list, large list and map: one offset plus the size of the child values referenced;
//   - fixed-size list: the size of its child values; struct: the sum of its children;
//   - extension types: their storage type.
//
// Estimates (documented, not slice-exact): a dictionary column counts its indices plus, once per
// batch, the dictionary entries its rows reference (a slice of a batch whose dictionary holds one
// 4 MB value counts it only when one of its rows is that value); views, unions, run-end encoded and any other layout count the
// share of all their buffers proportional to the rows covered.
func ArrowSizeBits(arr arrow.Array) int64 {
	if arr == nil {
		return 0
	}
	d := arr.Data()
	return dataBits(d, d.DataType(), 0, d.Len())
}

// RowsBytes returns the logical Arrow size of rows [from, to) of rec in bytes, rounded up (the
// sum of ArrowSizeBits of each column's rows, without slicing): what a batch of those rows
// holds. Cheap: it reads offsets, never values.
func RowsBytes(rec arrow.RecordBatch, from, to int64) int64 {
	var bits int64
	for _, col := range rec.Columns() {
		d := col.Data()
		bits += dataBits(d, d.DataType(), int(from), int(to-from))
	}
	return (bits + 7) / 8
}

// dataBits returns the size in bits of the n values of d starting at logical index start
// (relative to d's own offset); t is d's layout type.
func dataBits(d arrow.ArrayData, t arrow.DataType, start, n int) int64 {
	if n <= 0 {
		return 0
	}
	phys := d.Offset() + start
	validity := int64(n)
	switch t.ID() {
	case arrow.NULL:
		return 0
	case arrow.EXTENSION:
		if ext, ok := t.(arrow.ExtensionType); ok {
			return dataBits(d, ext.StorageType(), start, n)
		}
	case arrow.STRING, arrow.BINARY:
		if lo, hi, ok := offsetRange[int32](d, phys, n); ok {
			return validity + int64(n)*32 + 8*(hi-lo)
		}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		if lo, hi, ok := offsetRange[int64](d, phys, n); ok {
			return validity + int64(n)*64 + 8*(hi-lo)
		}
	case arrow.LIST, arrow.MAP:
		if lo, hi, ok := offsetRange[int32](d, phys, n); ok && len(d.Children()) == 1 {
			child := d.Children()[0]
			return validity + int64(n)*32 + dataBits(child, child.DataType(), int(lo), int(hi-lo))
		}
	case arrow.LARGE_LIST:
		if lo, hi, ok := offsetRange[int64](d, phys, n); ok && len(d.Children()) == 1 {
			child := d.Children()[0]
			return validity + int64(n)*64 + dataBits(child, child.DataType(), int(lo), int(hi-lo))
		}
	case arrow.FIXED_SIZE_LIST:
		if fsl, ok := t.(*arrow.FixedSizeListType); ok && len(d.Children()) == 1 {
			size := int(fsl.Len())
			child := d.Children()[0]
			return validity + dataBits(child, child.DataType(), phys*size, n*size)
		}
	case arrow.STRUCT:
		bits := validity
		for _, child := range d.Children() {
			bits += dataBits(child, child.DataType(), phys, n)
		}
		return bits
	case arrow.DICTIONARY:
		dict, ok := t.(*arrow.DictionaryType)
		if !ok {
			break
		}
		if index, ok := dict.IndexType.(arrow.FixedWidthDataType); ok {
			bits := validity + int64(n)*int64(index.BitWidth())
			if values := dictionaryOf(d); values != nil {
				bits += referencedBits(d, values, start, n)
			}
			return bits
		}
	case arrow.STRING_VIEW, arrow.BINARY_VIEW, arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW,
		arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.RUN_END_ENCODED:
		// estimated below
	default:
		if fw, ok := t.(arrow.FixedWidthDataType); ok {
			return validity + int64(n)*int64(fw.BitWidth())
		}
	}
	return proportionalBits(d, n)
}

// offsetRange returns the first and last offset of the n values at physical index phys of d's
// offsets buffer (buffer 1); ok is false if the buffer is missing or too short.
func offsetRange[T int32 | int64](d arrow.ArrayData, phys, n int) (lo, hi int64, ok bool) {
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return 0, 0, false
	}
	var offs []T
	switch p := any(&offs).(type) {
	case *[]int32:
		*p = arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	case *[]int64:
		*p = arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
	}
	if phys < 0 || phys+n >= len(offs) {
		return 0, 0, false
	}
	lo, hi = int64(offs[phys]), int64(offs[phys+n])
	return lo, hi, hi >= lo
}

// proportionalBits estimates the size of n of d's values as their share of all of d's buffers
// (children and dictionary included).
func proportionalBits(d arrow.ArrayData, n int) int64 {
	if d.Len() == 0 {
		return 0
	}
	return 8 * bufferBytes(d) * int64(n) / int64(d.Len())
}

// bufferBytes is the total length of d's buffers, its children's and its dictionary's.
func bufferBytes(d arrow.ArrayData) int64 {
	var sum int64
	for _, b := range d.Buffers() {
		if b != nil {
			sum += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		sum += bufferBytes(c)
	}
	if dict := dictionaryOf(d); dict != nil {
		sum += bufferBytes(dict)
	}
	return sum
}

// dictionaryOf returns d's dictionary, or nil (also when it is a typed nil).
func dictionaryOf(d arrow.ArrayData) arrow.ArrayData {
	dict := d.Dictionary()
	if v, ok := dict.(*array.Data); dict == nil || (ok && v == nil) {
		return nil
	}
	return dict
}

// referencedBits returns the size in bits of the entries of dictionary values that the n rows of
// the dictionary array d from logical index start reference, each entry counted once.
func referencedBits(d, values arrow.ArrayData, start, n int) int64 {
	arr, ok := array.MakeFromData(d).(*array.Dictionary)
	if !ok {
		return 8 * bufferBytes(values)
	}
	defer arr.Release()
	entries := values.Len()
	var bits int64
	count := func(idx int) {
		if idx >= 0 && idx < entries {
			bits += dataBits(values, values.DataType(), idx, 1)
		}
	}
	if n < entries/64 {
		seen := make(map[int]struct{}, n)
		for i := start; i < start+n; i++ {
			if arr.IsValid(i) {
				idx := arr.GetValueIndex(i)
				if _, dup := seen[idx]; !dup {
					seen[idx] = struct{}{}
					count(idx)
				}
			}
		}
		return bits
	}
	seen := make([]bool, entries)
	for i := start; i < start+n; i++ {
		if arr.IsValid(i) {
			if idx := arr.GetValueIndex(i); idx >= 0 && idx < entries && !seen[idx] {
				seen[idx] = true
				count(idx)
			}
		}
	}
	return bits
}

// MaxValueBits returns the size in bits, as ArrowSizeBits counts one row, of the largest value
// of arr: the same rows give the same size however they are sliced into batches (dictionaries
// aside: a dictionary column's value is bounded by its index and its dictionary's largest entry).
// Cheap for the common layouts: a constant for fixed-width types and fixed-size lists or structs
// of them, one pass over the offsets for binary and string columns (values never read); other
// layouts are sized row by row.
func MaxValueBits(arr arrow.Array) int64 {
	if arr == nil || arr.Len() == 0 {
		return 0
	}
	d := arr.Data()
	return maxValueBits(d, d.DataType(), 0, d.Len())
}

// maxValueBits returns the size of the largest of the n values of d from logical index start (see
// MaxValueBits).
func maxValueBits(d arrow.ArrayData, t arrow.DataType, start, n int) int64 {
	if n <= 0 {
		return 0
	}
	if bits, ok := constantBits(t); ok {
		return bits
	}
	phys := d.Offset() + start
	switch t.ID() {
	case arrow.EXTENSION:
		if ext, ok := t.(arrow.ExtensionType); ok {
			return maxValueBits(d, ext.StorageType(), start, n)
		}
	case arrow.STRING, arrow.BINARY:
		if longest, ok := longestValue[int32](d, phys, n); ok {
			return 1 + 32 + 8*longest
		}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		if longest, ok := longestValue[int64](d, phys, n); ok {
			return 1 + 64 + 8*longest
		}
	case arrow.DICTIONARY:
		dict, _ := t.(*arrow.DictionaryType)
		index, ok := dict.IndexType.(arrow.FixedWidthDataType)
		if values := dictionaryOf(d); ok && values != nil {
			return 1 + int64(index.BitWidth()) + maxValueBits(values, values.DataType(), 0, values.Len())
		}
	}
	var largest int64
	for i := start; i < start+n; i++ {
		largest = max(largest, dataBits(d, t, i, 1))
	}
	return largest
}

// constantBits returns the size of every value of type t when it is the same for all values
// (fixed-width types, and fixed-size lists and structs of them), as dataBits counts one row.
func constantBits(t arrow.DataType) (int64, bool) {
	switch t.ID() {
	case arrow.NULL:
		return 0, true
	case arrow.DICTIONARY:
		return 0, false
	case arrow.EXTENSION:
		if ext, ok := t.(arrow.ExtensionType); ok {
			return constantBits(ext.StorageType())
		}
		return 0, false
	case arrow.FIXED_SIZE_LIST:
		fsl, _ := t.(*arrow.FixedSizeListType)
		child, ok := constantBits(fsl.Elem())
		return 1 + int64(fsl.Len())*child, ok
	case arrow.STRUCT:
		bits := int64(1)
		for _, f := range t.(*arrow.StructType).Fields() {
			child, ok := constantBits(f.Type)
			if !ok {
				return 0, false
			}
			bits += child
		}
		return bits, true
	}
	if fw, ok := t.(arrow.FixedWidthDataType); ok {
		return 1 + int64(fw.BitWidth()), true
	}
	return 0, false
}

// longestValue returns the largest difference of consecutive offsets among the n values at
// physical index phys of d's offsets buffer (buffer 1): the longest value, in bytes; ok is false
// if the buffer is missing or too short.
func longestValue[T int32 | int64](d arrow.ArrayData, phys, n int) (int64, bool) {
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return 0, false
	}
	var offs []T
	switch p := any(&offs).(type) {
	case *[]int32:
		*p = arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	case *[]int64:
		*p = arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
	}
	if phys < 0 || phys+n >= len(offs) {
		return 0, false
	}
	var longest T
	for i := phys; i < phys+n; i++ {
		longest = max(longest, offs[i+1]-offs[i])
	}
	return int64(longest), true
}
