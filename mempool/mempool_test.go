package mempool

import (
	"context"
	"testing"
	"time"
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
	select {
	case <-got:
		t.Fatal("a reservation that does not fit was granted")
	case <-time.After(50 * time.Millisecond):
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
	if len(b) != 10_000 || cap(b) != 16384 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	if a.InUse() != 0 || a.HighWater() != 10_000 {
		t.Fatalf("in use %d, high-water %d", a.InUse(), a.HighWater())
	}
	c := a.Allocate(12_000)
	c = a.Reallocate(16_000, c)
	for i, v := range c {
		if v != 0 {
			t.Fatalf("byte %d of a recycled buffer is %#x, want 0", i, v)
		}
	}
	if uintptr(len(c)) == 0 || (uintptr(cap(c)) != 16384) {
		t.Fatalf("cap %d", cap(c))
	}
	d := a.Reallocate(40_000, c) // grows into a new class, frees the old buffer
	if len(d) != 40_000 || a.InUse() != 40_000 {
		t.Fatalf("len %d, in use %d", len(d), a.InUse())
	}
	for i, v := range d[16_000:] {
		if v != 0 {
			t.Fatalf("byte %d beyond the copied part is %#x", 16_000+i, v)
		}
	}
	small := a.Allocate(100)
	a.Free(small)
	a.Free(d)
	if a.InUse() != 0 {
		t.Fatalf("in use %d after freeing everything", a.InUse())
	}
}
