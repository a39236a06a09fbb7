package workflows

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// currentDetails returns the workflow's current details (workflow.SetCurrentDetails) as the Web
// UI reads them: through the built-in metadata query.
func currentDetails(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}

// progressWatch records a workflow's progress query answers and current details.
type progressWatch[T any] struct {
	query   func()
	answers []T
	details []string
}

// watchProgress queries env's workflow at each of the given times (workflow clock) and when
// its query is called.
func watchProgress[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment, at ...time.Duration) *progressWatch[T] {
	w := &progressWatch[T]{}
	w.query = func() {
		v, err := env.QueryWorkflow(ProgressQuery)
		require.NoError(t, err)
		var p T
		require.NoError(t, v.Get(&p))
		w.answers = append(w.answers, p)
		w.details = append(w.details, currentDetails(t, env))
	}
	for _, d := range at {
		env.RegisterDelayedCallback(w.query, d)
	}
	return w
}

// summaryLog records "<activity type>: <summary>" of every activity the workflows schedule, in
// order, through a workflow outbound interceptor (the test environment has no event history).
type summaryLog struct {
	interceptor.WorkerInterceptorBase
	log callLog
}

func (s *summaryLog) list() []string { return s.log.list() }

// recordSummaries installs a summaryLog on env.
func recordSummaries(env *testsuite.TestWorkflowEnvironment) *summaryLog {
	s := &summaryLog{}
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{s}})
	return s
}

func (s *summaryLog) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &summaryInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, log: s}
}

type summaryInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	log *summaryLog
}

func (i *summaryInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&summaryOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, log: i.log})
}

type summaryOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	log *summaryLog
}

func (o *summaryOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...interface{}) workflow.Future {
	o.log.log.add(activityType + ": " + workflow.GetActivityOptions(ctx).Summary)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

// ExecuteLocalActivity records the summary of a local activity (Lease, Commit) like that of an
// activity.
func (o *summaryOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...interface{}) workflow.Future {
	o.log.log.add(activityType + ": " + workflow.GetLocalActivityOptions(ctx).Summary)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

// TestOptimizeTopicShowsProgress: a topic's progress query, current details and activity
// summaries follow its steps: 4 groups written one at a time, each a minute long, 1000 bytes
// and 1000 rows, of a plan of 4000 rows estimated at 4000 bytes.
func TestOptimizeTopicShowsProgress(t *testing.T) {
	env := newTestEnv(t)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	summaries := recordSummaries(env)
	m := &topicMocks{groups: 4, writeDelay: time.Minute, outputBytes: 4000}
	m.install(env)
	w := watchProgress[TopicProgress](t, env, 30*time.Second, 90*time.Second)

	in := topicInput(1)
	in.Policy = "auto"
	env.ExecuteWorkflow(OptimizeTopicWorkflow, in)

	require.NoError(t, env.GetWorkflowError())
	w.query()
	eta180, eta0 := 180.0, 0.0
	planned := TopicProgress{Locator: testLocator, Policy: "auto", AppliedPolicy: "tiered", InputChunks: 40,
		InputBytes: 4e6, OutputChunks: 4, Groups: 4, PlannedRows: 4000, PlannedBytes: 4000, StartedAt: t0}
	want := []TopicProgress{planned, planned, planned}
	want[0].Step, want[0].UpdatedAt = "write-chunks 0/4", t0
	want[1].Step, want[1].UpdatedAt, want[1].ElapsedSeconds = "write-chunks 1/4", t0.Add(time.Minute), 60
	want[1].GroupsWritten, want[1].RowsWritten, want[1].BytesWritten = 1, 1000, 1000
	want[1].BytesPerSecond, want[1].ETASeconds = 1000.0/60, &eta180
	want[2].Step, want[2].UpdatedAt, want[2].ElapsedSeconds = "done", t0.Add(4*time.Minute), 240
	want[2].GroupsWritten, want[2].RowsWritten, want[2].BytesWritten = 4, 4000, 4000
	want[2].BytesPerSecond, want[2].ETASeconds = 4000.0/240, &eta0
	require.Equal(t, want, w.answers)

	require.Equal(t, "### write-chunks 1/4 · `run_7/sensors/imu`\n"+
		"- **policy** auto → tiered\n"+
		"- **plan** 40 chunks (4.0 MB) → 4 chunks, 4 groups\n"+
		"- **rows** 1,000 of 4,000 (25%)\n"+
		"- **bytes** 1.0 kB of about 4.0 kB (25%) · 16 B/s\n"+
		"- **elapsed** 1m0s · **ETA** 3m0s (12:04:00 UTC)\n", w.details[1])
	require.Contains(t, w.details[2], "### done · `run_7/sensors/imu`")

	require.Equal(t, []string{
		"Lease: lease run_7/sensors/imu (auto)",
		"ReadSort: read-sort run_7/sensors/imu (auto → tiered)",
		"WriteChunks: write chunk 1/4 of run_7/sensors/imu",
		"WriteChunks: write chunk 2/4 of run_7/sensors/imu",
		"WriteChunks: write chunk 3/4 of run_7/sensors/imu",
		"WriteChunks: write chunk 4/4 of run_7/sensors/imu",
		"Commit: commit run_7/sensors/imu (40 → 4 chunks)",
	}, summaries.list())
}

// TestActivitySummariesFitTheServerLimit: summaries of long or invalid locators are cut to a
// readable prefix within the server's limit, keeping what follows the locator.
func TestActivitySummariesFitTheServerLimit(t *testing.T) {
	long := strings.Repeat("ä", 500)
	s := fitSummary("write chunk 3/10 of ", long, " (40 chunks)")
	require.LessOrEqual(t, jsonSize(s), maxSummaryJSONBytes)
	require.True(t, strings.HasPrefix(s, "write chunk 3/10 of ää"), s)
	require.True(t, strings.HasSuffix(s, "… (40 chunks)"), s)
	require.Equal(t, "commit run_7/imu (2 → 1 chunks)", fitSummary("commit ", "run_7/imu", " (2 → 1 chunks)"))
	s = fitSummary(strings.Repeat("x", 1000), "\xff", strings.Repeat("y", 1000))
	require.LessOrEqual(t, jsonSize(s), maxSummaryJSONBytes)
	require.True(t, utf8.ValidString(s))
}
