package workflows

import (
	"path/filepath"
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
	if len(paths) == 0 {
		t.Skip("no histories in testdata/histories: save some from a real run (see testdata/histories/README.md)")
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
