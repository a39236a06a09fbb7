package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
)

// historyBatchTopics is the BatchTopics of a run whose topic workflow's history a test saves: 1
// (no batches, every topic in a topic workflow of its own) when histories are saved, else 0 (the
// default: tiny topics in batches, no topic workflow to save).
func historyBatchTopics() int {
	if os.Getenv("STOREOPT_SAVE_HISTORIES") != "" {
		return 1
	}
	return 0
}

// saveHistory writes the history of workflow id (latest run) as JSON into the directory named by
// $STOREOPT_SAVE_HISTORIES, for workflows/testdata/histories (the replay test). Without the
// variable it does nothing.
func saveHistory(t *testing.T, c client.Client, id, name string) {
	t.Helper()
	dir := os.Getenv("STOREOPT_SAVE_HISTORIES")
	if dir == "" {
		return
	}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
