package activities

import (
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/metrics"
)

// metricsLog is a Recorder that writes down every call.
type metricsLog struct{ calls []string }

func (l *metricsLog) add(s string) { l.calls = append(l.calls, s) }
func (l *metricsLog) TopicOptimized(o metrics.Optimization) {
	l.add("optimized " + o.Policy)
}
func (l *metricsLog) TopicFailed(policy, errorType string) {
	l.add("failed " + policy + " " + errorType)
}
func (l *metricsLog) TopicSkipped(policy, reason string)           { l.add("skipped " + policy + " " + reason) }
func (l *metricsLog) TopicQuarantined(policy string)               { l.add("quarantined " + policy) }
func (l *metricsLog) StepFinished(string, time.Duration, error)    {}
func (l *metricsLog) CleanupDone(kind string, deleted, failed int) {}

// TestReleaseMetrics: how Release tells the metrics how a topic ended, for every kind of end.
func TestReleaseMetrics(t *testing.T) {
	log := &metricsLog{}
	a := &Activities{Metrics: log}
	for _, c := range []struct {
		in   ReleaseInput
		res  ReleaseResult
		want string
	}{
		{ReleaseInput{Policy: "tiered", ErrorType: ErrTypeInput}, ReleaseResult{}, "failed tiered StoreoptInputError"},
		{ReleaseInput{ErrorType: ErrTypeVerification}, ReleaseResult{Quarantined: true}, "failed full StoreoptVerificationError|quarantined full"},
		{ReleaseInput{Policy: "leveled", Canceled: true}, ReleaseResult{}, "failed leveled canceled"},
		{ReleaseInput{ErrorType: "*fmt.wrapError"}, ReleaseResult{}, "failed full other"},
		{ReleaseInput{}, ReleaseResult{}, "failed full other"},
		{ReleaseInput{Policy: "leveled", NothingToDo: true}, ReleaseResult{}, "skipped leveled nothing_to_do"},
	} {
		log.calls = nil
		a.recordRelease(c.in, c.res)
		if got := strings.Join(log.calls, "|"); got != c.want {
			t.Errorf("%+v %+v: recorded %q, want %q", c.in, c.res, got, c.want)
		}
	}
	log.calls = nil
	a.recordCommit("", CommitResult{AlreadyCommitted: true})
	a.recordCommit("tiered", CommitResult{InputChunks: 3})
	if got := strings.Join(log.calls, "|"); got != "optimized tiered" {
		t.Errorf("commits recorded %q: want only the one that committed", got)
	}
	(&Activities{}).recordRelease(ReleaseInput{}, ReleaseResult{}) // no recorder: nothing happens
}
