package verify

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zeebo/xxh3"
)

// The digest of a chunk assembled by the copy path (docs/design.md#the-copy-path) adds, for each
// column whose pages were copied as stored, a hash of each page (its bytes, its number of
// values, its header's fields that say how its bytes are read, its column and its ordinal among
// the column's pages in the chunk) and, for each column re-encoded, a hash of each value with its
// column and its row's index in the chunk.
// Taken once from the inputs' pages and values and once from the stored chunk, equal digests
// say that the chunk holds the inputs' bytes in the same order and the re-encoded values at
// the same rows. Its Rows are counted by the caller.

// AddPage adds page number ordinal of leaf column leaf, numValues values stored in data, to d;
// header says how data is read (its page header's kind, encodings and uncompressed size, and a V2
// page's rows, nulls, levels' lengths and compression, packed into words by the caller), so that
// a header changed in the store changes the digest as changed bytes do.
func AddPage(d *Digest, leaf int, ordinal int64, numValues int32, header []uint64, data []byte) {
	salt := mix(uint64(leaf+1)<<40 ^ uint64(ordinal) ^ 0x243f6a8885a308d3)
	h := uint64(0xa4093822299f31d0)
	for _, w := range header {
		h = mix(h ^ w)
	}
	d.Sum += mix(xxh3.Hash(data) ^ salt ^ uint64(uint32(numValues))<<1 ^ h)
}

// AddColumnAt adds the values of arr, the rows firstRow, firstRow+1, … of a chunk's leaf column
// leaf, to d.
func (h *Hasher) AddColumnAt(d *Digest, arr arrow.Array, leaf int, firstRow int64) {
	n := arr.Len()
	if n == 0 {
		return
	}
	h.col = resize(h.col, n)
	hashColumn(h.col, arr, 0, uint64(leaf+1))
	var sum uint64
	for i, v := range h.col {
		sum += mix(v ^ mix(uint64(firstRow+int64(i))^0x13198a2e03707344))
	}
	d.Sum += sum
}
