package workflows

import "go.temporal.io/sdk/workflow"

// window keeps at most limit futures in flight: a sliding window over a list of activities or
// child workflows. It is deterministic: futures are handled in the order the SDK reports them
// ready, which replays identically.
type window struct {
	ctx      workflow.Context
	limit    int
	inFlight int
	sel      workflow.Selector
}

// newWindow returns a window of limit futures (at least one).
func newWindow(ctx workflow.Context, limit int) *window {
	return &window{ctx: ctx, limit: max(limit, 1), sel: workflow.NewSelector(ctx)}
}

// ready waits until fewer than limit futures are in flight; callbacks of the futures that became
// ready meanwhile have run when it returns.
func (w *window) ready() {
	for w.inFlight >= w.limit {
		w.sel.Select(w.ctx)
	}
}

// add tracks a started future; done is called with it once it is ready, from ready or wait. Call
// ready first to stay within the limit.
func (w *window) add(f workflow.Future, done func(workflow.Future)) {
	w.inFlight++
	w.sel.AddFuture(f, func(f workflow.Future) {
		w.inFlight--
		done(f)
	})
}

// wait returns once every future started is ready and its done callback has run.
func (w *window) wait() {
	for w.inFlight > 0 {
		w.sel.Select(w.ctx)
	}
}
