package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/policy"
)

// Defaults and limits of StoreOptimizerInput and its result.
const (
	DefaultMaxConcurrentTopics = 4
	DefaultPageSize            = 100
	// MaxPageSize is the largest page of queued topics one execution handles (the limit of
	// ListQueuedTopics); a larger PageSize is lowered to it.
	MaxPageSize = 1000
	// MaxRecordedFailures is how many TopicFailure entries a run keeps; Failed counts them all.
	MaxRecordedFailures = 100
	// maxProgressLocators is how many in-flight locators the progress query lists.
	maxProgressLocators = 20
	// StoreFaultLimit is how many topics in a row must fail with the same store fault
	// (activities.ErrTypeStore: same store, same cause), none optimized in between, before a run
	// stops starting topics (StoreOptimizerResult.StoreFault).
	StoreFaultLimit = 3
	// storeFaultStopChange is the workflow.GetVersion change ID of the early stop on a store
	// fault. Retired: only version 1 is supported (docs/contributing.md#supported-histories).
	storeFaultStopChange = "store-fault-stop"
	// slidingWindowChange is the workflow.GetVersion change ID of the window that slides across
	// pages. Retired: only version 1 is supported (docs/contributing.md#supported-histories).
	slidingWindowChange = "sliding-window"
	// DefaultContinueAsNewEvents is the history length (events) after which an execution lists no
	// further page, waits for its children and continues as new (StoreOptimizerInput).
	DefaultContinueAsNewEvents = 10000
	// DefaultMaxConcurrentSmallTopics is how many small topics are optimized at once by default
	// (StoreOptimizerInput.MaxConcurrentSmallTopics).
	DefaultMaxConcurrentSmallTopics = 32
	// smallTopicBatchesChange is the workflow.GetVersion change ID of tiny topics optimized in
	// batches. Retired: only version 1 is supported (docs/contributing.md#supported-histories).
	smallTopicBatchesChange = "small-topic-batches"
	// DefaultBatchTopics is how many tiny topics one OptimizeSmallTopics activity optimizes.
	DefaultBatchTopics = 25
	// debtFirstChange is the workflow.GetVersion change ID of runs under auto that list their
	// queue in order of debt, the topics with the most L0 chunks first; executions recorded before
	// it list in topic ID order.
	debtFirstChange = "debt-first"
	// topicIDTaskQueueChange is the workflow.GetVersion change ID of topic workflow IDs that hold
	// the run's task queue (version 1, TopicWorkflowID): executions recorded before it start
	// their children as LegacyTopicWorkflowID(locator), as they did.
	topicIDTaskQueueChange = "topic-id-task-queue"
	// DefaultBatchTopicBytes is the largest estimated input of a tiny topic, bytes.
	DefaultBatchTopicBytes = 1 << 20
)

// StoreOptimizerInput is the input of StoreOptimizerWorkflow. Zero values take the defaults.
type StoreOptimizerInput struct {
	// MaxChunkSizeBytes is the soft size limit of one output chunk, bytes; 0 = 256000000.
	MaxChunkSizeBytes int64
	// MaxConcurrentTopics is how many topics are optimized at once; 0 = 4.
	MaxConcurrentTopics int
	// PageSize is how many queued topics one ListQueuedTopics lists; 0 = 100, at most
	// MaxPageSize. The next page is listed as soon as every topic of the current one has started
	// (the window of topics in flight slides across pages). Executions recorded before the
	// sliding window handle one page each and continue as new after every full one.
	PageSize int
	// MaxConcurrentSmallTopics is how many small topics (estimated input bytes at most
	// MaxChunkSizeBytes: one output chunk, one WriteChunks) are optimized at once, besides the
	// MaxConcurrentTopics larger ones; 0 = DefaultMaxConcurrentSmallTopics. A small topic's steps
	// are short catalog and store round trips, so many in flight keep the worker busy, while the
	// larger ones stay bounded by MaxConcurrentTopics (memory, store bandwidth).
	MaxConcurrentSmallTopics int `json:",omitempty"`
	// ContinueAsNewEvents is the history length (events) after which an execution lists no
	// further page, waits for the topics in flight and continues as new with the run's state;
	// 0 = DefaultContinueAsNewEvents. The server's suggestion to continue as new is followed too.
	ContinueAsNewEvents int `json:",omitempty"`
	// BatchTopics is how many tiny topics (estimated input at most BatchTopicBytes and
	// MaxChunkSizeBytes) one OptimizeSmallTopics activity optimizes one after the other, instead
	// of a topic workflow each; 0 = DefaultBatchTopics, 1 = no batches. A batch takes one slot of
	// the small topics' window. BatchTopicBytes 0 = DefaultBatchTopicBytes.
	BatchTopics     int   `json:",omitempty"`
	BatchTopicBytes int64 `json:",omitempty"`
	// TopicParallelism is how many WriteChunks activities each topic runs at once; 0 = 2.
	TopicParallelism int
	// HeartbeatTimeout of the topics' ReadSort and WriteChunks activities; 0 = one minute.
	HeartbeatTimeout time.Duration
	// Policy is the compaction policy: "full" ("" too: finalized topics never optimized,
	// rewritten whole), "tiered", "leveled" or "auto" (see package policy).
	Policy string
	// MinChunks is the trigger of tiered, leveled and auto: a topic is queued only when it has
	// at least this many L0 chunks; 0 = policy.DefaultMinChunks (2).
	MinChunks int
	// Scope limits what the run touches: "all" (none = all), "sequence:NAME", "topic:LOCATOR".
	Scope []string
	// DryRun: plan every topic the run would optimize and return the plans with estimated
	// seconds (StoreOptimizerResult.DryRun) without queueing, leasing, writing or changing
	// anything.
	DryRun bool `json:",omitempty"`
	// State is nil when a run starts; continue-as-new carries the run's progress in it.
	State *RunState
}

// RunState is the progress of a run, carried from one execution to the next by continue-as-new.
type RunState struct {
	// Enqueued is true once EnqueueTopics has run for this run.
	Enqueued bool
	// AfterTopicID is the cursor into the queue: the next page starts after this topic ID.
	AfterTopicID int64
	// DebtFirst: the run lists its queue in order of debt (a run under auto; debtFirstChange),
	// the cursor then AfterTopicID and its queued debt AfterDebt.
	DebtFirst bool `json:",omitempty"`
	AfterDebt int  `json:",omitempty"`
	// Result is the result so far.
	Result StoreOptimizerResult
	// StoreFaultStreak counts the topics that failed one after another with the store fault
	// StoreFaultKey ("<store> <cause>"), none optimized and none failing otherwise in between.
	StoreFaultStreak int
	StoreFaultKey    string
	// The run's live progress (see Progress): topics and their estimated bytes to do
	// (EnqueueTopicsResult.ForRun, ForRunBytes) and done with so far, and when the run started
	// (workflow time). Zero in states recorded before they existed.
	Queued        int
	QueuedBytes   int64
	Finished      int
	FinishedBytes int64
	StartedAt     time.Time
}

// TopicFailure is one topic whose optimization failed, with the error message (which names the
// topic, the step and the cause).
type TopicFailure struct {
	Locator string
	Error   string
}

// StoreOptimizerResult is the outcome of a run, in the words of docs/design.md#vocabulary.
// Skipped counts the topics left alone because another run optimized them since this run listed
// them (already optimized) or holds their lease (leased); NothingToDo those the policy selected
// no chunk of. Failures lists the first MaxRecordedFailures failed topics; Failed counts all of them. The
// totals sum the OptimizeTopicResults of the optimized topics; bytes are Parquet object sizes.
// Quarantined counts the topics the run left out because they are quarantined (as of its start,
// plus those another run quarantined after this run listed them);
// QuarantinedTopics lists the first activities.MaxReportedQuarantined with their reasons.
//
// StoreFault is set when StoreFaultLimit topics in a row failed with the same store fault
// (activities.ErrTypeStore: the store refuses in a way no retry can fix): the run then stops
// starting topics and says so here, once — the fault's message (store URL, cause, what to
// change) — rather than in one failure per topic. NotAttempted counts the topics of the pages it
// listed that it did not start; they, and the queued topics after them, stay queued for the next
// run.
type StoreOptimizerResult struct {
	Optimized int
	// Tiered and Leveled count the optimized topics by the policy applied (the others: full).
	Tiered, Leveled int
	// NothingToDo counts the topics the policy found nothing to join or merge in.
	NothingToDo       int
	Skipped           int
	Failed            int
	Failures          []TopicFailure
	Quarantined       int
	QuarantinedTopics []activities.QuarantinedTopic
	Rows              int64
	InputChunks       int
	OutputChunks      int
	InputBytes        int64
	OutputBytes       int64
	StoreFault        string
	NotAttempted      int
	// DryRun is the report of a dry run (StoreOptimizerInput.DryRun), nil otherwise.
	DryRun *DryRunReport `json:",omitempty"`
	// Debt is the catalog's compaction debt when the run had queued its topics
	// (docs/operations.md#compaction-debt); nil in a dry run and in runs recorded before it.
	Debt *activities.Debt `json:",omitempty"`
}

// StoreOptimizerWorkflow is one run over every topic that needs optimizing: EnqueueTopics (once
// per run), then pages of the queue in topic ID order, one OptimizeTopicWorkflow child per topic
// with at most MaxConcurrentTopics in flight. Once a page's children have all finished, a full page
// continues as new with the run's state (so history stays bounded for any number of topics) and a
// short page ends the run.
//
// Children get the workflow ID TopicWorkflowID(task queue, locator), the search attribute
// TopicLocatorSearchAttribute (the server must have it registered, or child starts fail the run's
// workflow tasks) and the static summary "optimize <locator>". A topic whose child
// cannot start because another run is optimizing it is counted as skipped; a failed topic is
// counted and recorded, and the run goes on — unless StoreFaultLimit topics in a row fail with
// the same store fault: then it starts no further topic, waits for those in flight and ends
// with StoreFault set (see StoreOptimizerResult). The run fails only when EnqueueTopics or
// ListQueuedTopics fail after their retries; canceling it cancels the children, which release their
// leases.
//
// With DryRun it only plans: PlanTopics page by page (PageSize topics each), no queue row, no
// child, and the plans in StoreOptimizerResult.DryRun; it continues as new like a real run, the
// report so far carried in RunState.Result.DryRun.
//
// Queries: ProgressQuery returns a Progress, which the current details (markdown, the Web UI's
// "Current Details") show too, updated whenever a child starts or finishes. Activities carry
// summaries ("enqueue topics for full compaction …").
func StoreOptimizerWorkflow(ctx workflow.Context, in StoreOptimizerInput) (StoreOptimizerResult, error) {
	r := &storeRun{in: in}
	if err := r.setup(ctx); err != nil {
		return StoreOptimizerResult{}, err
	}
	return r.run(ctx)
}

// storeRun is the state of one StoreOptimizerWorkflow execution.
type storeRun struct {
	in       StoreOptimizerInput
	state    RunState
	inFlight []string // locators of the children in flight, in start order
	logger   log.Logger
	shown    Progress // the progress last shown (showProgress), which the query answers
	ended    bool     // nothing left to start or wait for
	// batches: tiny topics are optimized in batches (executions since smallTopicBatchesChange);
	// batch holds the tiny topics listed and not started yet.
	batches bool
	batch   []activities.QueuedTopic
}

func (r *storeRun) setup(ctx workflow.Context) error {
	if _, err := policy.Parse(r.in.Policy); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeInput, nil)
	}
	if _, err := policy.ParseScope(r.in.Scope); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeInput, nil)
	}
	if r.in.MinChunks < 0 {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("MinChunks %d must not be negative", r.in.MinChunks), activities.ErrTypeInput, nil)
	}
	if r.in.MaxConcurrentTopics <= 0 {
		r.in.MaxConcurrentTopics = DefaultMaxConcurrentTopics
	}
	if r.in.PageSize <= 0 {
		r.in.PageSize = DefaultPageSize
	}
	r.in.PageSize = min(r.in.PageSize, MaxPageSize)
	if r.in.State != nil {
		r.state = *r.in.State
		r.state.Result.Failures = slices.Clone(r.state.Result.Failures)
	}
	r.in.State = nil
	r.logger = log.With(workflow.GetLogger(ctx), "AfterTopicID", r.state.AfterTopicID)
	if r.state.StartedAt.IsZero() {
		r.state.StartedAt = workflow.Now(ctx)
	}
	r.showProgress(ctx)
	return workflow.SetQueryHandler(ctx, ProgressQuery, func() (Progress, error) { return r.shown, nil })
}

func (r *storeRun) run(ctx workflow.Context) (StoreOptimizerResult, error) {
	if r.in.DryRun {
		return r.dryRun(ctx)
	}
	if !r.state.Enqueued {
		if err := r.enqueue(ctx); err != nil {
			return r.state.Result, err
		}
	}
	workflow.GetVersion(ctx, slidingWindowChange, 1, 1)
	more, err := r.optimizeQueue(ctx)
	if err != nil {
		return r.state.Result, err
	}
	if done, err := r.stopped(ctx); done {
		return r.state.Result, err
	}
	if more {
		return StoreOptimizerResult{}, r.continueAsNew(ctx)
	}
	r.endProgress(ctx)
	r.logSummary("Run finished")
	return r.state.Result, nil
}

// stopped ends the progress and logs the summary when the run was canceled (the error) or
// stopped by a store fault.
func (r *storeRun) stopped(ctx workflow.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		r.endProgress(ctx)
		r.logSummary("Run canceled")
		return true, err
	}
	if r.state.Result.StoreFault != "" {
		r.endProgress(ctx)
		r.logSummary("Run stopped by a store fault")
		return true, nil
	}
	return false, nil
}

// continueAsNew returns the error that continues the run as new with its state.
func (r *storeRun) continueAsNew(ctx workflow.Context) error {
	r.logger.Info("Continuing as new", "NextAfterTopicID", r.state.AfterTopicID,
		"Optimized", r.state.Result.Optimized, "Skipped", r.state.Result.Skipped,
		"Failed", r.state.Result.Failed, "HistoryLength", workflow.GetInfo(ctx).GetCurrentHistoryLength())
	next := r.in
	next.State = &r.state
	return workflow.NewContinueAsNewError(ctx, StoreOptimizerWorkflow, next)
}

// optimizeQueue optimizes the queue page after page through one window of topics in flight
// (windows): the next page is listed once every topic of the current one has started, so a slow
// topic holds one slot of the window and nothing else. Once the history holds
// ContinueAsNewEvents events (or the server suggests it) no further page is listed; it returns
// after every child started has finished, with more set when the queue may hold further topics
// (the run continues as new from the cursor then).
func (r *storeRun) optimizeQueue(ctx workflow.Context) (more bool, err error) {
	workflow.GetVersion(ctx, smallTopicBatchesChange, 1, 1)
	r.batches = r.in.BatchTopics != 1
	w := r.newWindows(ctx)
	defer w.wait()
	for {
		page, err := r.listPage(ctx)
		if err != nil {
			return false, err
		}
		r.startTopics(ctx, w, page)
		r.flushBatch(ctx, w)
		if len(page) > 0 {
			r.state.AfterTopicID, r.state.AfterDebt = page[len(page)-1].TopicID, page[len(page)-1].Debt
		}
		if len(page) < r.in.PageSize || ctx.Err() != nil || r.state.Result.StoreFault != "" {
			return false, nil
		}
		if r.historyFull(ctx) {
			return true, nil
		}
	}
}

// historyFull reports whether this execution's history is long enough to continue as new.
func (r *storeRun) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	limit := r.in.ContinueAsNewEvents
	if limit <= 0 {
		limit = DefaultContinueAsNewEvents
	}
	return info.GetCurrentHistoryLength() >= limit || info.GetContinueAsNewSuggested()
}

// enqueue queues every topic that needs optimizing; it runs once per run.
func (r *storeRun) enqueue(ctx workflow.Context) error {
	var res activities.EnqueueTopicsResult
	err := workflow.ExecuteActivity(enqueueSummary(withCatalogOptions(ctx), r.in), a.EnqueueTopics, activities.EnqueueTopicsInput{
		Policy: r.in.Policy, MinChunks: r.in.MinChunks, MaxChunkSizeBytes: r.in.MaxChunkSizeBytes, Scope: r.in.Scope,
	}).Get(ctx, &res)
	if err != nil {
		return err
	}
	r.state.Enqueued = true
	if r.policy() == string(policy.Auto) {
		r.state.DebtFirst = workflow.GetVersion(ctx, debtFirstChange, workflow.DefaultVersion, 1) == 1
	}
	r.state.Result.Quarantined, r.state.Result.QuarantinedTopics = res.Quarantined, res.QuarantinedTopics
	r.state.Result.Debt = res.Debt
	r.runTotals(res)
	r.showProgress(ctx)
	r.logger.Info("Topics enqueued", "Added", res.Added, "Queued", res.Queued, "Quarantined", res.Quarantined)
	return nil
}

// listPage returns the next page of the queue, after the cursor.
func (r *storeRun) listPage(ctx workflow.Context) ([]activities.QueuedTopic, error) {
	var res activities.ListQueuedTopicsResult
	err := workflow.ExecuteActivity(listSummary(withCatalogOptions(ctx), r.state.AfterTopicID, r.in.PageSize), a.ListQueuedTopics, activities.ListQueuedTopicsInput{
		AfterTopicID: r.state.AfterTopicID,
		Limit:        r.in.PageSize,
		Policy:       r.policy(),
		Scope:        r.in.Scope,
		DebtFirst:    r.state.DebtFirst,
		AfterDebt:    r.state.AfterDebt,
	}).Get(ctx, &res)
	return res.Topics, err
}

// smallTopic reports whether a queued topic is small: its estimated input fits one output chunk.
func (r *storeRun) smallTopic(t activities.QueuedTopic) bool {
	limit := r.in.MaxChunkSizeBytes
	if limit <= 0 {
		limit = DefaultMaxChunkSizeBytes
	}
	return t.Bytes <= limit
}

// newWindows returns the run's windows: MaxConcurrentTopics large topics and
// MaxConcurrentSmallTopics small ones in flight.
func (r *storeRun) newWindows(ctx workflow.Context) *windows {
	small := r.in.MaxConcurrentSmallTopics
	if small <= 0 {
		small = DefaultMaxConcurrentSmallTopics
	}
	return newWindows(ctx, r.in.MaxConcurrentTopics, small)
}

// startTopics starts one child per topic of a page, each once its window has room, and returns
// once all of them have started (or a cancel or a store fault stopped the run). The children's
// outcomes are recorded as they finish, also while later pages run.
func (r *storeRun) startTopics(ctx workflow.Context, w *windows, topics []activities.QueuedTopic) {
	for i, topic := range topics {
		if r.batches && r.tinyTopic(topic) {
			r.batch = append(r.batch, topic)
			if len(r.batch) >= r.batchTopics() {
				r.flushBatch(ctx, w)
			}
			continue
		}
		small := r.smallTopic(topic)
		w.ready(small)
		if !r.mayStart(ctx, len(topics)-i) {
			return
		}
		w.add(small, r.startTopic(ctx, topic), r.topicDone(ctx, topic))
	}
}

// mayStart reports whether the next topic may start: not after a cancel, nor after a store
// fault (the left topics of the page are counted as not attempted then).
func (r *storeRun) mayStart(ctx workflow.Context, left int) bool {
	if ctx.Err() != nil {
		return false
	}
	if r.state.Result.StoreFault != "" {
		r.state.Result.NotAttempted += left
		return false
	}
	return true
}

// startTopic starts the child of one topic and shows it in flight.
func (r *storeRun) startTopic(ctx workflow.Context, topic activities.QueuedTopic) workflow.Future {
	r.inFlight = append(r.inFlight, topic.Locator)
	r.showProgress(ctx)
	id := r.topicWorkflowID(ctx, topic.Locator)
	return workflow.ExecuteChildWorkflow(topicContext(ctx, id, topic.Locator), OptimizeTopicWorkflow,
		OptimizeTopicInput{
			TopicID:           topic.TopicID,
			Locator:           topic.Locator,
			MaxChunkSizeBytes: r.in.MaxChunkSizeBytes,
			TopicParallelism:  r.in.TopicParallelism,
			HeartbeatTimeout:  r.in.HeartbeatTimeout,
			FromRun:           true,
			Policy:            r.in.Policy,
			MinChunks:         r.in.MinChunks,
		})
}

// topicDone returns the callback that records a topic's child once it finished.
func (r *storeRun) topicDone(ctx workflow.Context, topic activities.QueuedTopic) func(workflow.Future) {
	return func(f workflow.Future) {
		r.inFlight = removeFirst(r.inFlight, topic.Locator)
		var res OptimizeTopicResult
		r.record(ctx, topic.Locator, res, f.Get(ctx, &res))
		r.topicFinished(ctx, topic)
	}
}

// topicWorkflowID returns the workflow ID of a topic's child: TopicWorkflowID with the run's
// task queue (the installation's: its workers poll it and the children run on it), or, in
// executions recorded before topicIDTaskQueueChange, LegacyTopicWorkflowID.
func (r *storeRun) topicWorkflowID(ctx workflow.Context, locator string) string {
	if workflow.GetVersion(ctx, topicIDTaskQueueChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return LegacyTopicWorkflowID(locator)
	}
	return TopicWorkflowID(workflow.GetInfo(ctx).TaskQueueName, locator)
}

// topicContext sets the child workflow options of one topic's OptimizeTopicWorkflow.
func topicContext(ctx workflow.Context, id, locator string) workflow.Context {
	return workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: id,
		// A topic optimized by an earlier run may be optimized again; a running one is refused.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		// A canceled run waits for its children to release their leases.
		WaitForCancellation:   true,
		TypedSearchAttributes: temporal.NewSearchAttributes(TopicLocatorKey.ValueSet(topicSearchValue(locator))),
		StaticSummary:         topicSummary(locator),
	})
}

// record counts the outcome of one child.
func (r *storeRun) record(ctx workflow.Context, locator string, res OptimizeTopicResult, err error) {
	total := &r.state.Result
	switch {
	case err == nil && res.Quarantined != nil:
		total.Quarantined++
		if len(total.QuarantinedTopics) < activities.MaxReportedQuarantined {
			total.QuarantinedTopics = append(total.QuarantinedTopics, *res.Quarantined)
		}
		r.logger.Warn("Topic skipped: quarantined by another run since this run listed it", "TopicLocator", locator)
	case err == nil && res.Skipped:
		total.Skipped++
		r.logger.Info("Topic skipped: optimized by another run", "TopicLocator", locator)
	case err == nil && res.NothingToDo:
		total.NothingToDo++
	case err == nil:
		r.state.StoreFaultStreak, r.state.StoreFaultKey = 0, ""
		total.Optimized++
		switch res.Policy {
		case string(policy.Tiered):
			total.Tiered++
		case string(policy.Leveled):
			total.Leveled++
		}
		total.Rows += res.Rows
		total.InputChunks += res.InputChunks
		total.OutputChunks += res.OutputChunks
		total.InputBytes += res.InputBytes
		total.OutputBytes += res.OutputBytes
	case isAlreadyStarted(err):
		total.Skipped++
		r.logger.Info("Topic skipped: another run is optimizing it", "TopicLocator", locator)
	case ctx.Err() != nil && temporal.IsCanceledError(err):
		// The run itself was canceled; the topic stays queued for the next run.
	default:
		total.Failed++
		if len(total.Failures) < MaxRecordedFailures {
			total.Failures = append(total.Failures, TopicFailure{Locator: locator, Error: childFailureMessage(err)})
		}
		r.countStoreFault(ctx, locator, err)
	}
}

// countStoreFault extends or resets the run's store-fault streak with the failure err of one
// topic, and once StoreFaultLimit topics in a row failed with the same store fault, sets
// StoreFault: no further topic starts.
func (r *storeRun) countStoreFault(ctx workflow.Context, locator string, err error) {
	fault, msg, ok := storeFaultOf(err)
	if !ok {
		r.state.StoreFaultStreak, r.state.StoreFaultKey = 0, ""
		return
	}
	if key := fault.Store + " " + fault.Cause; key != r.state.StoreFaultKey {
		r.state.StoreFaultStreak, r.state.StoreFaultKey = 0, key
	}
	r.state.StoreFaultStreak++
	if r.state.StoreFaultStreak < StoreFaultLimit || r.state.Result.StoreFault != "" {
		return
	}
	workflow.GetVersion(ctx, storeFaultStopChange, 1, 1)
	r.state.Result.StoreFault = strings.TrimPrefix(msg, "topic "+locator+": ")
	r.logger.Error("Store fault: the last topics all failed the same way; no further topic is started",
		"Topics", r.state.StoreFaultStreak, "StoreFault", r.state.Result.StoreFault)
}

// logSummary logs the run's counts and every recorded failure.
func (r *storeRun) logSummary(msg string) {
	res := r.state.Result
	r.logger.Info(msg, "Optimized", res.Optimized, "Skipped", res.Skipped, "Failed", res.Failed,
		"Rows", res.Rows, "InputChunks", res.InputChunks, "OutputChunks", res.OutputChunks,
		"InputBytes", res.InputBytes, "OutputBytes", res.OutputBytes)
	if res.StoreFault != "" {
		r.logger.Error("Stopped by a store fault: topics not attempted stay queued", "StoreFault", res.StoreFault,
			"NotAttempted", res.NotAttempted)
	}
	for _, f := range res.Failures {
		r.logger.Warn("Topic failed", "TopicLocator", f.Locator, "Error", f.Error)
	}
	if more := res.Failed - len(res.Failures); more > 0 {
		r.logger.Warn("More topics failed than are recorded", "NotRecorded", more)
	}
	for _, q := range res.QuarantinedTopics {
		r.logger.Warn("Topic quarantined, not optimized", "TopicLocator", q.Locator, "Reason", q.Reason,
			"Failures", q.Failures)
	}
}

// policy returns the run's policy as queue rows record it (auto stays auto: resolved per topic).
func (r *storeRun) policy() string {
	p, _ := policy.Parse(r.in.Policy) // checked in setup
	return string(p)
}

// removeFirst removes the first occurrence of s from list.
func removeFirst(list []string, s string) []string {
	if i := slices.Index(list, s); i >= 0 {
		return slices.Delete(list, i, i+1)
	}
	return list
}
