package parquetio

import (
	"slices"
	"testing"
)

// A storage is written with runs of equal leaves once and read back to the same leaves; a string
// that does not describe exactly the layout's leaves is refused (the output is then rewritten).
func TestStorageRuns(t *testing.T) {
	for _, parts := range [][]string{
		{"6/0"},
		{"6/0", "6/0", "-", "6/0", "6/0", "6/0", "0/2", "0/2"},
		{"-", "-", "-"},
		{"6/0", "-", "6/0", "-"},
	} {
		st := joinRuns(parts)
		got, ok := splitRuns(st, len(parts))
		if !ok || !slices.Equal(got, parts) {
			t.Errorf("%q: read back as %q (%v), want %q", st, got, ok, parts)
		}
	}
	if st := joinRuns(slices.Repeat([]string{"6/0"}, 500)); st != "6/0*500" {
		t.Errorf("500 equal leaves stored as %q", st)
	}
	for _, bad := range []string{"", "6/0*3", "6/0*5", "6/0*1 6/0*3", "6/0*x", "6/0*-2 6/0*6", "6/0 - 6/0 - 6/0"} {
		if parts, ok := splitRuns(bad, 4); ok {
			t.Errorf("%q read as the storage of 4 leaves: %q", bad, parts)
		}
	}
}
