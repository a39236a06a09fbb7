//go:build storeopt_faults

package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Enabled is true in builds with the storeopt_faults tag.
const Enabled = true

type rule struct {
	action string
	skip   int // hits that pass before the first one that acts ("@N": N-1)
	left   int // hits that still act; < 0 = unlimited
}

var (
	mu    sync.Mutex
	rules map[string]*rule
	spec  string
	acted map[string][]string // point → objects its TriggeredOn hits acted on
)

// load parses STOREOPT_FAULTS again whenever it changed, so in-process tests can set it; the
// record of ActedOn starts afresh then.
func load() {
	cur := os.Getenv(EnvVar)
	if rules != nil && cur == spec {
		return
	}
	spec, rules, acted = cur, map[string]*rule{}, map[string][]string{}
	for _, item := range strings.Split(cur, ";") {
		point, action, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		r := &rule{action: action, left: -1}
		if a, n, ok := strings.Cut(action, "*"); ok {
			r.action = a
			if v, err := strconv.Atoi(n); err == nil {
				r.left = v
			}
		}
		if a, n, ok := strings.Cut(r.action, "@"); ok {
			r.action = a
			if v, err := strconv.Atoi(n); err == nil && v > 1 {
				r.skip = v - 1
			}
		}
		rules[point] = r
	}
}

// Hit acts on point as STOREOPT_FAULTS says: returns an error, blocks, sleeps, panics or kills the
// process.
func Hit(ctx context.Context, point string) error {
	mu.Lock()
	load()
	r := rules[point]
	if r == nil || r.left == 0 {
		mu.Unlock()
		return nil
	}
	if r.skip > 0 {
		r.skip--
		mu.Unlock()
		return nil
	}
	if r.left > 0 {
		r.left--
	}
	action := r.action
	mu.Unlock()
	fmt.Fprintf(os.Stderr, "%s%s=%s\n", LogPrefix, point, action)
	switch {
	case action == "fail":
		return fmt.Errorf("injected fault at %s", point)
	case action == "hang":
		<-ctx.Done()
		return ctx.Err()
	case action == "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case action == "exit":
		os.Exit(3)
	case action == "panic":
		panic(fmt.Sprintf("injected panic at %s", point))
	case strings.HasPrefix(action, "sleep:"):
		d, err := time.ParseDuration(strings.TrimPrefix(action, "sleep:"))
		if err != nil {
			return fmt.Errorf("fault at %s: bad sleep action %q: %v", point, action, err)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
