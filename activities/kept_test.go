package activities

import (
	"strings"
	"testing"
)

// Per-file footer values are reported per key, in the order first met, with how many chunks
// differ from the first; never more than maxKeptKeys keys.
func TestKeptValuesReport(t *testing.T) {
	k := &keptValues{first: "tp_A/data/00000.parquet", chunks: 3}
	k.add([]string{"pandas", "ARROW:schema"}, "tp_A/data/00001.parquet")
	k.add([]string{"pandas"}, "tp_A/data/00002.parquet")
	got := strings.Join(k.report(), "\n")
	want := `footer value of "pandas" differs from chunk tp_A/data/00000.parquet's in 2 of 3 chunks (e.g. tp_A/data/00001.parquet); every output keeps chunk tp_A/data/00000.parquet's
footer value of "ARROW:schema" differs from chunk tp_A/data/00000.parquet's in 1 of 3 chunks (e.g. tp_A/data/00001.parquet); every output keeps chunk tp_A/data/00000.parquet's`
	if got != want {
		t.Fatalf("report:\n%s\nwant\n%s", got, want)
	}
	for i := range 2 * maxKeptKeys {
		k.add([]string{strings.Repeat("k", i+1)}, "c")
	}
	if n := len(k.report()); n != maxKeptKeys {
		t.Fatalf("%d keys reported, want at most %d", n, maxKeptKeys)
	}
	if (&keptValues{}).report() != nil {
		t.Fatal("nothing kept, something reported")
	}
}
