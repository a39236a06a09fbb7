package main

import (
	"os"
	"testing"
	"time"

	"github.com/creack/pty"

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

// TestDrawsBarsOnlyOnATerminalWithAWidth: a pseudo-terminal of 0×0 (what `script -qc` often
// makes) gets log lines, since mpb draws nothing on it; one of 40×160 gets bars; a pipe does not.
func TestDrawsBarsOnlyOnATerminalWithAWidth(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	for _, c := range []struct {
		rows, cols uint16
		want       bool
	}{{0, 0, false}, {40, 0, false}, {40, 160, true}} {
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: c.rows, Cols: c.cols}); err != nil {
			t.Fatal(err)
		}
		if got := drawsBars(tty.Fd()); got != c.want {
			t.Errorf("terminal of %d×%d: drawsBars %t, want %t", c.rows, c.cols, got, c.want)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if drawsBars(w.Fd()) {
		t.Error("a pipe: drawsBars true")
	}
}
