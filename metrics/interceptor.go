package metrics

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
)

// StepTimer returns a worker interceptor that records the duration of every execution of the
// data-path activities (ActivitySteps) in rec.StepFinished, whether it succeeded or not. Other
// activities pass through untouched.
func StepTimer(rec Recorder) interceptor.WorkerInterceptor {
	return &stepTimer{rec: rec}
}

type stepTimer struct {
	interceptor.WorkerInterceptorBase
	rec Recorder
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (t *stepTimer) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &stepTimerActivity{rec: t.rec}
	i.Next = next
	return i
}

type stepTimerActivity struct {
	interceptor.ActivityInboundInterceptorBase
	rec Recorder
}

// ExecuteActivity implements interceptor.ActivityInboundInterceptor.
func (i *stepTimerActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	step, ok := ActivitySteps[activity.GetInfo(ctx).ActivityType.Name]
	if !ok {
		return i.Next.ExecuteActivity(ctx, in)
	}
	start := time.Now()
	res, err := i.Next.ExecuteActivity(ctx, in)
	i.rec.StepFinished(step, time.Since(start), err)
	return res, err
}
