package activities

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

// fakeSteps records the steps RunTopicPipeline calls, with what each returns set by the test.
type fakeSteps struct {
	calls []string

	lease          LeaseResult
	leaseErr       error
	committed      bool // CommittedByThisRun's answer
	committedErr   error
	plan           ReadSortResult
	readSortErr    error
	writeStep      string
	writeErr       error
	commit         CommitResult
	commitErr      error
	nothingToDoErr error
	releaseErr     error
	giveBackErr    error
	canceled       bool

	failure StepFailure // what Release or GiveBack received
}

func (f *fakeSteps) Lease() (LeaseResult, error) {
	f.calls = append(f.calls, "lease")
	return f.lease, f.leaseErr
}

func (f *fakeSteps) CommittedByThisRun() (CommitResult, string, bool, error) {
	f.calls = append(f.calls, "committed-by-this-run")
	if !f.committed {
		return CommitResult{}, "", false, f.committedErr
	}
	return CommitResult{AlreadyCommitted: true, OutputChunks: 1}, "tiered", true, f.committedErr
}

func (f *fakeSteps) ReadSort(policy string) (ReadSortResult, error) {
	f.calls = append(f.calls, "read-sort "+policy)
	return f.plan, f.readSortErr
}

func (f *fakeSteps) WriteChunks(groups int) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("write-chunks %d", groups))
	return f.writeStep, f.writeErr
}

func (f *fakeSteps) Commit() (CommitResult, error) {
	f.calls = append(f.calls, "commit")
	return f.commit, f.commitErr
}

func (f *fakeSteps) GiveBackNothingToDo(policy string) error {
	f.calls = append(f.calls, "give-back-nothing-to-do "+policy)
	return f.nothingToDoErr
}

func (f *fakeSteps) Release(s StepFailure) error {
	f.calls = append(f.calls, "release")
	f.failure = s
	return f.releaseErr
}

func (f *fakeSteps) GiveBack(s StepFailure) error {
	f.calls = append(f.calls, "give-back")
	f.failure = s
	return f.giveBackErr
}

func (f *fakeSteps) Canceled() bool { return f.canceled }

// TestRunTopicPipeline runs the shared pipeline of the topic workflow and the batch over fake
// steps: every decision, the steps it calls in order, and which errors fail the batch.
func TestRunTopicPipeline(t *testing.T) {
	leased := LeaseResult{Policy: "full", FreshPrefix: "tp_new"}
	retryable := temporal.NewApplicationError("catalog: connection refused", "PgConnectError")
	input := temporal.NewNonRetryableApplicationError("chunk 00003: no column timestamp_ns", ErrTypeInput, nil)
	lost := temporal.NewNonRetryableApplicationError("lease taken over", ErrTypeLeaseLost, nil)
	plain := errors.New("connection reset")
	batchDown := errors.New("catalog unreachable")
	full := []string{"lease", "read-sort full", "write-chunks 2", "commit"}

	tests := []struct {
		name     string
		mode     PipelineMode
		steps    fakeSteps
		want     PipelineDecision
		calls    []string
		step     string // the failed step
		err      error  // the error that fails the batch
		canceled bool   // the failure released as canceled
	}{
		{name: "committed", steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2}, commit: CommitResult{OutputChunks: 2}},
			want: DecisionCommitted, calls: full},
		{name: "already optimized by another run",
			steps: fakeSteps{lease: LeaseResult{AlreadyOptimized: true, Policy: "full"}},
			want:  DecisionAlreadyOptimized, calls: []string{"lease", "committed-by-this-run"}},
		{name: "already optimized by this run (a retried batch)", mode: BatchSteps,
			steps: fakeSteps{lease: LeaseResult{AlreadyOptimized: true, Policy: "full"}, committed: true},
			want:  DecisionCommitted, calls: []string{"lease", "committed-by-this-run"}},
		{name: "commit lookup fails the batch", mode: BatchSteps,
			steps: fakeSteps{lease: LeaseResult{AlreadyOptimized: true}, committedErr: batchDown},
			want:  DecisionCommitted, calls: []string{"lease", "committed-by-this-run"}, err: batchDown},
		{name: "leased by a live run", steps: fakeSteps{lease: LeaseResult{Leased: true, Holder: &LeaseHolder{WorkflowID: "other"}}},
			want: DecisionLeasedByLiveRun, calls: []string{"lease"}},
		{name: "quarantined", mode: BatchSteps, steps: fakeSteps{lease: LeaseResult{Quarantined: &QuarantinedTopic{Failures: 3}}},
			want: DecisionQuarantined, calls: []string{"lease"}},
		{name: "nothing to do", steps: fakeSteps{lease: leased, plan: ReadSortResult{NothingToDo: true}},
			want: DecisionNothingToDo, calls: []string{"lease", "read-sort full", "give-back-nothing-to-do full"}},
		{name: "nothing to do, give-back fails the batch", mode: BatchSteps,
			steps: fakeSteps{lease: leased, plan: ReadSortResult{NothingToDo: true}, nothingToDoErr: batchDown},
			want:  DecisionNothingToDo, calls: []string{"lease", "read-sort full", "give-back-nothing-to-do full"}, err: batchDown},

		// A topic workflow: every step error (Temporal retried the activity) fails the topic.
		{name: "workflow: lease fails", steps: fakeSteps{leaseErr: retryable},
			want: DecisionFailed, calls: []string{"lease", "release"}, step: "lease"},
		{name: "workflow: read-sort input error", steps: fakeSteps{lease: leased, readSortErr: input},
			want: DecisionFailed, calls: []string{"lease", "read-sort full", "release"}, step: "read-sort"},
		{name: "workflow: write-chunks retryable error spent", steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2},
			writeStep: "write-chunks group 1", writeErr: retryable},
			want: DecisionFailed, calls: []string{"lease", "read-sort full", "write-chunks 2", "release"}, step: "write-chunks group 1"},
		{name: "workflow: lease lost fails the topic", steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2}, commitErr: lost},
			want: DecisionFailed, calls: append(slices.Clone(full), "release"), step: "commit"},
		{name: "workflow: canceled", steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2},
			writeStep: "write-chunks", writeErr: temporal.NewCanceledError(), canceled: true},
			want: DecisionCanceled, calls: []string{"lease", "read-sort full", "write-chunks 2", "release"}, step: "write-chunks",
			canceled: true},

		// A batch: a retryable error gives the topic back, a non-retryable one fails it.
		{name: "batch: retryable write error gives back", mode: BatchSteps, steps: fakeSteps{lease: leased,
			plan: ReadSortResult{Groups: 2}, writeStep: "write-chunks group 0", writeErr: retryable},
			want: DecisionGivenBack, calls: []string{"lease", "read-sort full", "write-chunks 2", "give-back"}, step: "write-chunks group 0"},
		{name: "batch: an error that is no application error gives back", mode: BatchSteps,
			steps: fakeSteps{lease: leased, readSortErr: plain},
			want:  DecisionGivenBack, calls: []string{"lease", "read-sort full", "give-back"}, step: "read-sort"},
		{name: "batch: a retryable error of a non-retryable type fails", mode: BatchSteps,
			steps: fakeSteps{lease: leased, readSortErr: temporal.NewApplicationError("bad chunk", ErrTypeInput)},
			want:  DecisionFailed, calls: []string{"lease", "read-sort full", "release"}, step: "read-sort"},
		{name: "batch: give-back fails the batch", mode: BatchSteps,
			steps: fakeSteps{leaseErr: retryable, giveBackErr: retryable},
			want:  DecisionGivenBack, calls: []string{"lease", "give-back"}, step: "lease", err: retryable},
		{name: "batch: input error releases with the failure", mode: BatchSteps,
			steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 1}, writeStep: "write-chunks group 0", writeErr: input},
			want:  DecisionFailed, calls: []string{"lease", "read-sort full", "write-chunks 1", "release"}, step: "write-chunks group 0"},
		{name: "batch: release fails the batch", mode: BatchSteps,
			steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2}, commitErr: input, releaseErr: batchDown},
			want:  DecisionFailed, calls: append(slices.Clone(full), "release"), step: "commit", err: batchDown},
		{name: "batch: lease lost is a skip", mode: BatchSteps,
			steps: fakeSteps{lease: leased, plan: ReadSortResult{Groups: 2}, commitErr: lost},
			want:  DecisionLeaseLost, calls: full, step: "commit"},
		{name: "batch: canceled releases, its release error ignored", mode: BatchSteps,
			steps: fakeSteps{lease: leased, readSortErr: retryable, canceled: true, releaseErr: batchDown},
			want:  DecisionCanceled, calls: []string{"lease", "read-sort full", "release"}, step: "read-sort", canceled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.steps
			res, err := RunTopicPipeline(&s, tc.mode, "auto")
			if !slices.Equal(s.calls, tc.calls) {
				t.Errorf("steps:\n  %s\nwant:\n  %s", strings.Join(s.calls, "\n  "), strings.Join(tc.calls, "\n  "))
			}
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if err != nil {
				return // the batch fails: the result does not matter
			}
			if res.Decision != tc.want {
				t.Errorf("decision %s, want %s", res.Decision, tc.want)
			}
			if res.Step != tc.step {
				t.Errorf("failed step %q, want %q", res.Step, tc.step)
			}
			released := slices.Contains(s.calls, "release") || slices.Contains(s.calls, "give-back")
			if released {
				if s.failure.Step != tc.step || s.failure.Canceled != tc.canceled || s.failure.Err == nil {
					t.Errorf("released with %+v, want step %q canceled %v", s.failure, tc.step, tc.canceled)
				}
				if want := "full"; tc.step != "lease" && s.failure.Policy != want {
					t.Errorf("released with policy %q, want the lease's %q", s.failure.Policy, want)
				}
				if tc.step == "lease" && s.failure.Policy != "auto" {
					t.Errorf("released with policy %q before a lease, want the one asked for (auto)", s.failure.Policy)
				}
			}
			switch res.Decision {
			case DecisionCommitted:
				if res.Commit.OutputChunks == 0 {
					t.Errorf("committed without the commit's result: %+v", res.Commit)
				}
				if tc.steps.committed && (res.Policy != "tiered" || !res.Commit.AlreadyCommitted) {
					t.Errorf("this run's earlier commit reported as %+v (policy %q)", res.Commit, res.Policy)
				}
			case DecisionQuarantined:
				if res.Lease.Quarantined == nil {
					t.Error("quarantined without the quarantine")
				}
			}
		})
	}
}
