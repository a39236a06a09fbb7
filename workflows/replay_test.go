package workflows

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplaySavedHistories replays every history in testdata/histories against the current
// workflow code: a change that would break running executions (a non-determinism error) fails
// here. See testdata/histories/README.md for how to save the histories.
func TestReplaySavedHistories(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	require.NoError(t, err)
	// The histories are part of the repository: without one of each workflow this test would
	// pass while replaying nothing of it.
	for _, prefix := range []string{"store-optimizer-", "optimize-topic-", "cleanup-pass"} {
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(filepath.Base(p), prefix) }) {
			t.Fatalf("no history %s*.json in testdata/histories (%d histories): save one from a real run (see testdata/histories/README.md)",
				prefix, len(paths))
		}
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflow(StoreOptimizerWorkflow)
			replayer.RegisterWorkflow(OptimizeTopicWorkflow)
			replayer.RegisterWorkflow(CleanupWorkflow)
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, path))
		})
	}
}
