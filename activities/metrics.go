package activities

import (
	"slices"

	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/policy"
)

// Metrics: the activities tell Activities.Metrics how topics end (Lease: skipped; Commit:
// optimized; Release: failed, quarantined, or nothing to do) and what cleanup deleted, each once,
// when the activity succeeds; step durations are timed around the activities by
// metrics.StepTimer. Workflows record nothing (they are replayed).

// recorder returns where the activities record metrics (metrics.Nop when Metrics is nil).
func (a *Activities) recorder() metrics.Recorder {
	if a.Metrics == nil {
		return metrics.Nop{}
	}
	return a.Metrics
}

// policyLabel is the policy label of a topic's metrics: the policy as the inputs and results
// carry it ("" = full, as in histories from before policies).
func policyLabel(p string) string { return policy.Policy(p).Label() }

// recordCommit records a committed optimization. A retried commit that found its own earlier
// success (AlreadyCommitted) was counted by the attempt that committed.
func (a *Activities) recordCommit(policy string, res CommitResult) {
	if res.AlreadyCommitted {
		return
	}
	a.recorder().TopicOptimized(metrics.Optimization{Policy: policyLabel(policy), InputChunks: res.InputChunks,
		OutputChunks: res.OutputChunks, Rows: res.Rows, InputBytes: res.InputBytes, OutputBytes: res.OutputBytes})
}

// recordRelease records how an optimization that Release ended went: nothing to do (a skip), or
// a failure by error type, and whether it quarantined the topic.
func (a *Activities) recordRelease(in ReleaseInput, res ReleaseResult) {
	policy := policyLabel(in.Policy)
	if in.NothingToDo {
		a.recorder().TopicSkipped(policy, metrics.SkipNothingToDo)
		return
	}
	a.recorder().TopicFailed(policy, failureType(in))
	if res.Quarantined {
		a.recorder().TopicQuarantined(policy)
	}
}

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
