// Package activities binds storeopt's data path (plan, merge, Parquet I/O, verification) to the
// catalog, the object store and Temporal heartbeats. Activities are methods on Activities; the
// workflows call them through a typed nil pointer. The owner and fencing token of a lease are
// always the calling workflow's ID and run ID, taken from the activity's own info.
package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.temporal.io/sdk/temporal"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/uploads"
	"github.com/storeopt/storeopt/verify"
)

// Activities holds the clients every activity uses.
type Activities struct {
	Catalog *catalog.Catalog
	Bucket  *blob.Bucket
	// StoreURL is the URL Bucket was opened from: ErrTypeStore errors name it, redacted.
	StoreURL string
	// Uploads lists and aborts the store's unfinished uploads (cleanup); nil when the store
	// keeps none (uploads.Open).
	Uploads uploads.Store
	// MemoryPoolBytes caps the memory all activities of this worker use together, bytes
	// (STOREOPT_MEMORY_POOL_SIZE); 0 = unlimited.
	MemoryPoolBytes int64
	// MemoryPool is the pool itself; when nil it is created on first use from MemoryPoolBytes.
	MemoryPool *mempool.Pool
	// QuarantineAfter is how many consecutive failures of a topic with the same error type and
	// message quarantine it (see QuarantineErrorTypes); 0 = catalog.DefaultQuarantineAfter (3).
	QuarantineAfter int
	// Metrics receives what the steps a batch runs in-process say (see metrics.go); nil = none.
	// The worker's metrics.Interceptor records the activities Temporal runs.
	Metrics metrics.Recorder
	// Runs tells Lease whether the run holding a topic's lease is still open; nil = every holder
	// is taken to be alive, so no lease is ever taken over (tests and tools that call the
	// activities by hand give it a fake that knows their runs).
	Runs Runs

	poolOnce sync.Once
}

// Runs tells whether a workflow run is still open, as Temporal reports it (the worker describes
// the execution; see app.TemporalRuns). Lease asks it before it takes a lease over from another
// run: only a holder that is gone loses its lease (docs/design.md#one-optimization-per-topic).
type Runs interface {
	// RunOpen reports whether run runID of workflow workflowID is still open (running). A run
	// Temporal does not know is gone (false, nil); an error means it could not tell, and the
	// caller retries.
	RunOpen(ctx context.Context, workflowID, runID string) (bool, error)
}

// pool returns the worker's memory pool.
func (a *Activities) pool() *mempool.Pool {
	a.poolOnce.Do(func() {
		if a.MemoryPool == nil {
			a.MemoryPool = mempool.New(a.MemoryPoolBytes)
		}
	})
	return a.MemoryPool
}

func (a *Activities) mem() memory.Allocator { return a.pool().Allocator() }

// logPanic logs the stack of a panic that err carries (recovered by package panics in a goroutine
// of the activity) to the worker log, with the topic; classify reports it without the stack.
func logPanic(ctx context.Context, locator string, err error) {
	if pe, ok := panics.As(err); ok {
		logger(ctx).Error("Internal error: a goroutine of the activity panicked", "topic", locator,
			"where", pe.Where, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
}

// classify turns err into the error an activity returns: store faults no retry can fix (see
// storeFaultOf), panics recovered in the activity's goroutines (internal errors), input faults,
// verification mismatches, lost leases, changed chunk sets and unknown topics are non-retryable
// application errors whose message names the topic; anything else (PostgreSQL, a store or network
// that may come back) is returned for Temporal to retry. Store faults come first: a chunk the
// store refuses to read is not a fault of the chunk.
func (a *Activities) classify(locator string, err error) error {
	if err == nil {
		return nil
	}
	if f, ok := storeFaultOf(err); ok {
		return a.storeError(locator, f, err)
	}
	var mismatch *verify.MismatchError
	errType := ""
	_, panicked := panics.As(err)
	switch {
	case panicked:
		errType = ErrTypeInternal
	case errors.As(err, &mismatch):
		errType = ErrTypeVerification
	case errors.Is(err, catalog.ErrLeaseLost):
		errType = ErrTypeLeaseLost
	case errors.Is(err, catalog.ErrChunkSetChanged):
		errType = ErrTypeChunkSetChanged
	case errors.Is(err, catalog.ErrNotFound):
		errType = ErrTypeNotFound
	case compaction.IsInputFault(err), errors.Is(err, catalog.ErrInvalid), errors.Is(err, plan.ErrNoRows):
		errType = ErrTypeInput
	default:
		return fmt.Errorf("topic %s: %w", locator, err)
	}
	// The message carries the whole cause; attaching the cause too would repeat it in every
	// rendering of the error chain.
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("topic %s: %v", locator, err), errType, nil)
}

// EnqueueTopics rescans the catalog and queues every topic in the run's scope that needs a
// compaction of the run's policy (catalog.Trigger: for full, finalized topics never optimized)
// and is not quarantined; the result also reports the quarantined topics inside the scope. Errors: ErrTypeInput
// for an unknown policy or scope term.
func (a *Activities) EnqueueTopics(ctx context.Context, in EnqueueTopicsInput) (EnqueueTopicsResult, error) {
	tr, err := in.trigger()
	if err != nil {
		return EnqueueTopicsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInput, nil)
	}
	added, err := a.Catalog.EnqueueTopics(ctx, tr)
	if err != nil {
		return EnqueueTopicsResult{}, err
	}
	queued, err := a.Catalog.QueueLength(ctx)
	if err != nil {
		return EnqueueTopicsResult{}, err
	}
	quarantined, listed, err := a.quarantineReport(ctx, tr.Scope)
	if err != nil {
		return EnqueueTopicsResult{}, err
	}
	forRun, forRunBytes, err := a.Catalog.QueueTotals(ctx, tr.Policy, tr.Scope)
	if err != nil {
		return EnqueueTopicsResult{}, err
	}
	debt, err := a.Catalog.DebtTotals(ctx)
	if err != nil {
		return EnqueueTopicsResult{}, err
	}
	logger(ctx).Info("Topics queued", "added", added, "queued", queued, "quarantined", quarantined,
		"for_run", forRun, "for_run_bytes", forRunBytes, "l0_chunks", debt.L0Chunks, "topics_over_trigger", debt.TopicsOverTrigger,
		"oldest_uncompacted", debt.OldestUncompactedAge, "write_amplification", debt.WriteAmplification())
	return EnqueueTopicsResult{Added: added, Queued: queued, Quarantined: quarantined, QuarantinedTopics: listed,
		ForRun: forRun, ForRunBytes: forRunBytes, Debt: DebtOf(debt)}, nil
}

// DebtOf returns the run's view of the catalog's debt.
func DebtOf(d catalog.DebtTotals) *Debt {
	return &Debt{Topics: d.Topics, L0Chunks: d.L0Chunks, L0Bytes: d.L0Bytes, UncompactedChunks: d.UncompactedChunks,
		OldestUncompactedSeconds: d.OldestUncompactedAge.Seconds(), MaxTopicL0Chunks: d.MaxTopicL0Chunks,
		TopicsOverTrigger: d.TopicsOverTrigger, TriggerMinChunks: d.TriggerMinChunks,
		DelayedTopics: d.TopicsByState[catalog.WriteDelay], StoppedTopics: d.TopicsByState[catalog.WriteStop],
		IngestedBytes: d.IngestedBytes, CompactionWrittenBytes: d.CompactionWrittenBytes,
		WriteAmplification: d.WriteAmplification()}
}

// ListQueuedTopics returns one page of the optimization queue in topic ID order, or in order of
// debt (in.DebtFirst).
func (a *Activities) ListQueuedTopics(ctx context.Context, in ListQueuedTopicsInput) (ListQueuedTopicsResult, error) {
	limit := min(max(in.Limit, 1), 1000)
	scope, err := policy.ParseScope(in.Scope)
	if err != nil {
		return ListQueuedTopicsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInput, nil)
	}
	var p policy.Policy
	if in.Policy != "" {
		if p, err = policy.Parse(in.Policy); err != nil {
			return ListQueuedTopicsResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInput, nil)
		}
	}
	var qs []catalog.QueuedTopic
	if in.DebtFirst {
		qs, err = a.Catalog.ListQueuedByDebt(ctx, in.AfterDebt, in.AfterTopicID, limit, p, scope)
	} else {
		qs, err = a.Catalog.ListQueuedFor(ctx, in.AfterTopicID, limit, p, scope)
	}
	if err != nil {
		return ListQueuedTopicsResult{}, err
	}
	out := ListQueuedTopicsResult{Topics: make([]QueuedTopic, len(qs))}
	for i, q := range qs {
		out.Topics[i] = QueuedTopic{TopicID: q.TopicID, Locator: q.Locator, Bytes: q.Bytes, Debt: q.Debt}
	}
	return out, nil
}

// Lease takes the topic's queue row for the calling workflow run (owner = workflow ID, fencing
// token = run ID) with a fresh data prefix; a retry of the same run gets the same lease back.
// The policy auto is resolved for the topic (LeaseResult.Policy). One optimization per topic at a
// time, whoever runs it (docs/design.md#one-optimization-per-topic): a lease another run holds is
// taken over only when that run is gone (its workflow run closed, as Runs reports it), through a
// compare-and-swap on the holder's fencing token, and only the fresh prefix that takeover returned
// from the locked queue row is deleted as the holder's partial output. A holder that is still open
// (or any holder, when Runs is nil) means no lease: the result says Leased, with the Holder, and
// the caller skips the topic. Errors: ErrTypeNotFound when the topic does not exist or, for full,
// is not finalized; ErrTypeInput for an unknown policy; a retryable error when Temporal cannot
// tell whether the holder is open. With SkipIfOptimized, a topic that no longer needs a
// compaction of the policy gets no lease: the result says AlreadyOptimized.
func (a *Activities) Lease(ctx context.Context, in LeaseInput) (LeaseResult, error) {
	owner, token := run(ctx)
	requested, err := policy.Parse(in.Policy)
	if err != nil {
		return LeaseResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInput, nil)
	}
	tr := catalog.Trigger{Policy: requested, MinChunks: in.MinChunks, MaxChunkSizeBytes: in.MaxChunkSizeBytes}
	pol, need, err := a.Catalog.NeedsCompaction(ctx, in.TopicID, tr)
	if err != nil {
		return LeaseResult{}, a.classify(fmt.Sprintf("#%d", in.TopicID), err)
	}
	if in.SkipIfOptimized {
		t, err := a.Catalog.Topic(ctx, in.TopicID)
		if err != nil {
			return LeaseResult{}, a.classify(fmt.Sprintf("#%d", in.TopicID), err)
		}
		queued, err := a.Catalog.IsQueued(ctx, in.TopicID)
		if err != nil {
			return LeaseResult{}, err
		}
		// Whether it is done is the requested policy's rule (Full's: not queued, and optimized).
		rules, _ := policy.Of(requested)
		if rules.AlreadyDone(need, queued, t.OptimizedAt != nil) {
			return LeaseResult{AlreadyOptimized: true, Locator: t.Locator, OldPrefix: t.DataPrefix, Policy: string(pol)}, nil
		}
		rec, err := a.Catalog.FailureOf(ctx, in.TopicID)
		switch {
		case err == nil && rec.QuarantinedAt != nil:
			return LeaseResult{Locator: t.Locator, OldPrefix: t.DataPrefix, Policy: string(pol), Quarantined: &QuarantinedTopic{
				TopicID: rec.TopicID, Locator: rec.Locator, Reason: rec.Reason(), Failures: rec.Failures,
				Since: *rec.QuarantinedAt}}, nil
		case err != nil && !errors.Is(err, catalog.ErrNotFound):
			return LeaseResult{}, err
		}
	}
	l, err := a.acquireLease(ctx, in.TopicID, owner, token, pol, in.SkipIfOptimized)
	var held *catalog.LeasedError
	if errors.Is(err, catalog.ErrNotQueued) {
		// Committed (or released) by another run after the checks above: checked again, under
		// the queue row's lock, so that the topic is not optimized twice.
		t, err := a.Catalog.Topic(ctx, in.TopicID)
		if err != nil {
			return LeaseResult{}, a.classify(fmt.Sprintf("#%d", in.TopicID), err)
		}
		return LeaseResult{AlreadyOptimized: true, Locator: t.Locator, OldPrefix: t.DataPrefix, Policy: string(pol)}, nil
	}
	if errors.As(err, &held) {
		h := held.Holder
		logger(ctx).Info("Topic skipped: leased by a live run", "topic", h.Locator, "holder", h.Owner,
			"holder_run", h.FencingToken)
		return LeaseResult{Leased: true, Holder: &LeaseHolder{WorkflowID: h.Owner, RunID: h.FencingToken},
			Locator: h.Locator, OldPrefix: h.OldPrefix, Policy: string(pol)}, nil
	}
	if err != nil {
		return LeaseResult{}, err
	}
	if err := faults.Hit(ctx, faults.LeaseAfter); err != nil {
		return LeaseResult{}, err
	}
	if l.PreviousFreshPrefix != "" {
		// The catalog no longer names this prefix: a deletion that fails (or a worker that dies
		// here) leaves it to the cleanup routine, which deletes unreferenced prefixes.
		if err := a.deletePartialOutput(ctx, l.Locator, l.PreviousFreshPrefix); err != nil {
			logger(ctx).Warn("Partial output of a closed run left to the cleanup routine", "topic", l.Locator,
				"prefix", l.PreviousFreshPrefix, "error", err)
		}
	}
	return LeaseResult{Locator: l.Locator, OldPrefix: l.OldPrefix, FreshPrefix: l.FreshPrefix, Policy: string(pol)}, nil
}

// maxTakeOverAttempts bounds how often acquireLease decides again when the lease changed hands
// between reading its holder and taking it over.
const maxTakeOverAttempts = 3

// acquireLease takes the topic's lease for the run (owner, token) with a fresh prefix: acquired
// when the queue row is free or already this run's; taken over from a holder whose run is closed
// (catalog.TakeOverLease, which succeeds only while that holder still holds the row, and returns
// its fresh prefix in PreviousFreshPrefix). A holder that is open (or cannot be asked: Runs nil) is
// returned as the catalog's *catalog.LeasedError. With queuedOnly (a run's lease of a topic it
// listed) a topic no longer queued is not queued again: catalog.ErrNotQueued. Other errors are
// classified.
func (a *Activities) acquireLease(ctx context.Context, topicID int64, owner, token string, pol policy.Policy,
	queuedOnly bool) (catalog.Lease, error) {
	where := fmt.Sprintf("#%d", topicID)
	fresh := store.NewPrefix()
	acquire := a.Catalog.AcquireLeaseFor
	if queuedOnly {
		acquire = a.Catalog.AcquireQueuedLease
	}
	for attempt := 1; ; attempt++ {
		l, err := acquire(ctx, topicID, owner, token, fresh, pol)
		var held *catalog.LeasedError
		if errors.Is(err, catalog.ErrNotQueued) {
			return l, err
		}
		if !errors.As(err, &held) {
			return l, a.classify(where, err)
		}
		h := held.Holder
		if a.Runs == nil {
			return catalog.Lease{}, held
		}
		open, err := a.Runs.RunOpen(ctx, h.Owner, h.FencingToken)
		if err != nil {
			return catalog.Lease{}, fmt.Errorf("topic %s: is run %q of workflow %q, which holds the lease, still open: %w",
				h.Locator, h.FencingToken, h.Owner, err)
		}
		if open {
			return catalog.Lease{}, held
		}
		l, err = a.Catalog.TakeOverLease(ctx, topicID, h.FencingToken, owner, token, fresh, pol)
		if errors.Is(err, catalog.ErrLeaseChanged) && attempt < maxTakeOverAttempts {
			continue // committed, released or taken by another run meanwhile: decide again
		}
		if err != nil {
			return catalog.Lease{}, a.classify(h.Locator, err)
		}
		logger(ctx).Info("Lease taken over from a closed run", "topic", l.Locator, "holder", h.Owner,
			"holder_run", h.FencingToken, "holder_prefix", l.PreviousFreshPrefix)
		return l, nil
	}
}

// trigger returns the catalog trigger of the run's input.
func (in EnqueueTopicsInput) trigger() (catalog.Trigger, error) {
	p, err := policy.Parse(in.Policy)
	if err != nil {
		return catalog.Trigger{}, err
	}
	scope, err := policy.ParseScope(in.Scope)
	if err != nil {
		return catalog.Trigger{}, err
	}
	return catalog.Trigger{Policy: p, MinChunks: in.MinChunks, MaxChunkSizeBytes: in.MaxChunkSizeBytes, Scope: scope}, nil
}

// deletePartialOutput deletes the objects a closed run whose lease was taken over wrote under
// prefix (the prefix the takeover returned).
func (a *Activities) deletePartialOutput(ctx context.Context, locator, prefix string) error {
	n, err := store.DeletePrefix(ctx, a.Bucket, prefix)
	if err != nil {
		return a.classify(locator, err)
	}
	logger(ctx).Info("Deleted partial output of an earlier run", "topic", locator, "prefix", prefix, "objects", n)
	return nil
}

// leased loads the topic and checks that the calling run still holds its lease.
func (a *Activities) leased(ctx context.Context, topicID int64) (catalog.Topic, catalog.Lease, string, error) {
	_, token := run(ctx)
	t, err := a.Catalog.Topic(ctx, topicID)
	if err != nil {
		return t, catalog.Lease{}, token, a.classify(fmt.Sprintf("#%d", topicID), err)
	}
	l, err := a.Catalog.LeaseOf(ctx, topicID)
	if errors.Is(err, catalog.ErrNotFound) || (err == nil && l.FencingToken != token) {
		err = fmt.Errorf("%w (run %s)", catalog.ErrLeaseLost, token)
	}
	return t, l, token, a.classify(t.Locator, err)
}

// Release drops the lease if the calling run still holds it and deletes this run's partial
// output (its fresh prefix). A lease already committed or taken over is left alone, so Release
// never deletes a prefix the catalog references. Output the store refuses to delete (a store
// fault no retry can fix) is left to the cleanup routine. A failure whose ErrorType is one of
// QuarantineErrorTypes is counted toward the topic's quarantine (once per run).
func (a *Activities) Release(ctx context.Context, in ReleaseInput) (ReleaseResult, error) {
	_, token := run(ctx)
	if err := faults.Hit(ctx, faults.ReleaseBefore); err != nil {
		return ReleaseResult{}, err
	}
	// The partial output is deleted while the lease is still ours: once the queue row is gone, a
	// retry after a failed deletion would no longer know the prefix and leave the objects behind.
	var res ReleaseResult
	lease, err := a.Catalog.LeaseOf(ctx, in.TopicID)
	switch {
	case err == nil && lease.FencingToken == token && lease.FreshPrefix != "":
		res.DeletedObjects, err = store.DeletePrefix(ctx, a.Bucket, lease.FreshPrefix)
		if _, ok := storeFaultOf(err); ok {
			// No retry can delete it. Once the lease is released nothing references the prefix,
			// and the cleanup routine deletes it after the retention period, once the store
			// lets it.
			logger(ctx).Warn("Partial output left to the cleanup routine: the store refuses to delete it",
				"prefix", lease.FreshPrefix, "error", a.classify(lease.Locator, err))
		} else if err != nil {
			return res, err
		}
	case err != nil && !errors.Is(err, catalog.ErrNotFound):
		return res, err
	}
	if res.Released, _, err = a.Catalog.ReleaseLease(ctx, in.TopicID, token); err != nil {
		return res, err
	}
	if res.Failures, res.Quarantined, err = a.recordFailure(ctx, in, token); err != nil {
		return res, err
	}
	logger(ctx).Info("Lease released", "topicID", in.TopicID, "released", res.Released,
		"deletedObjects", res.DeletedObjects, "reason", in.Reason, "failures", res.Failures,
		"quarantined", res.Quarantined)
	return res, nil
}
