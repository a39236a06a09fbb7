// Package mempool is the memory pool that all activities of one worker share
// (STOREOPT_MEMORY_POOL_SIZE, docs/design.md#bounded-memory). Work reserves room before it
// allocates: Reserve blocks until enough of the pool is free, so concurrent activities wait for
// each other instead of running the worker out of memory. Every Arrow buffer (record batches,
// Parquet read and write buffers) is allocated through the pool's Allocator, which counts the bytes
// in use and their high-water mark, so tests can check that reservations cover what is really
// allocated.
package mempool

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Pool is a memory pool of a fixed size in bytes (0 = unlimited). Safe for concurrent use.
type Pool struct {
	limit    int64
	mu       sync.Mutex
	reserved int64
	waiters  []chan struct{}
	alloc    *Allocator
}

// maxCachedFor returns how many freed bytes the allocator of a pool of limit bytes keeps for
// reuse: a sixteenth of the pool (16 MiB of a 256 MiB pool), or defaultMaxCached when unlimited.
// The cache is outside the reservations, so it is kept small against the pool.
func maxCachedFor(limit int64) int64 {
	if limit <= 0 {
		return defaultMaxCached
	}
	return limit / 16
}

// New returns a pool of limit bytes; limit <= 0 means unlimited (reservations never wait).
func New(limit int64) *Pool {
	return &Pool{limit: max(limit, 0), alloc: &Allocator{mem: newRecycler(maxCachedFor(limit))}}
}

// Limit returns the pool size in bytes (0 = unlimited).
func (p *Pool) Limit() int64 { return p.limit }

// Allocator returns the pool's accounting Arrow allocator.
func (p *Pool) Allocator() *Allocator { return p.alloc }

// Reservation is room reserved in a pool; Release gives it back (once; later calls do nothing).
type Reservation struct {
	p    *Pool
	n    int64
	once sync.Once
}

// Bytes returns the reserved bytes.
func (r *Reservation) Bytes() int64 { return r.n }

// Release returns the reserved room to the pool.
func (r *Reservation) Release() {
	r.once.Do(func() {
		if r.p.limit == 0 {
			return
		}
		r.p.mu.Lock()
		r.p.reserved -= r.n
		w := r.p.waiters
		r.p.waiters = nil
		r.p.mu.Unlock()
		for _, c := range w {
			close(c)
		}
	})
}

// Reserve blocks until n bytes are free and reserves them. A request larger than the pool is
// reduced to the whole pool (it waits until nothing else is reserved): work must be sized so that
// it fits, and a single over-large step then runs alone rather than never. Returns ctx's error
// if ctx ends first.
func (p *Pool) Reserve(ctx context.Context, n int64) (*Reservation, error) {
	n = max(n, 0)
	if p.limit == 0 {
		return &Reservation{p: p, n: n}, nil
	}
	n = min(n, p.limit)
	for {
		p.mu.Lock()
		if p.reserved+n <= p.limit {
			p.reserved += n
			p.mu.Unlock()
			return &Reservation{p: p, n: n}, nil
		}
		wake := make(chan struct{})
		p.waiters = append(p.waiters, wake)
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Reserved returns the bytes reserved now.
func (p *Pool) Reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserved
}

// Allocator is an Arrow memory.Allocator that counts the bytes it has handed out and not yet
// freed, and their high-water mark. Buffers of 4 KiB and more are recycled (see recycler).
type Allocator struct {
	mem       memory.Allocator
	inUse     atomic.Int64
	highWater atomic.Int64
}

func (a *Allocator) grow(n int64) {
	v := a.inUse.Add(n)
	for {
		hw := a.highWater.Load()
		if v <= hw || a.highWater.CompareAndSwap(hw, v) {
			return
		}
	}
}

// Allocate implements memory.Allocator.
func (a *Allocator) Allocate(size int) []byte {
	b := a.mem.Allocate(size)
	a.grow(int64(len(b)))
	return b
}

// Reallocate implements memory.Allocator.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	old := len(b)
	nb := a.mem.Reallocate(size, b)
	a.grow(int64(len(nb) - old))
	return nb
}

// Free implements memory.Allocator.
func (a *Allocator) Free(b []byte) {
	a.inUse.Add(-int64(len(b)))
	a.mem.Free(b)
}

// InUse returns the bytes allocated and not freed.
func (a *Allocator) InUse() int64 { return a.inUse.Load() }

// HighWater returns the largest InUse seen since the last ResetHighWater.
func (a *Allocator) HighWater() int64 { return a.highWater.Load() }

// ResetHighWater sets the high-water mark to the current use.
func (a *Allocator) ResetHighWater() { a.highWater.Store(a.inUse.Load()) }
