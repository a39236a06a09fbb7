package activities

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/store"
)

// Cleanup: MarkPrefixes lists the store's top-level prefixes page by page and marks those the
// catalog no longer references; DeleteMarkedPrefixes deletes the objects of marked prefixes once
// their retention has passed (database clock) and they are still unreferenced. Both heartbeat
// their cursor after every page or prefix and resume from it when retried, and return counts
// only: no list of prefixes goes through a workflow payload.

const (
	// DefaultCleanupPageSize is how many prefixes (store listing) or marks (catalog) one page of
	// the cleanup activities handles.
	DefaultCleanupPageSize = 1000
	// MaxCleanupErrors is how many deletion errors DeleteMarkedPrefixesResult keeps; DeleteFailed
	// counts them all.
	MaxCleanupErrors = 20
	// cleanupKeepAlive is how often a long store deletion heartbeats.
	cleanupKeepAlive = 10 * time.Second
)

// MarkPrefixesInput is the input of MarkPrefixes.
type MarkPrefixesInput struct {
	PageSize int // prefixes per store listing page; 0 = DefaultCleanupPageSize
}

// MarkPrefixesResult counts the top-level entries of the store by what MarkPrefixes did.
type MarkPrefixesResult struct {
	Prefixes   int // "tp_<ULID>/" prefixes listed
	Referenced int // referenced by a topic, a lease or a plan
	Marked     int // unreferenced, marked now
	Unmarked   int // referenced again, mark removed
	Pending    int // unreferenced, marked by an earlier pass
	Ignored    int // top-level entries that are not "tp_<ULID>/" prefixes (left alone)
}

// markProgress is the heartbeat of MarkPrefixes: where to resume the listing.
type markProgress struct {
	PageToken []byte
	Result    MarkPrefixesResult
}

// MarkPrefixes lists every top-level prefix "tp_<ULID>/" of the store (bucket.ListPage with
// delimiter "/"), page by page, and records each page in the catalog (catalog.MarkUnreferenced):
// referenced prefixes are unmarked, unreferenced ones marked with the database clock. It returns
// the counts. Store and catalog errors are returned for Temporal to retry; a retry resumes after
// the last page recorded.
func (a *Activities) MarkPrefixes(ctx context.Context, in MarkPrefixesInput) (MarkPrefixesResult, error) {
	pageSize := cleanupPageSize(in.PageSize)
	p := markProgress{PageToken: blob.FirstPageToken}
	resumeFrom(ctx, &p)
	for {
		prefixes, ignored, next, err := a.listDataPrefixes(ctx, p.PageToken, pageSize)
		if err != nil {
			return p.Result, err
		}
		p.Result.Ignored += ignored
		if len(prefixes) > 0 {
			res, err := a.Catalog.MarkUnreferenced(ctx, prefixes)
			if err != nil {
				return p.Result, err
			}
			p.Result.Prefixes += len(prefixes)
			p.Result.Referenced += res.Referenced
			p.Result.Marked += res.Marked
			p.Result.Unmarked += res.Unmarked
			p.Result.Pending += res.Pending
		}
		if len(next) == 0 {
			break
		}
		p.PageToken = next
		heartbeat(ctx, p)
	}
	logger(ctx).Info("Prefixes marked", "prefixes", p.Result.Prefixes, "referenced", p.Result.Referenced,
		"marked", p.Result.Marked, "unmarked", p.Result.Unmarked, "pending", p.Result.Pending,
		"ignored", p.Result.Ignored)
	return p.Result, nil
}

// cleanupPageSize is n, or DefaultCleanupPageSize when n is not positive.
func cleanupPageSize(n int) int {
	if n <= 0 {
		return DefaultCleanupPageSize
	}
	return n
}

// checkRetention refuses a negative retention duration of a cleanup activity: a non-retryable
// ErrTypeInput error.
func (a *Activities) checkRetention(d time.Duration) error {
	if d < 0 {
		return a.classify("(cleanup)", fmt.Errorf("retention duration %s is negative: %w", d, catalog.ErrInvalid))
	}
	return nil
}

// listDataPrefixes lists one page of the store's top-level entries (delimiter "/") from
// pageToken and returns the "tp_<ULID>" prefixes among them (without the "/"), how many other
// entries it ignored, and the next page's token (empty after the last page).
func (a *Activities) listDataPrefixes(ctx context.Context, pageToken []byte, pageSize int) (prefixes []string, ignored int, next []byte, err error) {
	objs, next, err := a.Bucket.ListPage(ctx, pageToken, pageSize, &blob.ListOptions{Delimiter: "/"})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("cleanup: list top-level prefixes of the store: %w", err)
	}
	for _, o := range objs {
		prefix, isDir := strings.CutSuffix(o.Key, "/")
		if !o.IsDir || !isDir || store.CheckPrefix(prefix) != nil {
			ignored++
			continue
		}
		prefixes = append(prefixes, prefix)
	}
	return prefixes, ignored, next, nil
}

// DeleteMarkedPrefixesInput is the input of DeleteMarkedPrefixes.
type DeleteMarkedPrefixesInput struct {
	// RetentionDuration is how long a prefix stays marked before its objects are deleted,
	// measured by the database clock; 0 = delete at once. Must not be negative.
	RetentionDuration time.Duration
	PageSize          int // marks per catalog page; 0 = DefaultCleanupPageSize
}

// DeleteMarkedPrefixesResult counts what DeleteMarkedPrefixes did with the due marks.
type DeleteMarkedPrefixesResult struct {
	Deleted        int      // prefixes whose objects were deleted (marks removed)
	DeletedObjects int      // objects deleted
	Unmarked       int      // due prefixes that were referenced again: mark removed, nothing deleted
	DeleteFailed   int      // prefixes whose deletion failed (mark kept, retried by a later pass)
	Errors         []string // the first MaxCleanupErrors deletion errors, each naming its prefix
	Pending        int      // marks still inside the retention period
}

// deleteProgress is the heartbeat of DeleteMarkedPrefixes: the last prefix decided.
type deleteProgress struct {
	AfterPrefix string
	Result      DeleteMarkedPrefixesResult
}

// DeleteMarkedPrefixes walks the marks that are at least RetentionDuration old (database clock)
// in prefix order and gives each to catalog.DeleteMarked, which re-checks in one transaction that
// nothing references the prefix and deletes its objects (store.DeletePrefix) before removing the
// mark. A prefix whose objects cannot be deleted is counted in DeleteFailed with its error and
// the walk goes on; catalog errors are returned for Temporal to retry (resuming after the last
// prefix decided). A negative RetentionDuration is a non-retryable ErrTypeInput error.
func (a *Activities) DeleteMarkedPrefixes(ctx context.Context, in DeleteMarkedPrefixesInput) (DeleteMarkedPrefixesResult, error) {
	if err := a.checkRetention(in.RetentionDuration); err != nil {
		return DeleteMarkedPrefixesResult{}, err
	}
	pageSize := cleanupPageSize(in.PageSize)
	var p deleteProgress
	resumeFrom(ctx, &p)
	for {
		marks, err := a.Catalog.DueMarks(ctx, in.RetentionDuration, p.AfterPrefix, pageSize)
		if err != nil {
			return p.Result, err
		}
		for _, m := range marks {
			if err := a.deleteMarked(ctx, m.Prefix, in.RetentionDuration, &p); err != nil {
				return p.Result, err
			}
			p.AfterPrefix = m.Prefix
			heartbeat(ctx, p)
		}
		if len(marks) < pageSize {
			break
		}
	}
	pending, err := a.Catalog.PendingMarks(ctx, in.RetentionDuration)
	if err != nil {
		return p.Result, err
	}
	p.Result.Pending = pending
	logger(ctx).Info("Marked prefixes deleted", "retention", in.RetentionDuration, "deleted", p.Result.Deleted,
		"objects", p.Result.DeletedObjects, "unmarked", p.Result.Unmarked, "failed", p.Result.DeleteFailed,
		"pending", p.Result.Pending)
	return p.Result, nil
}

// deleteMarked decides one due prefix and counts the outcome in p.Result. Only catalog errors
// are returned; a failed store deletion is counted.
func (a *Activities) deleteMarked(ctx context.Context, prefix string, retention time.Duration, p *deleteProgress) error {
	res := &p.Result
	var objects int
	var storeErr error
	outcome, err := a.Catalog.DeleteMarked(ctx, prefix, retention, func(ctx context.Context) error {
		stop := keepAlive(ctx, *p) // a retry resumes with this prefix
		defer stop()
		objects, storeErr = store.DeletePrefix(ctx, a.Bucket, prefix)
		return storeErr
	})
	res.DeletedObjects += objects
	switch {
	case storeErr != nil:
		res.DeleteFailed++
		if len(res.Errors) < MaxCleanupErrors {
			res.Errors = append(res.Errors, fmt.Sprintf("prefix %s: %v (%d objects deleted before the error)",
				prefix, storeErr, objects))
		}
		logger(ctx).Warn("Prefix not deleted", "prefix", prefix, "error", storeErr)
		return nil
	case err != nil:
		return err
	case outcome == catalog.DeleteDone:
		res.Deleted++
		logger(ctx).Info("Prefix deleted", "prefix", prefix, "objects", objects)
	case outcome == catalog.DeleteUnmarked:
		res.Unmarked++
	}
	return nil
}

// resumeFrom loads the activity's last heartbeat into progress when this is a retry.
func resumeFrom(ctx context.Context, progress any) {
	if !activity.IsActivity(ctx) || !activity.HasHeartbeatDetails(ctx) {
		return
	}
	if err := activity.GetHeartbeatDetails(ctx, progress); err != nil {
		logger(ctx).Warn("Ignoring unreadable heartbeat details; starting over", "error", err)
	}
}

// keepAlive heartbeats details every cleanupKeepAlive until stop is called, for a single step
// that can take longer than the heartbeat timeout. details must not change meanwhile.
func keepAlive(ctx context.Context, details any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// A panic here must not end the worker: it is logged and only the heartbeats stop (a
		// deletion that then outlasts the heartbeat timeout is retried).
		var err error
		defer func() { logPanic(ctx, "", err) }()
		defer panics.Recover(&err, "cleanup heartbeat")
		t := time.NewTicker(cleanupKeepAlive)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details)
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
