package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

func TestScheduleSpecFor(t *testing.T) {
	if s, err := app.ScheduleSpecFor(time.Hour, ""); err != nil || len(s.Intervals) != 1 || s.Intervals[0].Every != time.Hour {
		t.Errorf("interval: %+v, %v", s, err)
	}
	if s, err := app.ScheduleSpecFor(0, " 0 3 * * * "); err != nil || len(s.CronExpressions) != 1 || s.CronExpressions[0] != "0 3 * * *" {
		t.Errorf("cron: %+v, %v", s, err)
	}
	for _, bad := range []struct {
		interval time.Duration
		cron     string
	}{{0, ""}, {-time.Second, ""}, {time.Hour, "@daily"}} {
		if _, err := app.ScheduleSpecFor(bad.interval, bad.cron); err == nil {
			t.Errorf("ScheduleSpecFor(%v, %q) accepted", bad.interval, bad.cron)
		}
	}
}

// TestEnsureScheduleCreatesThenUpdates creates the schedule from an interval on a real server,
// then updates it to a cron expression with other options, and checks what the server stored.
func TestEnsureScheduleCreatesThenUpdates(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := srv.Config("postgres://unused", "mem://")

	// An interval of a day never fires during the test.
	if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 1000}, 24*time.Hour, ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	desc := describe(ctx, t, srv.Client)
	if got := desc.Schedule.Spec.Intervals; len(got) != 1 || got[0].Every != 24*time.Hour {
		t.Errorf("intervals after create: %+v", got)
	}
	checkAction(t, desc, cfg.TaskQueue, 1000)

	if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 2000, MaxConcurrentTopics: 3}, 0, "0 3 1 1 *"); err != nil {
		t.Fatalf("update: %v", err)
	}
	desc = describe(ctx, t, srv.Client)
	if got := desc.Schedule.Spec.Intervals; len(got) != 0 {
		t.Errorf("intervals after update to cron: %+v, want none", got)
	}
	if len(desc.Schedule.Spec.Calendars) == 0 && len(desc.Schedule.Spec.CronExpressions) == 0 {
		t.Errorf("no calendar/cron spec after update: %+v", desc.Schedule.Spec)
	}
	checkAction(t, desc, cfg.TaskQueue, 2000)

	list, err := srv.Client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for list.HasNext() {
		if _, err := list.Next(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d schedules, want exactly 1 (update must not create a second)", n)
	}
}

func describe(ctx context.Context, t *testing.T, c client.Client) *client.ScheduleDescription {
	t.Helper()
	desc, err := c.ScheduleClient().GetHandle(ctx, app.ScheduleID).Describe(ctx)
	if err != nil {
		t.Fatalf("describe schedule %s: %v", app.ScheduleID, err)
	}
	return desc
}

func checkAction(t *testing.T, desc *client.ScheduleDescription, queue string, maxChunk int64) {
	t.Helper()
	if desc.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		t.Errorf("overlap policy %v, want SKIP", desc.Schedule.Policy.Overlap)
	}
	act, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok {
		t.Fatalf("action %T, want a workflow action", desc.Schedule.Action)
	}
	if act.Workflow != "StoreOptimizerWorkflow" || act.TaskQueue != queue {
		t.Errorf("action starts %v on %s, want StoreOptimizerWorkflow on %s", act.Workflow, act.TaskQueue, queue)
	}
	if len(act.Args) != 1 {
		t.Fatalf("action has %d args, want 1", len(act.Args))
	}
	var in workflows.StoreOptimizerInput
	if err := converter.GetDefaultDataConverter().FromPayload(act.Args[0].(*commonpb.Payload), &in); err != nil {
		t.Fatalf("decode action input: %v", err)
	}
	if in.MaxChunkSizeBytes != maxChunk {
		t.Errorf("action input MaxChunkSizeBytes %d, want %d", in.MaxChunkSizeBytes, maxChunk)
	}
}

// TestEnsureScheduleKeepsPausedSchedulePaused: an operator pauses the schedule; running the
// starter's schedule command again updates it (new options) and leaves it paused.
func TestEnsureScheduleKeepsPausedSchedulePaused(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := srv.Config("postgres://unused", "mem://")
	if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 1000}, 24*time.Hour, ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	if desc := describe(ctx, t, srv.Client); desc.Schedule.State.Paused {
		t.Fatalf("a new schedule is paused")
	}
	h := srv.Client.ScheduleClient().GetHandle(ctx, app.ScheduleID)
	if err := h.Pause(ctx, client.SchedulePauseOptions{Note: "maintenance"}); err != nil {
		t.Fatal(err)
	}
	if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 3000}, 12*time.Hour, ""); err != nil {
		t.Fatalf("update: %v", err)
	}
	desc := describe(ctx, t, srv.Client)
	checkAction(t, desc, cfg.TaskQueue, 3000) // the update happened
	if got := desc.Schedule.Spec.Intervals; len(got) != 1 || got[0].Every != 12*time.Hour {
		t.Errorf("intervals after update: %+v", got)
	}
	if !desc.Schedule.State.Paused {
		t.Errorf("the update unpaused a paused schedule")
	}
}

// TestSchedulesOnePerInstallation: two installations (task queues) on one namespace each get a
// run schedule and a cleanup schedule of their own, starting workflows on their own task queue
// with workflow IDs of their own; the default task queue keeps the IDs schedules always had.
func TestSchedulesOnePerInstallation(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod := srv.Config("postgres://unused", "mem://")
	staging := prod
	staging.TaskQueue = "storeopt-staging"
	for _, cfg := range []app.Config{prod, staging} {
		if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{}, 24*time.Hour, ""); err != nil {
			t.Fatalf("schedule of %s: %v", cfg.TaskQueue, err)
		}
		if err := app.EnsureCleanupSchedule(ctx, srv.Client, cfg, app.CleanupOptions{}, 24*time.Hour, ""); err != nil {
			t.Fatalf("cleanup schedule of %s: %v", cfg.TaskQueue, err)
		}
	}
	want := map[string][2]string{ // schedule ID: task queue, workflow ID (prefix)
		"storeopt-store-optimizer":                  {prod.TaskQueue, "storeopt-scheduled"},
		"storeopt-store-optimizer:storeopt-staging": {"storeopt-staging", "storeopt-scheduled:storeopt-staging"},
		"storeopt-cleanup":                          {prod.TaskQueue, "storeopt-cleanup-scheduled"},
		"storeopt-cleanup:storeopt-staging":         {"storeopt-staging", "storeopt-cleanup-scheduled:storeopt-staging"},
	}
	for id, w := range want {
		desc, err := srv.Client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		if err != nil {
			t.Errorf("describe schedule %s: %v", id, err)
			continue
		}
		act := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
		if act.TaskQueue != w[0] || act.ID != w[1] {
			t.Errorf("schedule %s starts %s on %s, want %s on %s", id, act.ID, act.TaskQueue, w[1], w[0])
		}
	}
	if got := app.ScheduleIDFor(staging.TaskQueue); got != "storeopt-store-optimizer:storeopt-staging" {
		t.Errorf("ScheduleIDFor(%s) = %s", staging.TaskQueue, got)
	}
}

// TestEnsureScheduleBadCronOnExistingScheduleSaysUpdate: the schedule exists; running the
// schedule command again with a cron expression the server rejects fails with an error that
// says "update schedule" (it was updating), not "create schedule".
func TestEnsureScheduleBadCronOnExistingScheduleSaysUpdate(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := srv.Config("postgres://unused", "mem://")
	if err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 1000}, 24*time.Hour, ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	err := app.EnsureSchedule(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: 1000}, 0, "not a cron")
	if err == nil {
		t.Fatal("bad cron expression accepted")
	}
	if !strings.Contains(err.Error(), "update schedule") || strings.Contains(err.Error(), "create schedule") {
		t.Errorf("error %q, want one that says update schedule", err)
	}
	if got := describe(ctx, t, srv.Client).Schedule.Spec.Intervals; len(got) != 1 || got[0].Every != 24*time.Hour {
		t.Errorf("intervals after the failed update: %+v, want the old 24h", got)
	}
}
