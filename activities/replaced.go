package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/gcerrors"
)

// DeleteReplacedObjectsInput is the input of DeleteReplacedObjects.
type DeleteReplacedObjectsInput struct {
	// RetentionDuration is how long ago a chunk must have been replaced (by the database clock)
	// for its object to be deleted; 0 = at once. Must not be negative.
	RetentionDuration time.Duration
	PageSize          int // replaced objects per catalog page; 0 = DefaultCleanupPageSize
}

// DeleteReplacedObjectsResult counts the objects of replaced chunks by what became of them.
type DeleteReplacedObjectsResult struct {
	Deleted int      // replaced at least the retention ago: deleted (or already gone)
	Pending int      // replaced more recently: kept for a later pass
	Failed  int      // the store refused to delete them (retried by the next pass)
	Errors  []string // the first MaxCleanupErrors deletion errors, each naming its object
}

// replacedProgress is the heartbeat of DeleteReplacedObjects: the key to resume after.
type replacedProgress struct {
	After  string
	Result DeleteReplacedObjectsResult
}

// DeleteReplacedObjects deletes the objects of chunks that compactions replaced, once they were
// replaced at least RetentionDuration ago (database clock), one by one under a catalog row lock
// (catalog.DeleteReplacedObject: never an object a chunk row names). Tiered and leveled
// compactions of live topics replace chunks inside prefixes that stay referenced (the topic's
// ingestion prefix keeps receiving chunks), so the prefix-level cleanup never deletes those
// objects; readers that listed a chunk just before its replacement have one retention period to
// finish. Catalog errors are returned for Temporal to retry (resuming after the last key done); a
// deletion the store refuses is counted in Failed and the pass goes on. A negative
// RetentionDuration is a non-retryable ErrTypeInput error.
func (a *Activities) DeleteReplacedObjects(ctx context.Context, in DeleteReplacedObjectsInput) (DeleteReplacedObjectsResult, error) {
	if err := a.checkRetention(in.RetentionDuration); err != nil {
		return DeleteReplacedObjectsResult{}, err
	}
	pageSize := cleanupPageSize(in.PageSize)
	var p replacedProgress
	resumeFrom(ctx, &p)
	for {
		due, err := a.Catalog.DueReplacedObjects(ctx, in.RetentionDuration, p.After, pageSize)
		if err != nil {
			return p.Result, err
		}
		for _, obj := range due {
			deleted, err := a.Catalog.DeleteReplacedObject(ctx, obj.ObjectKey, in.RetentionDuration, func(ctx context.Context) error {
				err := a.Bucket.Delete(ctx, obj.ObjectKey)
				if gcerrors.Code(err) == gcerrors.NotFound {
					return nil // deleted with its prefix, or by an earlier attempt
				}
				return err
			})
			switch {
			case err == nil && deleted:
				p.Result.Deleted++
			case err == nil:
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				return p.Result, err
			default:
				p.Result.Failed++
				if len(p.Result.Errors) < MaxCleanupErrors {
					p.Result.Errors = append(p.Result.Errors, fmt.Sprintf("replaced object %s: %v", obj.ObjectKey, err))
				}
				logger(ctx).Warn("Replaced object not deleted", "key", obj.ObjectKey, "error", err)
			}
			p.After = obj.ObjectKey
		}
		heartbeat(ctx, p)
		if len(due) < pageSize {
			break
		}
	}
	pending, err := a.Catalog.PendingReplacedObjects(ctx, in.RetentionDuration)
	if err != nil {
		return p.Result, err
	}
	p.Result.Pending = pending
	logger(ctx).Info("Objects of replaced chunks", "retention", in.RetentionDuration, "deleted", p.Result.Deleted,
		"pending", p.Result.Pending, "failed", p.Result.Failed)
	return p.Result, nil
}
