package metrics

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// Outcome reads what one execution of an activity says about topics and cleanup (its input in,
// its result res and error err, as the activity returned them) and records it in rec: a topic
// optimized, failed, skipped or quarantined, objects deleted. Package activities provides the one
// of storeopt's activities (activities.RecordOutcome); a nil Outcome records no outcome.
type Outcome func(rec Recorder, in, res any, err error)

// Observe records one execution of the activity named activityType that took d: its duration by
// step when it is a step of the data path (ActivitySteps), whether it succeeded or not, and what
// outcome reads from its input and result. It is the one place metrics are recorded:
// Interceptor calls it for every activity the worker executes, and a batch of tiny topics for
// every step it runs in-process, so both record alike.
func Observe(rec Recorder, outcome Outcome, activityType string, in, res any, err error, d time.Duration) {
	if step, ok := ActivitySteps[activityType]; ok {
		rec.StepFinished(step, d, err)
	}
	if outcome != nil {
		outcome(rec, in, res, err)
	}
}

// Interceptor returns a worker interceptor that records every activity execution (local ones
// included) with Observe: step durations and outcomes. Workflows record nothing (they are
// replayed).
func Interceptor(rec Recorder, outcome Outcome) interceptor.WorkerInterceptor {
	return &observer{rec: rec, outcome: outcome}
}

type observer struct {
	interceptor.WorkerInterceptorBase
	rec     Recorder
	outcome Outcome
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (o *observer) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &observedActivity{observer: o}
	i.Next = next
	return i
}

type observedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	*observer
}

// ExecuteActivity implements interceptor.ActivityInboundInterceptor.
func (i *observedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	start := time.Now()
	res, err := i.Next.ExecuteActivity(ctx, in)
	var arg any
	if len(in.Args) > 0 {
		arg = in.Args[0] // storeopt's activities take one input struct after the context
	}
	Observe(i.rec, i.outcome, activity.GetInfo(ctx).ActivityType.Name, arg, res, err, time.Since(start))
	return res, err
}
