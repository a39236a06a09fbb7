package plan

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refCompare is the order of docs/design.md#deterministic-output written as a tuple comparison.
func refCompare(a, b Key) int {
	tuple := func(k Key) [4]int64 {
		if k.Null {
			return [4]int64{1, 0, int64(k.Input), k.Row}
		}
		return [4]int64{0, k.Ts, int64(k.Input), k.Row}
	}
	ta, tb := tuple(a), tuple(b)
	for i := range ta {
		if c := cmp.Compare(ta[i], tb[i]); c != 0 {
			return c
		}
	}
	return 0
}

func TestKeyCompareCases(t *testing.T) {
	tests := []struct {
		a, b Key
		want int
	}{
		{Key{Ts: 1}, Key{Ts: 2}, -1},
		{Key{Ts: math.MaxInt64, Input: 9, Row: 9}, Key{Null: true}, -1},
		{Key{Null: true}, Key{Ts: math.MinInt64}, 1},
		{Key{Ts: math.MinInt64, Input: 5}, Key{Ts: -1}, -1},
		{Key{Ts: 5, Input: 1, Row: 0}, Key{Ts: 5, Input: 0, Row: 99}, 1},
		{Key{Ts: 5, Input: 1, Row: 3}, Key{Ts: 5, Input: 1, Row: 4}, -1},
		{Key{Null: true, Input: 0, Row: 7}, Key{Null: true, Input: 1, Row: 0}, -1},
		{Key{Null: true, Ts: 99, Input: 2, Row: 1}, Key{Null: true, Ts: 0, Input: 2, Row: 1}, 0}, // Ts ignored when null
		{Key{Ts: 3, Input: 2, Row: 1}, Key{Ts: 3, Input: 2, Row: 1}, 0},
	}
	for _, tc := range tests {
		if got := tc.a.Compare(tc.b); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := tc.b.Compare(tc.a); got != -tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

// Compare is a total order equal to the reference tuple order on random keys with many ties.
func TestKeyCompareTotalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	keys := make([]Key, 300)
	for i := range keys {
		keys[i] = Key{Null: r.IntN(5) == 0, Ts: r.Int64N(4) - 2, Input: r.IntN(3), Row: r.Int64N(3)}
		if keys[i].Null {
			keys[i].Ts = 0
		}
	}
	keys = append(keys, Key{Ts: math.MinInt64}, Key{Ts: math.MaxInt64})
	for _, a := range keys {
		for _, b := range keys {
			if got, want := a.Compare(b), refCompare(a, b); got != want {
				t.Fatalf("%s.Compare(%s) = %d, want %d", a, b, got, want)
			}
		}
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, Key.Compare)
	for i := 1; i < len(sorted); i++ {
		if refCompare(sorted[i-1], sorted[i]) > 0 {
			t.Fatalf("sorted order broken at %d: %s before %s", i, sorted[i-1], sorted[i])
		}
	}
}

func TestInRange(t *testing.T) {
	lo, hi := &Key{Ts: 10, Input: 1, Row: 2}, &Key{Null: true, Input: 0, Row: 0}
	tests := []struct {
		k    Key
		want bool
	}{
		{Key{Ts: 10, Input: 1, Row: 1}, false},
		{Key{Ts: 10, Input: 1, Row: 2}, true}, // Lo is inclusive
		{Key{Ts: math.MaxInt64}, true},
		{Key{Null: true, Input: 0, Row: 0}, false}, // Hi is exclusive
		{Key{Null: true, Input: 3}, false},
	}
	for _, tc := range tests {
		if got := InRange(tc.k, lo, hi); got != tc.want {
			t.Errorf("InRange(%s, %s, %s) = %t", tc.k, lo, hi, got)
		}
	}
	if !InRange(Key{Null: true, Input: 9, Row: 9}, nil, nil) || !InRange(Key{Ts: math.MinInt64}, nil, hi) {
		t.Errorf("nil bounds must be unbounded")
	}
	if s := (Key{Null: true, Input: 2, Row: 5}).String(); s != "null@2:5" {
		t.Errorf("String = %q", s)
	}
}
