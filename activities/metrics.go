package activities

import (
	"context"
	"slices"
	"time"

	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/policy"
)

// Metrics are recorded at one seam, metrics.Observe, never by the activities themselves:
// metrics.Interceptor observes every activity the worker executes, and a batch of tiny topics
// observes each step it runs in-process (inProcess). RecordOutcome reads how a topic ended from
// the activity's input and result. Workflows record nothing (they are replayed).

// RecordOutcome is the metrics.Outcome of storeopt's activities: what an execution's input and
// result say about a topic (Lease: skipped; Commit: optimized; Release: failed, quarantined or
// nothing to do) or about cleanup (what it deleted), each recorded once, when the activity
// succeeds. A Commit whose switch is done is counted even when it returns an error after it (its
// acknowledgement lost); its retry finds it AlreadyCommitted and is not counted again.
func RecordOutcome(rec metrics.Recorder, in, res any, err error) {
	if c, ok := res.(CommitResult); ok && c.NewPrefix != "" && !c.AlreadyCommitted {
		rec.TopicOptimized(metrics.Optimization{Policy: policyLabel(c.Policy), InputChunks: c.InputChunks,
			OutputChunks: c.OutputChunks, Rows: c.Rows, InputBytes: c.InputBytes, OutputBytes: c.OutputBytes})
	}
	if err != nil {
		return
	}
	switch r := res.(type) {
	case LeaseResult:
		switch {
		case r.AlreadyOptimized:
			rec.TopicSkipped(policyLabel(r.Policy), metrics.SkipAlreadyOptimized)
		case r.Quarantined != nil:
			rec.TopicSkipped(policyLabel(r.Policy), metrics.SkipQuarantined)
		case r.Leased:
			rec.TopicSkipped(policyLabel(r.Policy), metrics.SkipLeased)
		}
	case ReleaseResult:
		rin, _ := in.(ReleaseInput)
		pol := policyLabel(rin.Policy)
		if rin.NothingToDo {
			rec.TopicSkipped(pol, metrics.SkipNothingToDo)
			return
		}
		rec.TopicFailed(pol, failureType(rin))
		if r.Quarantined {
			rec.TopicQuarantined(pol)
		}
	case WriteChunksResult:
		if r.CopiedChunks > 0 {
			rec.ChunksWritten(metrics.PathCopy, r.CopiedChunks, r.CopiedArrowBytes)
		}
		if r.PassedChunks > 0 {
			rec.ChunksWritten(metrics.PathPassThrough, r.PassedChunks, r.PassedArrowBytes)
		}
		if n := r.WrittenChunks - r.CopiedChunks - r.PassedChunks; n > 0 {
			rec.ChunksWritten(metrics.PathRewrite, n, r.WrittenArrowBytes-r.CopiedArrowBytes-r.PassedArrowBytes)
		}
	case DeleteMarkedPrefixesResult:
		rec.CleanupDone(metrics.CleanupPrefixes, r.Deleted, r.DeleteFailed)
		rec.CleanupDone(metrics.CleanupObjects, r.DeletedObjects, 0)
	case DeleteTempFilesResult:
		rec.CleanupDone(metrics.CleanupTempFiles, r.Deleted, r.Failed)
	case AbortUploadsResult:
		rec.CleanupDone(metrics.CleanupAbortedUploads, r.Aborted, r.Failed)
	case DeleteReplacedObjectsResult:
		rec.CleanupDone(metrics.CleanupReplacedObjects, r.Deleted, r.Failed)
	}
}

// inProcess runs activity f (registered as activityType) in-process, as a batch runs the steps
// of its topics, and observes it as metrics.Interceptor observes the activity when Temporal
// runs it.
func inProcess[In, Res any](ctx context.Context, a *Activities, activityType string,
	f func(context.Context, In) (Res, error), in In) (Res, error) {
	start := time.Now()
	res, err := f(ctx, in)
	metrics.Observe(a.recorder(), RecordOutcome, activityType, in, res, err, time.Since(start))
	return res, err
}

// recorder returns where in-process steps record metrics (metrics.Nop when Metrics is nil).
func (a *Activities) recorder() metrics.Recorder {
	if a.Metrics == nil {
		return metrics.Nop{}
	}
	return a.Metrics
}

// policyLabel is the policy label of a topic's metrics: the policy as the inputs and results
// carry it ("" = full, as in histories from before policies).
func policyLabel(p string) string { return policy.Policy(p).Label() }

// failureType is the error_type label of a failure Release is told about: a storeopt error type,
// metrics.ErrorCanceled, or metrics.ErrorOther (retryable errors after the last attempt,
// timeouts, histories from before Canceled).
func failureType(in ReleaseInput) string {
	switch {
	case in.Canceled:
		return metrics.ErrorCanceled
	case slices.Contains(NonRetryableErrorTypes, in.ErrorType):
		return in.ErrorType
	default:
		return metrics.ErrorOther
	}
}
