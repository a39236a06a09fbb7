// Package verify checks an optimization's output against its input before the catalog switch
// (docs/design.md#verify-before-commit): row counts, timestamp facts, an order-independent digest
// of every row's contents, and the schema with all its metadata.
package verify

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"
)

// Digest is an order-independent digest of a multiset of rows: the number of rows and the sum,
// modulo 2^64, of a 64-bit hash of each row's values (all columns: a row hashes to the mixed
// sum of its values' hashes, each value hashed with its column's position as salt; nulls and
// values of each type hashed distinctly). Two multisets that differ in any row give different
// digests with probability 1 - 2^-64. Digests of disjoint parts add up with Add.
type Digest struct {
	Rows int64  `json:"rows"`
	Sum  uint64 `json:"sum"`
}

// Add adds o's rows to d.
func (d *Digest) Add(o Digest) {
	d.Rows += o.Rows
	d.Sum += o.Sum
}

// String renders the digest as "rows/hex".
func (d Digest) String() string { return fmt.Sprintf("%d/%016x", d.Rows, d.Sum) }

// MarshalBinary encodes the digest in 16 bytes.
func (d Digest) MarshalBinary() []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(d.Rows))
	binary.BigEndian.PutUint64(b[8:], d.Sum)
	return b
}

// UnmarshalDigest decodes 16 bytes written by MarshalBinary.
func UnmarshalDigest(b []byte) (Digest, error) {
	if len(b) != 16 {
		return Digest{}, fmt.Errorf("digest has %d bytes, 16 expected", len(b))
	}
	return Digest{Rows: int64(binary.BigEndian.Uint64(b)), Sum: binary.BigEndian.Uint64(b[8:])}, nil
}

// Hasher computes digests of record batches, reusing its buffers. Not safe for concurrent use.
type Hasher struct {
	rows []uint64
	col  []uint64
}

// AddRows adds the rows [from, to) of rec to d.
func (h *Hasher) AddRows(d *Digest, rec arrow.RecordBatch, from, to int64) {
	n := int(to - from)
	if n <= 0 {
		return
	}
	h.StartRows(n)
	h.col = resize(h.col, n)
	// Each value's hash is already mixed with its column's salt: adding them up is enough to
	// combine a row's columns (one mix per value, and one per row below; it was two per value).
	for c, arr := range rec.Columns() {
		if addFixedWidth(h.rows, arr, int(from), uint64(c+1)) {
			continue
		}
		hashColumn(h.col, arr, int(from), uint64(c+1))
		for i, v := range h.col {
			h.rows[i] += v
		}
	}
	h.EndRows(d)
}

// StartRows starts the digest of n rows whose values are then added column by column, in any
// order, by readers that decode a chunk's pages without building Arrow arrays (Column, AddArray),
// and ends it with EndRows. The rows' digest is the one AddRows takes of the same values read as
// Arrow arrays of the types Column's methods name.
func (h *Hasher) StartRows(n int) {
	h.rows = resize(h.rows, n)
	for i := range h.rows {
		h.rows[i] = 0x9e3779b97f4a7c15
	}
}

// EndRows adds the rows started by StartRows to d.
func (h *Hasher) EndRows(d *Digest) {
	var sum uint64
	for _, r := range h.rows {
		sum += mix(r ^ 0xd6e8feb86659fd93)
	}
	d.Rows += int64(len(h.rows))
	d.Sum += sum
}

// AddArray adds arr, the values of column c (its index among the batch's columns) of rows
// at, at+1, … of those started, to their hashes.
func (h *Hasher) AddArray(c int, arr arrow.Array, at int) {
	rows := h.rows[at : at+arr.Len()]
	if addFixedWidth(rows, arr, 0, uint64(c+1)) {
		return
	}
	h.col = resize(h.col, len(rows))
	hashColumn(h.col, arr, 0, uint64(c+1))
	for i, v := range h.col {
		rows[i] += v
	}
}

// Column adds the values of column c (its index among the batch's columns) to the hashes of the
// rows started by StartRows, one value at a time: each method hashes its value as hashColumn
// hashes the value of an Arrow array of the type it names.
type Column struct {
	rows []uint64
	salt uint64
}

// Column returns column c's adder for the rows started.
func (h *Hasher) Column(c int) Column { return Column{rows: h.rows, salt: mix(uint64(c + 1))} }

// Bytes adds value v of a binary or string array at row i.
func (c Column) Bytes(i int, v []byte) { c.rows[i] += xxh3.HashSeed(v, c.salt) }

// Fixed adds value v of a fixed-width array at row i: its bytes, little-endian, as an integer
// (a float's bits; the width's bytes only).
func (c Column) Fixed(i int, v uint64) { c.rows[i] += mix(v ^ c.salt) }

// Bool adds value v of a boolean array at row i.
func (c Column) Bool(i int, v bool) { c.rows[i] += hashBool(c.salt, v) }

// Null adds a null at row i.
func (c Column) Null(i int) { c.rows[i] += mix(c.salt ^ nullHash) }

func hashBool(salt uint64, v bool) uint64 {
	if v {
		return mix(salt ^ 1)
	}
	return mix(salt ^ 2)
}

// Record returns the digest of all rows of rec.
func (h *Hasher) Record(rec arrow.RecordBatch) Digest {
	var d Digest
	h.AddRows(&d, rec, 0, rec.NumRows())
	return d
}

func resize(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

// mix is the splitmix64 finalizer: a bijection on uint64 with good avalanche.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

const nullHash = 0x6a09e667f3bcc909

// hashColumn writes into out[i] a hash of value from+i of arr, salted by the column number.
func hashColumn(out []uint64, arr arrow.Array, from int, salt uint64) {
	salt = mix(salt)
	switch a := arr.(type) {
	case *array.Binary:
		for i := range out {
			out[i] = xxh3.HashSeed(a.Value(from+i), salt)
		}
	case *array.String:
		for i := range out {
			out[i] = xxh3.HashStringSeed(a.Value(from+i), salt)
		}
	case *array.LargeBinary:
		for i := range out {
			out[i] = xxh3.HashSeed(a.Value(from+i), salt)
		}
	case *array.LargeString:
		for i := range out {
			out[i] = xxh3.HashStringSeed(a.Value(from+i), salt)
		}
	case *array.Dictionary:
		if hashDictionary(out, a, from, salt) {
			break
		}
		for i := range out {
			out[i] = xxh3.HashStringSeed(arr.ValueStr(from+i), salt)
		}
	case *array.Boolean:
		for i := range out {
			out[i] = hashBool(salt, a.Value(from+i))
		}
	default:
		// A dictionary type is "fixed width" (its indices) but must be hashed by value.
		if fw, ok := arr.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 &&
			arr.DataType().ID() != arrow.DICTIONARY &&
			len(arr.Data().Buffers()) >= 2 && arr.Data().Buffers()[1] != nil {
			hashFixedWidth(out, arr, from, fw.BitWidth()/8, salt)
		} else {
			// Nested, dictionary and other layouts: hash the value's canonical rendering.
			for i := range out {
				out[i] = xxh3.HashStringSeed(arr.ValueStr(from+i), salt)
			}
		}
	}
	if arr.NullN() > 0 {
		for i := range out {
			if arr.IsNull(from + i) {
				out[i] = mix(salt ^ nullHash)
			}
		}
	}
}

// hashDictionary hashes the rows of a dictionary column by value: each dictionary entry once,
// then every row by its index (a categorical column renders no string per row). It gives up
// (false) when the dictionary is much larger than the rows hashed or holds nulls (a null entry
// and a null index must hash alike).
func hashDictionary(out []uint64, a *array.Dictionary, from int, salt uint64) bool {
	dict := a.Dictionary()
	if dict.Len() > 4*len(out)+64 || dict.NullN() > 0 {
		return false
	}
	values := make([]uint64, dict.Len())
	hashColumn(values, dict, 0, salt)
	for i := range out {
		if a.IsValid(from + i) {
			out[i] = values[a.GetValueIndex(from+i)]
		}
	}
	return true
}

// littleEndian says the machine stores integers as Arrow buffers do, so that a buffer of 8-byte
// values can be read as []uint64.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// addFixedWidth adds to rows[i] the hash of value from+i of arr, as hashColumn hashes it, when arr
// is a column of 8-byte values without nulls (timestamps, float64 and int64 readings: most of a
// sensor topic's values), read straight from its buffer in one pass; otherwise it returns false
// and changes nothing.
func addFixedWidth(rows []uint64, arr arrow.Array, from int, salt uint64) bool {
	fw, ok := arr.DataType().(arrow.FixedWidthDataType)
	if !ok || !littleEndian || fw.BitWidth() != 64 || arr.NullN() > 0 || arr.DataType().ID() == arrow.DICTIONARY {
		return false
	}
	bufs := arr.Data().Buffers()
	if len(bufs) < 2 || bufs[1] == nil || len(rows) == 0 {
		return false
	}
	all := arrow.Uint64Traits.CastFromBytes(bufs[1].Bytes())
	start := arr.Data().Offset() + from
	values := all[start : start+len(rows)]
	salt = mix(salt)
	for i, v := range values {
		rows[i] += mix(v ^ salt)
	}
	return true
}

func hashFixedWidth(out []uint64, arr arrow.Array, from, width int, salt uint64) {
	buf := arr.Data().Buffers()[1].Bytes()
	base := (arr.Data().Offset() + from) * width
	switch width {
	case 8:
		for i := range out {
			out[i] = mix(binary.LittleEndian.Uint64(buf[base+i*8:]) ^ salt)
		}
	case 4:
		for i := range out {
			out[i] = mix(uint64(binary.LittleEndian.Uint32(buf[base+i*4:])) ^ salt)
		}
	case 2:
		for i := range out {
			out[i] = mix(uint64(binary.LittleEndian.Uint16(buf[base+i*2:])) ^ salt)
		}
	case 1:
		for i := range out {
			out[i] = mix(uint64(buf[base+i]) ^ salt)
		}
	default:
		for i := range out {
			out[i] = xxh3.HashSeed(buf[base+i*width:base+(i+1)*width], salt)
		}
	}
}
