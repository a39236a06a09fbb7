package verify

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// Runs and single rows, in any order and any cut, add up to the same Positions; a row taken twice
// and another not at all, or a row of another chunk, change the sum.
func TestPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1000
	want := AllPositions(42, n)
	if want.Rows != n {
		t.Fatalf("AllPositions: %d rows", want.Rows)
	}
	perm := r.Perm(n)
	p := NewChunkPositions(42)
	for i := 0; i < n; {
		j := min(n, i+1+r.IntN(50))
		rows := make([]int64, 0, j-i)
		for _, v := range perm[i:j] {
			rows = append(rows, int64(v))
		}
		p.AddRows(rows)
		i = j
	}
	if p.Positions != want {
		t.Fatalf("rows in random order: %+v, want %+v", p.Positions, want)
	}
	q := NewChunkPositions(42)
	q.AddRange(500, 500)
	q.AddRange(0, 0)
	q.AddRange(0, 500)
	if q.Positions != want {
		t.Fatalf("two runs: %+v, want %+v", q.Positions, want)
	}
	changed := []struct {
		name string
		p    func() ChunkPositions
	}{
		{"row 499 twice, row 500 never", func() ChunkPositions {
			c := NewChunkPositions(42)
			c.AddRange(0, 500)
			c.AddRange(499, 1)
			c.AddRange(501, 499)
			return c
		}},
		{"rows of another chunk", func() ChunkPositions {
			c := NewChunkPositions(43)
			c.AddRange(0, n)
			return c
		}},
		{"rows 1..n instead of 0..n-1", func() ChunkPositions {
			c := NewChunkPositions(42)
			c.AddRange(1, n)
			return c
		}},
	}
	for _, tc := range changed {
		if got := tc.p(); got.Rows != n || got.Sum == want.Sum {
			t.Errorf("%s: %+v, want %d rows and a sum other than %x", tc.name, got.Positions, n, want.Sum)
		}
	}
}

func TestTakenEncoding(t *testing.T) {
	tk := Taken{}
	for id := int64(-2); id < 40; id += 3 {
		p := NewChunkPositions(id)
		p.AddRange(id+5, 7)
		tk.Add(p)
	}
	tk.Add(NewChunkPositions(1000)) // no rows: not recorded
	b := tk.MarshalBinary()
	if len(b) != 24*len(tk) || len(tk) != 14 {
		t.Fatalf("%d bytes for %d chunks", len(b), len(tk))
	}
	back, err := UnmarshalTaken(b)
	if err != nil || !maps.Equal(back, tk) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if empty, err := UnmarshalTaken(nil); err != nil || len(empty) != 0 {
		t.Fatalf("empty record: %v, %v", empty, err)
	}
	for _, bad := range [][]byte{b[:23], append(b[:24:24], b[:24]...)} {
		if _, err := UnmarshalTaken(bad); err == nil {
			t.Errorf("%d bytes accepted", len(bad))
		}
	}
}

// The positions check costs one hash per row where the merge emits it and one per input row at
// commit: BenchmarkAllPositions is the commit's cost per input row (ns/op / 1e6 rows).
func BenchmarkAllPositions(b *testing.B) {
	for b.Loop() {
		AllPositions(7, 1_000_000)
	}
}

// BenchmarkAddRows is the emit cost of a run of 1024 rows of a chunk sorted in memory (stored
// positions given one by one); AddRange, for chunks stored in key order, is AllPositions' loop.
func BenchmarkAddRows(b *testing.B) {
	rows := make([]int64, 1024)
	for i := range rows {
		rows[i] = int64(1023 - i)
	}
	p := NewChunkPositions(7)
	for b.Loop() {
		p.AddRows(rows)
	}
}
