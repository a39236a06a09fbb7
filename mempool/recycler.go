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
// collection work. Buffers of more than minRecycled bytes come from size classes four per
// power of two (2^e, 1.25·2^e, 1.5·2^e, 1.75·2^e: at most 25 % of a buffer is unused),
// 64-byte aligned, and go back to a free list of their class when Arrow frees them; smaller ones
// are left to the Go allocator. The free lists together hold at most maxCached bytes; a buffer
// freed beyond that is left to the collector, so the cache never grows with the work. Handed-out
// memory is zeroed, as Arrow expects, including the part a Reallocate exposes (a buffer a
// Reallocate copies into is cleared beyond the copy only).
type recycler struct {
	small     memory.GoAllocator
	maxCached int64

	mu     sync.Mutex
	cached int64 // bytes in free
	free   [numClasses][][]byte
}

const (
	minExp      = 12 // classes start above 4 KiB
	maxExp      = 31 // and end at 2 GiB
	minRecycled = 1 << minExp
	stepsPerExp = 4
	numClasses  = (maxExp-minExp)*stepsPerExp + 1
)

// defaultMaxCached is the free-list bound when the pool is unlimited.
const defaultMaxCached = 64 << 20

// newRecycler returns a recycler whose free lists hold at most maxCached bytes.
func newRecycler(maxCached int64) *recycler { return &recycler{maxCached: maxCached} }

// classOf returns the class of the smallest class size >= size (size > minRecycled), and false
// when size is beyond the largest class.
func classOf(size int) (int, bool) {
	e := bits.Len(uint(size-1)) - 1 // 2^e < size <= 2^(e+1)
	step := 1 << (e - 2)
	s := (size - 1<<e + step - 1) / step // 1..4
	c := (e-minExp)*stepsPerExp + s
	return c, c < numClasses
}

// classSize returns the size of buffers of class c.
func classSize(c int) int {
	e, s := minExp+c/stepsPerExp, c%stepsPerExp
	return 1<<e + s<<(e-2)
}

func (r *recycler) Allocate(size int) []byte { return r.allocate(size, 0) }

// allocate returns a buffer of size bytes of which [zeroFrom:] is zeroed (a recycled buffer's
// first zeroFrom bytes keep what they held: Reallocate copies over them).
func (r *recycler) allocate(size, zeroFrom int) []byte {
	if size <= minRecycled {
		return r.small.Allocate(size)
	}
	c, ok := classOf(size)
	if !ok {
		return r.small.Allocate(size)
	}
	r.mu.Lock()
	if n := len(r.free[c]); n > 0 {
		b := r.free[c][n-1]
		r.free[c][n-1] = nil
		r.free[c] = r.free[c][:n-1]
		r.cached -= int64(cap(b))
		r.mu.Unlock()
		b = b[:size]
		clear(b[min(zeroFrom, size):])
		return b
	}
	r.mu.Unlock()
	cs := classSize(c)
	buf := make([]byte, cs+64)
	shift := int(-uintptr(unsafe.Pointer(&buf[0])) & 63)
	return buf[shift : shift+size : shift+cs]
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
	nb := r.allocate(size, len(b))
	copy(nb, b)
	r.Free(b)
	return nb
}

func (r *recycler) Free(b []byte) {
	n := cap(b)
	if n <= minRecycled {
		return // not one of ours: the collector takes it
	}
	c, ok := classOf(n)
	if !ok || classSize(c) != n {
		return
	}
	r.mu.Lock()
	if r.cached+int64(n) <= r.maxCached {
		r.free[c] = append(r.free[c], b[:n])
		r.cached += int64(n)
	}
	r.mu.Unlock()
}

// Cached returns the bytes held in the free lists.
func (r *recycler) Cached() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cached
}
