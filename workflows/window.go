package workflows

import "go.temporal.io/sdk/workflow"

// windows keeps at most limit[k] futures of each kind k in flight (kind 0: large topics, kind 1:
// small ones) with one selector, so that futures of either kind are handled in the order the SDK
// reports them ready while the caller waits for room of one kind: a sliding window over child
// workflows or activities (a topic's WriteChunks groups use one kind only). It is
// deterministic: futures are handled in the order the SDK reports them ready, which replays
// identically.
type windows struct {
	ctx      workflow.Context
	limit    [2]int
	inFlight [2]int
	sel      workflow.Selector
}

// newWindows returns windows of large and small futures (at least one each).
func newWindows(ctx workflow.Context, large, small int) *windows {
	return &windows{ctx: ctx, limit: [2]int{max(large, 1), max(small, 1)}, sel: workflow.NewSelector(ctx)}
}

func kind(small bool) int {
	if small {
		return 1
	}
	return 0
}

// ready waits until fewer than the limit of the kind are in flight; callbacks of the futures
// (of both kinds) that became ready meanwhile have run when it returns.
func (w *windows) ready(small bool) {
	for k := kind(small); w.inFlight[k] >= w.limit[k]; {
		w.sel.Select(w.ctx)
	}
}

// add tracks a started future of a kind; done is called once it is ready, from ready or wait.
func (w *windows) add(small bool, f workflow.Future, done func(workflow.Future)) {
	k := kind(small)
	w.inFlight[k]++
	w.sel.AddFuture(f, func(f workflow.Future) {
		w.inFlight[k]--
		done(f)
	})
}

// wait returns once every future started is ready and its done callback has run.
func (w *windows) wait() {
	for w.inFlight[0]+w.inFlight[1] > 0 {
		w.sel.Select(w.ctx)
	}
}
