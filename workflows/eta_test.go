package workflows

import (
	"testing"
	"time"
)

// TestRunETAWaitsForSignal replays the progress of a run the new-user trial saw: four topics in
// flight at once, a small GPS topic (about 1% of the queue's bytes) finishing first after 1 s,
// the whole run ending after 4 s. The old estimate (the remaining bytes at the finished bytes'
// rate) gave 99 s then; the run has no ETA until 5% of its bytes are finished, and
// then one of the order of the run.
func TestRunETAWaitsForSignal(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &storeRun{inFlight: []string{"a", "b", "c", "d"}}
	r.state.StartedAt = start
	r.state.Queued, r.state.QueuedBytes = 4, 400_000_000
	if p := r.progressAt(start.Add(500 * time.Millisecond)); p.ETASeconds != nil {
		t.Errorf("ETA before anything finished: %v s", *p.ETASeconds)
	}
	// The GPS topic: 4 MB of 400 MB after 1 s.
	r.state.Finished, r.state.FinishedBytes = 1, 4_000_000
	if p := r.progressAt(start.Add(time.Second)); p.ETASeconds != nil {
		t.Errorf("ETA after 1%% of the bytes finished: %.0f s (the run ends after 4 s)", *p.ETASeconds)
	}
	// A large topic: 200 MB finished after 3 s; the rest ends after 4 s.
	r.state.Finished, r.state.FinishedBytes = 2, 204_000_000
	p := r.progressAt(start.Add(3 * time.Second))
	if p.ETASeconds == nil || *p.ETASeconds <= 0 || *p.ETASeconds > 10 {
		t.Errorf("ETA after 51%% of the bytes finished in 3 s: %v, want a few seconds", p.ETASeconds)
	}
	// Without byte estimates: the topics' pace, after 5% of the topics.
	q := &storeRun{}
	q.state.StartedAt, q.state.Queued = start, 100
	q.state.Finished = 4
	if p := q.progressAt(start.Add(time.Second)); p.ETASeconds != nil {
		t.Errorf("ETA after 4 of 100 topics: %v s", *p.ETASeconds)
	}
	q.state.Finished = 5
	if p := q.progressAt(start.Add(time.Second)); p.ETASeconds == nil || *p.ETASeconds != 19 {
		t.Errorf("ETA after 5 of 100 topics in 1 s: %v, want 19 s", p.ETASeconds)
	}
	r.ended = true
	if p := r.progressAt(start.Add(4 * time.Second)); p.ETASeconds == nil || *p.ETASeconds != 0 {
		t.Errorf("ETA of an ended run: %v, want 0", p.ETASeconds)
	}
}
