package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// buildStarter builds the starter command once per test binary.
var buildStarter = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "storeopt-starter-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "starter")
	cmd := exec.Command("go", "build", "-o", bin, "./starter")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// starter runs the starter command against e and returns its output (stdout and stderr) and
// exit status.
func (e *env) starter(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin, err := buildStarter()
	if err != nil {
		t.Fatalf("build starter: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.starterCommand(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("starter %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// starterCommand is the command of the starter binary bin with args, pointed at e (log level
// warn, then e.procEnv).
func (e *env) starterCommand(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(),
		app.EnvTemporalAddress+"="+e.cfg.TemporalAddress,
		app.EnvDatabaseURL+"="+e.cfg.DatabaseURL,
		app.EnvStoreURL+"="+e.cfg.StoreURL,
		app.EnvTaskQueue+"="+e.cfg.TaskQueue,
		app.EnvLogLevel+"=warn")
	cmd.Env = append(cmd.Env, e.procEnv...)
	return cmd
}

// runCleanup runs one cleanup pass with the given retention and returns its result.
func (e *env) runCleanup(t *testing.T, retention time.Duration) workflows.CleanupResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := app.StartCleanup(ctx, e.srv.Client, e.cfg, app.CleanupOptions{RetentionDuration: retention})
	if err != nil {
		t.Fatal(err)
	}
	e.lastRun = run.GetID()
	res, err := app.WaitCleanup(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCleanup optimizes two topics, then runs cleanup passes over a store that also holds a live
// lease's first object, a hand-written orphan prefix and an orphan that a topic adopts later:
// with retention 1h everything unreferenced is only marked; with retention 0 (through the
// starter) the old prefixes and the orphan are deleted while the current prefixes, the lease's
// prefix and the adopted prefix (unmarked) stay.
func TestCleanup(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ids := []int64{
		makeTopic(t, e.cat, e.b, "clean/a", [][]handRow{rowsAt(3, 1, 2), rowsAt(0, 5)}),
		makeTopic(t, e.cat, e.b, "clean/b", [][]handRow{rowsAt(7), rowsAt(6, 8)}),
	}
	var old []string
	for _, id := range ids {
		tp, err := e.cat.Topic(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, tp.DataPrefix)
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	if res := e.runPass(t, app.PassOptions{}); res.Optimized != 2 {
		t.Fatalf("run result %+v, want 2 optimized", res)
	}
	var current []string
	var content []topicContent
	for _, id := range ids {
		tp, err := e.cat.Topic(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		current = append(current, tp.DataPrefix)
		content = append(content, readTopic(t, e.b, chunkKeys(t, e.cat, id)))
	}

	// A live lease whose first object is written: Lease stores the fresh prefix first.
	leasedID := makeTopic(t, e.cat, e.b, "clean/leased", [][]handRow{rowsAt(1)})
	leased, err := e.cat.Topic(ctx, leasedID)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := e.cat.AcquireLease(ctx, leasedID, "manual", "manual-run", store.NewPrefix())
	if err != nil {
		t.Fatal(err)
	}
	orphan, adopted := store.NewPrefix(), store.NewPrefix()
	for _, k := range []string{store.ChunkKey(lease.FreshPrefix, 0), store.ChunkKey(orphan, 0),
		store.MetadataKey(orphan), store.MetadataKey(adopted)} {
		if err := e.b.WriteAll(ctx, k, []byte("written by hand"), nil); err != nil {
			t.Fatal(err)
		}
	}
	kept := append(append([]string{leased.DataPrefix, lease.FreshPrefix}, current...), adopted)
	before := map[string]int{}
	for _, p := range append(append([]string{orphan}, old...), kept...) {
		before[p] = e.objectsUnder(t, p)
		if before[p] == 0 {
			t.Fatalf("prefix %s has no objects before cleanup", p)
		}
	}

	// Retention 1h: unreferenced prefixes are marked, nothing is deleted.
	res := e.runCleanup(t, time.Hour)
	want := workflows.CleanupResult{RetentionDuration: time.Hour, Prefixes: 8, Referenced: 4, Marked: 4, Pending: 4}
	if !equalCleanup(res, want) {
		t.Fatalf("cleanup with retention 1h: %+v, want %+v", res, want)
	}
	for p, n := range before {
		if got := e.objectsUnder(t, p); got != n {
			t.Errorf("prefix %s: %d objects after a 1h-retention pass, want %d", p, got, n)
		}
	}

	// The adopted orphan is referenced again: the next pass unmarks it.
	seq, err := e.cat.CreateSequence(ctx, "clean")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.CreateTopic(ctx, seq, "clean/adopted", adopted, "parquet"); err != nil {
		t.Fatal(err)
	}

	// Retention 0 through the starter: deleted at once.
	out, code := e.starter(t, "cleanup", "--retention-duration", "0")
	if code != 0 {
		t.Fatalf("starter cleanup exited %d:\n%s", code, out)
	}
	t.Logf("starter cleanup:\n%s", out)
	id := cleanupID(t, out)
	if err := e.srv.Client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	want = workflows.CleanupResult{Prefixes: 8, Referenced: 5, Unmarked: 1,
		Deleted: 3, DeletedObjects: before[old[0]] + before[old[1]] + before[orphan]}
	if !equalCleanup(res, want) {
		t.Fatalf("cleanup with retention 0: %+v, want %+v", res, want)
	}
	for _, p := range append([]string{orphan}, old...) {
		if n := e.objectsUnder(t, p); n != 0 {
			t.Errorf("prefix %s: %d objects left, want it deleted", p, n)
		}
	}
	for _, p := range kept {
		if got := e.objectsUnder(t, p); got != before[p] {
			t.Errorf("referenced prefix %s: %d objects, want %d", p, got, before[p])
		}
	}
	for i, id := range ids {
		equalRows(t, "current prefix "+current[i], content[i], readTopic(t, e.b, chunkKeys(t, e.cat, id)))
	}
	marks, err := e.cat.CleanupMarks(ctx, "", 10)
	if err != nil || len(marks) != 0 {
		t.Errorf("marks left after retention 0: %+v (err %v)", marks, err)
	}
	saveHistory(t, e.srv.Client, id, "cleanup-pass")

	// The schedule.
	out, code = e.starter(t, "cleanup", "--time-interval", "3600", "--retention-duration", "7200")
	if code != 0 || !strings.Contains(out, app.CleanupScheduleID) {
		t.Fatalf("starter cleanup --time-interval exited %d:\n%s", code, out)
	}
	h := e.srv.Client.ScheduleClient().GetHandle(ctx, app.CleanupScheduleID)
	desc, err := h.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := desc.Schedule.Policy; p == nil || p.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		t.Errorf("schedule policy %+v, want overlap SKIP", desc.Schedule.Policy)
	}
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != time.Hour {
		t.Errorf("schedule intervals %+v, want every 1h", iv)
	}
	if r := scheduledRetention(t, desc); r != 2*time.Hour {
		t.Errorf("schedule starts cleanups with retention %v, want 2h", r)
	}
	// An operator pauses it; the starter updates it: it stays paused, with the new retention.
	if err := h.Pause(ctx, client.SchedulePauseOptions{Note: "paused by the test"}); err != nil {
		t.Fatal(err)
	}
	out, code = e.starter(t, "cleanup", "--time-interval", "3600", "--retention-duration", "600")
	if code != 0 {
		t.Fatalf("starter cleanup --time-interval (update) exited %d:\n%s", code, out)
	}
	if desc, err = h.Describe(ctx); err != nil {
		t.Fatal(err)
	}
	if r := scheduledRetention(t, desc); r != 10*time.Minute {
		t.Errorf("updated schedule starts cleanups with retention %v, want 10m", r)
	}
	if !desc.Schedule.State.Paused {
		t.Errorf("the starter's update unpaused a paused schedule")
	}
	if err := h.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// scheduledRetention returns the retention of the cleanups the schedule starts (its action's
// CleanupInput).
func scheduledRetention(t *testing.T, desc *client.ScheduleDescription) time.Duration {
	t.Helper()
	act, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || len(act.Args) != 1 {
		t.Fatalf("schedule action %+v, want a workflow action with one argument", desc.Schedule.Action)
	}
	var in workflows.CleanupInput
	if err := converter.GetDefaultDataConverter().FromPayload(act.Args[0].(*commonpb.Payload), &in); err != nil {
		t.Fatalf("decode the schedule's cleanup input: %v", err)
	}
	if in.RetentionDuration == nil {
		t.Fatalf("schedule starts cleanups without a retention (the 24 h default)")
	}
	return *in.RetentionDuration
}

// equalCleanup compares cleanup results without the error list.
func equalCleanup(got, want workflows.CleanupResult) bool {
	got.Errors, want.Errors = nil, nil
	return reflect.DeepEqual(got, want)
}

// cleanupID returns the workflow ID the starter's cleanup report names.
func cleanupID(t *testing.T, out string) string {
	t.Helper()
	return reportedID(t, out, "cleanup")
}

// reportedID returns the workflow ID on the line "<label> <ID>" of the starter's output.
func reportedID(t *testing.T, out, label string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == label {
			return f[1]
		}
	}
	t.Fatalf("no %s workflow ID in the starter's output:\n%s", label, out)
	return ""
}
