package main

import (
	"context"
	"strings"
	"testing"
)

// TestReadNamesTheRequiredWindowFlags runs `starter read --topic …` with --from or --to (or both)
// missing: the error names the two flags and where a topic's range is shown, not the zero
// defaults ("--to 0 must be after --from 0"). It fails before opening the catalog or the store.
func TestReadNamesTheRequiredWindowFlags(t *testing.T) {
	for _, window := range [][]string{nil, {"--from", "5"}, {"--to", "5"}} {
		args := append([]string{"--database-url", "postgres://127.0.0.1:1/none", "read", "--topic", "run_1/imu"}, window...)
		root := newRootCommand()
		root.SetArgs(args)
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), "--from and --to are required") ||
			!strings.Contains(err.Error(), "see starter report") {
			t.Errorf("starter %s: error %v, want one naming --from and --to and starter report", strings.Join(args, " "), err)
			continue
		}
		if got := exitStatus(err); got != exitError {
			t.Errorf("starter %s: exit status %d, want %d", strings.Join(args, " "), got, exitError)
		}
	}
}
