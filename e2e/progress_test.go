package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// progressSample is what an operator sees of a run at one moment: the run's progress query
// and current details, and those of the topic in flight with its pending activities' heartbeat
// details (DescribeWorkflowExecution).
type progressSample struct {
	run          workflows.Progress
	runDetails   string
	topic        workflows.TopicProgress
	topicDetails string
	heartbeats   []activities.WriteChunksProgress
}

// TestLiveProgressAdvancesMidRun reads a running run's and topic's progress query and current
// details (the Web UI's "Current Details", through the metadata query the UI uses) and the topic's
// pending activities (DescribeWorkflowExecution) while the run goes on, and sees them advance:
// topics finished of the run's queue, rows written of a topic's plan, heartbeat details of
// WriteChunks. Every output chunk is followed by a 250 ms sleep (fault point
// write-chunks.after-object) so that the run takes seconds whatever the machine, one topic and
// one chunk at a time. Then it checks the activity summaries in the histories.
func TestLiveProgressAdvancesMidRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts := testPreset(t)
	e.ingest(t, opts)
	t.Setenv(faults.EnvVar, faults.WriteChunksAfterWrite+"=sleep:250ms")
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	run, err := app.StartPass(ctx, e.srv.Client, e.cfg, app.PassOptions{MaxChunkSizeBytes: 32 << 10,
		MaxConcurrentTopics: 1, TopicParallelism: 1})
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		samples []progressSample
		done    = make(chan struct{})
		stopped = make(chan struct{})
	)
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if s, ok := sampleProgress(ctx, e.srv.Client, e.cfg.TaskQueue, run.GetID()); ok {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}
	}()
	res, err := app.WaitPass(ctx, run)
	close(done)
	<-stopped
	if err != nil {
		t.Fatal(err)
	}
	if res.Optimized != len(opts.Topics) {
		t.Fatalf("run result %+v: want %d topics optimized", res, len(opts.Topics))
	}

	// The run: topics finished of the queue advance, and the details say so.
	var midRun []progressSample
	for _, s := range samples {
		if s.run.Finished < s.run.Queued {
			midRun = append(midRun, s)
		}
	}
	if len(midRun) < 2 {
		t.Fatalf("%d samples mid-run (of %d): the run was not observed while running", len(midRun), len(samples))
	}
	finished, detailsFinished := map[int]bool{}, map[string]bool{}
	runDetailsHead := regexp.MustCompile(`^### Optimizing topics: (\d+) of (\d+) finished\n`)
	topicDetailsHead := regexp.MustCompile("^### write-chunks (\\d+)/\\d+ · `[^`]+`\n(?s:.*)- \\*\\*rows\\*\\* [0-9,]+ of [0-9,]+")
	last := -1
	for _, s := range midRun {
		if s.run.Queued != len(opts.Topics) || s.run.QueuedBytes <= 0 {
			t.Errorf("mid-run progress %+v: want %d topics queued with their bytes", s.run, len(opts.Topics))
		}
		if s.run.Finished < last {
			t.Errorf("topics finished went back from %d to %d", last, s.run.Finished)
		}
		last = s.run.Finished
		finished[s.run.Finished] = true
		// The details are read by a second query: the run may have moved on in between.
		if m := runDetailsHead.FindStringSubmatch(s.runDetails); m != nil {
			detailsFinished[m[1]] = true
			// Between EnqueueTopics and the first child's start nothing is in flight yet.
			if m[2] != strconv.Itoa(len(opts.Topics)) || (s.run.InFlight > 0 && !strings.Contains(s.runDetails, "**in flight** `")) {
				t.Errorf("run details mid-run:\n%s\nwant %d queued and the topic in flight", s.runDetails, len(opts.Topics))
			}
		}
	}
	if !finished[1] && !finished[2] {
		t.Errorf("never saw the run between its first and last topic (finished counts seen: %v)", finished)
	}
	if len(detailsFinished) < 2 {
		t.Errorf("the run's current details did not advance: finished counts seen %v", detailsFinished)
	}
	final, ok := sampleProgress(ctx, e.srv.Client, e.cfg.TaskQueue, run.GetID())
	if !final.run.Ended || final.run.Finished != len(opts.Topics) || final.run.FinishedBytes != final.run.QueuedBytes ||
		final.run.ETASeconds == nil || *final.run.ETASeconds != 0 || !ok {
		t.Errorf("progress after the run: %+v (sampled %v), want it ended with every topic and byte finished", final.run, ok)
	}
	if !strings.HasPrefix(final.runDetails, fmt.Sprintf("### Run finished: %d of %d finished", len(opts.Topics), len(opts.Topics))) {
		t.Errorf("run details after the run:\n%s", final.runDetails)
	}

	// A topic: rows written of its plan advance while it writes, with an ETA, and WriteChunks
	// heartbeats its progress.
	rowsSeen := map[string]map[int64]bool{}
	heartbeats, stepsInDetails := 0, map[string]bool{}
	for _, s := range samples {
		if m := topicDetailsHead.FindStringSubmatch(s.topicDetails); m != nil {
			stepsInDetails[m[1]] = true
		}
		heartbeats += len(s.heartbeats)
		for _, hb := range s.heartbeats {
			if hb.Outputs != 1 || hb.OutputRows <= 0 || hb.RowsWritten <= 0 {
				t.Errorf("WriteChunks heartbeat %+v: want the rows written of a planned output of a one-chunk group", hb)
			}
		}
		k, n, writing := writeStep(s.topic.Step)
		if !writing || k == 0 || k == n {
			continue
		}
		p := s.topic
		if p.RowsWritten <= 0 || p.RowsWritten >= p.PlannedRows || p.GroupsWritten != k || p.Groups != n || p.ETASeconds == nil {
			t.Errorf("topic progress mid-write %+v: want rows written of the plan and an ETA", p)
		}
		if rowsSeen[p.Locator] == nil {
			rowsSeen[p.Locator] = map[int64]bool{}
		}
		rowsSeen[p.Locator][p.RowsWritten] = true
	}
	advanced := false
	for _, rows := range rowsSeen {
		advanced = advanced || len(rows) >= 2
	}
	if !advanced {
		t.Errorf("no topic was seen at two points of its write (rows written seen per topic: %v)", rowsSeen)
	}
	if len(stepsInDetails) < 2 {
		t.Errorf("the topics' current details did not advance through write-chunks: groups written seen %v", stepsInDetails)
	}
	t.Logf("%d samples, %d mid-run; topics finished seen %v (details %v); groups written seen in topic details %v; rows written seen %v; %d WriteChunks heartbeats",
		len(samples), len(midRun), finished, detailsFinished, stepsInDetails, rowsSeen, heartbeats)
	if heartbeats == 0 {
		t.Errorf("no WriteChunks heartbeat details seen in %d samples", len(samples))
	}

	// The summaries: the child's static summary, and one per activity.
	imu := opts.Sequence + "/sensors/imu"
	desc, err := e.srv.Client.DescribeWorkflowExecution(ctx, workflows.TopicWorkflowID(e.cfg.TaskQueue, imu), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := payloadString(t, desc.GetExecutionConfig().GetUserMetadata().GetSummary()); got != "optimize "+imu {
		t.Errorf("static summary of the topic workflow: %q", got)
	}
	topicSummaries := activitySummaries(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, imu))
	checkSummaries(t, topicSummaries, map[string]*regexp.Regexp{
		"Lease":       regexp.MustCompile(`^lease ` + regexp.QuoteMeta(imu) + ` \(full\)$`),
		"ReadSort":    regexp.MustCompile(`^read-sort ` + regexp.QuoteMeta(imu) + ` \(full\)$`),
		"WriteChunks": regexp.MustCompile(`^write chunk \d+/\d+ of ` + regexp.QuoteMeta(imu) + `$`),
		"Commit":      regexp.MustCompile(`^commit ` + regexp.QuoteMeta(imu) + ` \(10 → \d+ chunks\)$`),
	})
	checkSummaries(t, activitySummaries(t, e.srv.Client, run.GetID()), map[string]*regexp.Regexp{
		"EnqueueTopics":    regexp.MustCompile(`^enqueue topics for full compaction \(trigger 2 L0 chunks, scope all\)$`),
		"ListQueuedTopics": regexp.MustCompile(`^list queued topics after topic 0 \(page of 100\)$`),
	})
	saveHistory(t, e.srv.Client, run.GetID(), "store-optimizer-progress")
	saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, imu), "optimize-topic-progress")
}

// sampleProgress reads the progress of run (its latest execution) and of the first topic in
// flight (on taskQueue, part of its workflow ID); ok is false when the run's query failed.
func sampleProgress(ctx context.Context, c client.Client, taskQueue, runID string) (s progressSample, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !query(ctx, c, runID, workflows.ProgressQuery, &s.run) {
		return s, false
	}
	s.runDetails = currentDetails(ctx, c, runID)
	if len(s.run.InFlightLocators) == 0 {
		return s, true
	}
	id := workflows.TopicWorkflowID(taskQueue, s.run.InFlightLocators[0])
	query(ctx, c, id, workflows.ProgressQuery, &s.topic)
	s.topicDetails = currentDetails(ctx, c, id)
	if desc, err := c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
		for _, pa := range desc.GetPendingActivities() {
			var hb activities.WriteChunksProgress
			if pa.GetActivityType().GetName() == "WriteChunks" && pa.GetHeartbeatDetails() != nil &&
				converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &hb) == nil {
				s.heartbeats = append(s.heartbeats, hb)
			}
		}
	}
	return s, true
}

// query runs a query on the latest execution of workflow id and decodes its answer into out.
func query(ctx context.Context, c client.Client, id, name string, out any) bool {
	v, err := c.QueryWorkflow(ctx, id, "", name)
	return err == nil && v.Get(out) == nil
}

// currentDetails returns the current details of the latest execution of workflow id, read as
// the Web UI reads them (the built-in metadata query), or "" when the query failed.
func currentDetails(ctx context.Context, c client.Client, id string) string {
	var md sdkpb.WorkflowMetadata
	if !query(ctx, c, id, "__temporal_workflow_metadata", &md) {
		return ""
	}
	return md.GetCurrentDetails()
}

// writeStep parses "write-chunks k/n".
func writeStep(step string) (k, n int, ok bool) {
	m := regexp.MustCompile(`^write-chunks (\d+)/(\d+)$`).FindStringSubmatch(step)
	if m == nil {
		return 0, 0, false
	}
	k, _ = strconv.Atoi(m[1])
	n, _ = strconv.Atoi(m[2])
	return k, n, true
}

// activitySummaries returns the summary of every activity scheduled and every local activity
// recorded in the history of workflow id (latest execution), by activity type, in order.
func activitySummaries(t *testing.T, c client.Client, id string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if attrs := ev.GetActivityTaskScheduledEventAttributes(); attrs != nil {
			name := attrs.GetActivityType().GetName()
			out[name] = append(out[name], payloadString(t, ev.GetUserMetadata().GetSummary()))
		}
		// Local activities (Lease, Commit) are recorded as markers with their summary.
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
			var data struct{ ActivityType string }
			if p := m.GetDetails()["data"].GetPayloads(); len(p) > 0 {
				if err := json.Unmarshal(p[0].GetData(), &data); err != nil {
					t.Fatalf("local activity marker: %v", err)
				}
			}
			out[data.ActivityType] = append(out[data.ActivityType], payloadString(t, ev.GetUserMetadata().GetSummary()))
		}
	}
	return out
}

// checkSummaries checks that every activity type of want was scheduled, each time with a
// summary that matches.
func checkSummaries(t *testing.T, got map[string][]string, want map[string]*regexp.Regexp) {
	t.Helper()
	for activity, re := range want {
		if len(got[activity]) == 0 {
			t.Errorf("no %s activity in the history (summaries: %v)", activity, got)
		}
		for _, s := range got[activity] {
			if !re.MatchString(s) {
				t.Errorf("summary of %s: %q does not match %s", activity, s, re)
			}
		}
	}
}

// payloadString decodes a user metadata payload (a JSON string); "" when absent.
func payloadString(t *testing.T, p *commonpb.Payload) string {
	t.Helper()
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		t.Fatalf("user metadata payload: %v", err)
	}
	return s
}
