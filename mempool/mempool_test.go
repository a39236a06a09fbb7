package mempool

import (
	"context"
	"testing"
	"time"
	"unsafe"
)

func TestReserveWaitsForRoom(t *testing.T) {
	p := New(100)
	a, err := p.Reserve(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Reservation)
	go func() {
		r, err := p.Reserve(context.Background(), 50)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	// The second reservation waits (it registered as a waiter: a positive signal, not a pause
	// that a goroutine not yet run would also pass) and was not granted.
	deadline := time.Now().Add(10 * time.Second)
	for !p.hasWaiter() {
		select {
		case <-got:
			t.Fatal("a reservation that does not fit was granted")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the reservation that does not fit never waited")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-got:
		t.Fatal("a reservation that does not fit was granted")
	default:
	}
	a.Release()
	a.Release() // a second release gives back nothing
	b := <-got
	if p.Reserved() != 50 {
		t.Fatalf("reserved %d, want 50", p.Reserved())
	}
	// Larger than the pool: reduced to the whole pool, granted once the pool is empty.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Reserve(ctx, 1000); err == nil {
		t.Fatal("an over-large reservation was granted while the pool was in use")
	}
	b.Release()
	c, err := p.Reserve(context.Background(), 1000)
	if err != nil || c.Bytes() != 100 {
		t.Fatalf("over-large reservation: %v, %d bytes", err, c.Bytes())
	}
	c.Release()
	if p.Reserved() != 0 {
		t.Fatalf("reserved %d after all releases", p.Reserved())
	}
	if r, err := New(0).Reserve(context.Background(), 1<<40); err != nil || r.Bytes() != 1<<40 {
		t.Fatalf("unlimited pool: %v", err)
	}
}

func TestAllocatorRecyclesZeroedAlignedBuffers(t *testing.T) {
	a := New(0).Allocator()
	b := a.Allocate(10_000)
	if len(b) != 10_000 || cap(b) != 10240 {
		t.Fatalf("len %d cap %d, want 10000 and class 10240", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	first := &b[0]
	a.Free(b)
	if a.InUse() != 0 || a.HighWater() != 10_000 {
		t.Fatalf("in use %d, high-water %d", a.InUse(), a.HighWater())
	}
	c := a.Allocate(9_000) // same class: the freed buffer comes back
	if &c[0] != first {
		t.Fatalf("a freed buffer of the same class was not reused")
	}
	c = a.Reallocate(10_200, c)
	for i, v := range c {
		if v != 0 {
			t.Fatalf("byte %d of a recycled buffer is %#x, want 0", i, v)
		}
	}
	if cap(c) != 10240 || uintptr(unsafe.Pointer(&c[0]))%64 != 0 {
		t.Fatalf("cap %d, address %p: want class 10240, 64-byte aligned", cap(c), &c[0])
	}
	d := a.Reallocate(40_000, c) // grows into a new class, frees the old buffer
	if len(d) != 40_000 || cap(d) != 40960 || a.InUse() != 40_000 {
		t.Fatalf("len %d, cap %d, in use %d", len(d), cap(d), a.InUse())
	}
	for i, v := range d[10_200:] {
		if v != 0 {
			t.Fatalf("byte %d beyond the copied part is %#x", 10_200+i, v)
		}
	}
	small := a.Allocate(100)
	a.Free(small)
	a.Free(d)
	if a.InUse() != 0 {
		t.Fatalf("in use %d after freeing everything", a.InUse())
	}
}

func TestSizeClassesWasteAtMostAQuarter(t *testing.T) {
	for size := minRecycled + 1; size < 1<<24; size += 997 {
		c, ok := classOf(size)
		if !ok {
			t.Fatalf("size %d has no class", size)
		}
		cs := classSize(c)
		if cs < size || float64(cs) > 1.25*float64(size) {
			t.Fatalf("size %d: class %d of %d bytes", size, c, cs)
		}
		if back, _ := classOf(cs); back != c {
			t.Fatalf("class size %d maps to class %d, not %d", cs, back, c)
		}
	}
	if _, ok := classOf(1<<maxExp + 1); ok {
		t.Fatalf("a size beyond the largest class got a class")
	}
}

func TestFreeListsAreBounded(t *testing.T) {
	p := New(16 * 20480) // the allocator caches a sixteenth: one buffer of 20480 bytes
	a := p.Allocator()
	x, y := a.Allocate(20_000), a.Allocate(20_000)
	a.Free(x)
	a.Free(y)
	if got := a.mem.(*recycler).Cached(); got != 20480 {
		t.Fatalf("free lists hold %d bytes, want 20480 (the bound)", got)
	}
	z := a.Allocate(20_000)
	if got := a.mem.(*recycler).Cached(); got != 0 {
		t.Fatalf("free lists hold %d bytes after reuse, want 0", got)
	}
	a.Free(z)
}

// hasWaiter reports whether a reservation waits for room.
func (p *Pool) hasWaiter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters) > 0
}

// A buffer grown into a recycled one of a larger class holds the old bytes, then zeros: only the
// part beyond the copy is cleared.
func TestReallocateIntoRecycledBufferCopiesThenZeroes(t *testing.T) {
	a := New(0).Allocator()
	dirty := a.Allocate(40_000)
	for i := range dirty {
		dirty[i] = 0xff
	}
	reused := &dirty[0]
	a.Free(dirty)
	c := a.Allocate(10_000)
	for i := range c {
		c[i] = byte(i%251) + 1
	}
	d := a.Reallocate(40_000, c)
	if &d[0] != reused {
		t.Fatalf("the freed buffer of the larger class was not reused")
	}
	for i, v := range d {
		want := byte(0)
		if i < 10_000 {
			want = byte(i%251) + 1
		}
		if v != want {
			t.Fatalf("byte %d is %#x, want %#x", i, v, want)
		}
	}
	a.Free(d)
}
