package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// a is the typed nil pointer the workflows call activities through: workflow.ExecuteActivity
// only takes the method's name and signature from it.
var a *activities.Activities

// retryPolicy retries infrastructure faults with exponential backoff (1 s, 2 s, 4 s … at most one
// minute apart) and never retries the activities' non-retryable error types. maxAttempts 0 means
// unlimited (bounded by the schedule-to-close timeout).
func retryPolicy(maxAttempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        maxAttempts,
		NonRetryableErrorTypes: activities.NonRetryableErrorTypes,
	}
}

// withCatalogOptions sets the options of the short catalog activities: EnqueueTopics,
// ListQueuedTopics, Lease and Commit.
func withCatalogOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         retryPolicy(10),
	})
}

// localScheduleToClose bounds a local catalog step with all its attempts: the SDK would
// otherwise end it after one start-to-close timeout, while as an activity it had
// withCatalogOptions' ten attempts of two minutes each (and their backoff).
const localScheduleToClose = 30 * time.Minute

// withLocalOptions returns ctx with local activity options equal to its activity options (the
// start-to-close timeout, retry policy and summary of withCatalogOptions): Lease and Commit run
// as local activities with the same limits as when they were activities.
func withLocalOptions(ctx workflow.Context) workflow.Context {
	opts := workflow.GetActivityOptions(ctx)
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: localScheduleToClose,
		StartToCloseTimeout:    opts.StartToCloseTimeout,
		RetryPolicy:            opts.RetryPolicy,
		Summary:                opts.Summary,
	})
}

// DefaultHeartbeatTimeout is how long ReadSort and WriteChunks may go without a heartbeat before
// Temporal considers their worker lost and retries them elsewhere.
const DefaultHeartbeatTimeout = time.Minute

// withDataOptions sets the options of the long data activities, ReadSort and WriteChunks. They
// heartbeat, so a lost worker is noticed within a minute and the attempt retried elsewhere. A
// canceled workflow waits until they have stopped, so Release never deletes output that is still
// being written.
func withDataOptions(ctx workflow.Context, heartbeatTimeout time.Duration) workflow.Context {
	opts := heartbeating(2*time.Hour, heartbeatTimeout)
	opts.WaitForCancellation = true
	return workflow.WithActivityOptions(ctx, opts)
}

// heartbeating returns the options of a long activity that heartbeats: startToClose, the
// heartbeat timeout (0 = DefaultHeartbeatTimeout), infrastructure faults retried 20 times.
func heartbeating(startToClose, heartbeatTimeout time.Duration) workflow.ActivityOptions {
	if heartbeatTimeout <= 0 {
		heartbeatTimeout = DefaultHeartbeatTimeout
	}
	return workflow.ActivityOptions{StartToCloseTimeout: startToClose, HeartbeatTimeout: heartbeatTimeout,
		RetryPolicy: retryPolicy(20)}
}

// withReleaseOptions sets the options of Release: retried without an attempt limit for ten minutes,
// since a lease left behind keeps the topic from being optimized by the next run.
func withReleaseOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            retryPolicy(0),
	})
}

// withBatchReleaseOptions sets the options of ReleaseSmallTopics, Release for each topic of a
// failed batch: as withReleaseOptions, with time for a batch's topics (it heartbeats per topic).
func withBatchReleaseOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		HeartbeatTimeout:       time.Minute,
		ScheduleToCloseTimeout: 30 * time.Minute,
		RetryPolicy:            retryPolicy(0),
	})
}
