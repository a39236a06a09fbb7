package mempool

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler is an Arrow allocator that reuses freed buffers instead of leaving them to the garbage
// collector. A merge decodes, slices, encodes and frees buffers of the same few sizes all the
// time; with plain Go allocation every batch costs fresh pages (faults, zeroing, madvise) and
// collection work. Buffers of at least minRecycled bytes come from power-of-two size classes,
// 64-byte aligned, and go back to their class when Arrow frees them; smaller ones are left to the
// Go allocator. Handed-out memory is zeroed, as Arrow expects, including the part a Reallocate
// exposes.
type recycler struct {
	small   memory.GoAllocator
	classes [maxClass + 1]sync.Pool
}

const (
	minClass    = 12 // 4 KiB
	maxClass    = 31 // 2 GiB
	minRecycled = 1 << minClass
)

func newRecycler() *recycler { return &recycler{} }

func classOf(size int) int { return bits.Len(uint(size - 1)) }

func (r *recycler) Allocate(size int) []byte {
	if size < minRecycled {
		return r.small.Allocate(size)
	}
	c := classOf(size)
	if c > maxClass {
		return r.small.Allocate(size)
	}
	if p, _ := r.classes[c].Get().(*[]byte); p != nil {
		b := (*p)[:size]
		clear(b)
		return b
	}
	buf := make([]byte, 1<<c+64)
	shift := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
	return buf[shift : shift+size : shift+1<<c]
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	c := cap(b)
	if c < minRecycled || c&(c-1) != 0 || bits.Len(uint(c))-1 > maxClass {
		return // not one of ours: the collector takes it
	}
	full := b[:c]
	r.classes[bits.Len(uint(c))-1].Put(&full)
}
