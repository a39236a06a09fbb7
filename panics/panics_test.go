package panics

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
)

func TestGoReturnsPanicAsError(t *testing.T) {
	g, ctx := errgroup.WithContext(context.Background())
	Go(g, "encoder", func() error {
		var s []int
		_ = s[3] // index out of range: a runtime.Error
		return nil
	})
	Go(g, "reader", func() error {
		<-ctx.Done() // cancelled by the panic of the other goroutine
		return ctx.Err()
	})
	err := g.Wait()
	pe, ok := As(err)
	if !ok {
		t.Fatalf("Wait returned %v (%T), want *Error", err, err)
	}
	if pe.Where != "encoder" || !strings.Contains(err.Error(), "internal error") ||
		!strings.Contains(err.Error(), "panic in encoder") || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("error %q", err)
	}
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Errorf("runtime error not unwrapped from %v", err)
	}
	if !strings.Contains(string(pe.Stack), "panics.TestGoReturnsPanicAsError") {
		t.Errorf("stack does not show the panicking function:\n%s", pe.Stack)
	}
}

func TestRecoverKeepsOrdinaryErrors(t *testing.T) {
	want := errors.New("ordinary")
	f := func() (err error) {
		defer Recover(&err, "x")
		return want
	}
	if err := f(); err != want {
		t.Errorf("got %v, want %v", err, want)
	}
	g := func() (err error) {
		defer Recover(&err, "heartbeat")
		panic("boom")
	}
	if err := g(); err == nil || !strings.Contains(err.Error(), "panic in heartbeat: boom") {
		t.Errorf("got %v", err)
	}
	if _, ok := As(want); ok {
		t.Error("As found an *Error in an ordinary error")
	}
}
