package e2e

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// TestQuarantine: a topic with a corrupt chunk fails three runs in a row and is quarantined; the
// fourth run leaves it out and reports it with its reason (a run scoped to another topic does
// not); `starter quarantine list` shows it and `starter quarantine clear` re-enables it, so that
// the next run (chunk repaired) optimizes it.
func TestQuarantine(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	badID := makeTopic(t, e.cat, e.b, "quar/bad", [][]handRow{rowsAt(1, 2), rowsAt(3), rowsAt(0, 4)})
	makeTopic(t, e.cat, e.b, "quar/good", [][]handRow{rowsAt(2, 1), rowsAt(3)})
	key := chunkKeys(t, e.cat, badID)[1]
	original, err := e.b.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.b.WriteAll(ctx, key, []byte("this is not a Parquet file"), nil); err != nil {
		t.Fatal(err)
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)

	for run := 1; run <= 3; run++ {
		res := e.runPass(t, app.PassOptions{BatchTopics: historyBatchTopics()})
		if res.Failed != 1 || res.Quarantined != 0 || res.Optimized != boolInt(run == 1) {
			t.Fatalf("run %d: %+v, want quar/bad failed (and quar/good optimized in run 1)", run, res)
		}
		rec, err := e.cat.FailureOf(ctx, badID)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if rec.Failures != run || (rec.QuarantinedAt != nil) != (run == 3) {
			t.Fatalf("run %d: failure record %+v, want %d failures, quarantined only after 3", run, rec, run)
		}
	}
	saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, "quar/bad"), "optimize-topic-input-failure")

	res := e.runPass(t, app.PassOptions{BatchTopics: historyBatchTopics()})
	if res.Failed != 0 || res.Optimized != 0 || res.Quarantined != 1 || len(res.QuarantinedTopics) != 1 {
		t.Fatalf("run 4: %+v, want quar/bad left out as quarantined", res)
	}
	q := res.QuarantinedTopics[0]
	if q.Locator != "quar/bad" || q.Failures != 3 || !strings.HasPrefix(q.Reason, activities.ErrTypeInput+": ") ||
		!strings.Contains(q.Reason, key) {
		t.Fatalf("run 4 reports %+v, want quar/bad with 3 input failures naming chunk %s", q, key)
	}
	var summary bytes.Buffer
	if err := app.WriteSummary(&summary, e.lastRun, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "quarantined") || !strings.Contains(summary.String(), key) {
		t.Errorf("run summary does not report the quarantined topic:\n%s", summary.String())
	}
	e.queueEmpty(t)
	saveHistory(t, e.srv.Client, e.lastRun, "store-optimizer-quarantined")

	// A run scoped away from quar/bad, and its dry run, do not report it.
	for _, dry := range []bool{false, true} {
		res := e.runPass(t, app.PassOptions{Scope: []string{"topic:quar/good"}, DryRun: dry})
		if res.Quarantined != 0 || len(res.QuarantinedTopics) != 0 {
			t.Fatalf("run scoped to quar/good (dry run %v) reports quarantined topics outside its scope: %d %+v",
				dry, res.Quarantined, res.QuarantinedTopics)
		}
	}

	out, code := e.starter(t, "quarantine", "list")
	if code != 0 || !strings.Contains(out, "quar/bad") || !strings.Contains(out, key) {
		t.Fatalf("starter quarantine list exited %d:\n%s", code, out)
	}
	t.Logf("starter quarantine list:\n%s", out)
	if out, code := e.starter(t, "quarantine", "clear"); code == 0 {
		t.Errorf("starter quarantine clear without a locator or --all succeeded:\n%s", out)
	}
	if out, code := e.starter(t, "quarantine", "clear", "quar/bad"); code != 0 || !strings.Contains(out, "cleared") {
		t.Fatalf("starter quarantine clear exited %d:\n%s", code, out)
	}
	if out, _ := e.starter(t, "quarantine", "list"); !strings.Contains(out, "no quarantined topics") {
		t.Errorf("after clear, quarantine list says:\n%s", out)
	}

	if err := e.b.WriteAll(ctx, key, original, nil); err != nil {
		t.Fatal(err)
	}
	res = e.runPass(t, app.PassOptions{})
	if res.Optimized != 1 || res.Failed != 0 || res.Quarantined != 0 {
		t.Fatalf("run after clear: %+v, want quar/bad optimized", res)
	}
	if _, err := e.cat.FailureOf(ctx, badID); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("failure record after a successful optimization: %v, want none", err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
