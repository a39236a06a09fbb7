package main

import (
	"context"
	"os"
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

// TestReadRefusesAMissingStoreDirectory runs `starter read` against a file:// store whose
// directory does not exist: the error names the store, before the catalog is opened, and the
// directory is not created.
func TestReadRefusesAMissingStoreDirectory(t *testing.T) {
	dir := t.TempDir() + "/no-such-store"
	args := []string{"--database-url", "postgres://127.0.0.1:1/none", "--store-url", "file://" + dir,
		"read", "--topic", "run_1/imu", "--from", "0", "--to", "5"}
	root := newRootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "directory does not exist") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("starter %s: error %v, want one saying the store's directory does not exist", strings.Join(args, " "), err)
	}
	if _, statErr := os.Stat(dir); statErr == nil {
		t.Errorf("starter read created the store directory %s", dir)
	}
}
