package main

import (
	"testing"
	"time"

	"github.com/storeopt/storeopt/workflows"
)

func TestETALeftCountsFromWhenTheProgressWasComputed(t *testing.T) {
	updated := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	eta := 90.4
	p := workflows.Progress{UpdatedAt: updated, ETASeconds: &eta}
	for _, c := range []struct {
		now  time.Time
		want time.Duration
	}{
		{updated, 90 * time.Second},
		{updated.Add(30 * time.Second), 60 * time.Second},
		{updated.Add(5 * time.Minute), 0}, // overdue: nothing left, not negative
	} {
		if got, ok := etaLeft(p, c.now); !ok || got != c.want {
			t.Errorf("etaLeft at %s: %s %t, want %s", c.now.Sub(updated), got, ok, c.want)
		}
	}
	if _, ok := etaLeft(workflows.Progress{UpdatedAt: updated}, updated); ok {
		t.Error("etaLeft without an ETA: ok")
	}
}
