package app_test

import (
	"context"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
)

// TestTemporalRunsTellsOpenFromGone asks a real dev server: a started run is open until it is
// terminated; a workflow or run the server does not know is gone.
func TestTemporalRunsTellsOpenFromGone(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx := context.Background()
	// No worker polls this task queue: the run stays open until terminated.
	run, err := srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "storeopt-runs-test", TaskQueue: "nobody-polls"},
		"NeverRegistered")
	if err != nil {
		t.Fatal(err)
	}
	runs := app.TemporalRuns{Client: srv.Client}
	check := func(what, workflowID, runID string, want bool) {
		t.Helper()
		open, err := runs.RunOpen(ctx, workflowID, runID)
		if err != nil || open != want {
			t.Fatalf("%s: open %v, err %v; want %v", what, open, err, want)
		}
	}
	check("a started run", run.GetID(), run.GetRunID(), true)
	check("an unknown workflow", "storeopt-no-such-workflow", run.GetRunID(), false)
	check("an unknown run of the workflow", run.GetID(), "6f1c6a4e-3f7e-4b8e-9a41-1d7c0b1c2f00", false)
	if err := srv.Client.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "test"); err != nil {
		t.Fatal(err)
	}
	check("a terminated run", run.GetID(), run.GetRunID(), false)
	// A lease a tool took under a run ID of its own is not known to be gone.
	check("a run ID Temporal refuses", run.GetID(), "not-a-run-id", true)
}
