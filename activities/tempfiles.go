package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/storeopt/storeopt/store"
)

// DeleteTempFilesInput is the input of DeleteTempFiles.
type DeleteTempFilesInput struct {
	// RetentionDuration is how long ago a temporary file must have been written last (its
	// modification time, by the worker's clock) to be deleted; 0 = any age. Must not be negative.
	RetentionDuration time.Duration
	PageSize          int // top-level prefixes per store listing page; 0 = DefaultCleanupPageSize
}

// DeleteTempFilesResult counts the temporary files of unfinished writes ("<key>.<random>.tmp",
// store.IsTempKey) found under the store's "tp_<ULID>/" prefixes and what became of them.
type DeleteTempFilesResult struct {
	Found    int      // temporary files found
	Deleted  int      // older than the retention, outside live leases: deleted
	Pending  int      // younger than the retention: kept for a later pass
	InFlight int      // under a live lease's fresh prefix, where a write may be going on: kept
	Failed   int      // the store refused to delete them
	Errors   []string // the first MaxCleanupErrors deletion errors, each naming its object
}

// tempFilesProgress is the heartbeat of DeleteTempFiles: the page of top-level prefixes to resume
// from and the counts up to it.
type tempFilesProgress struct {
	PageToken []byte
	Result    DeleteTempFilesResult
}

// DeleteTempFiles deletes the temporary files that writes to a file:// store leave behind when
// they are killed (a worker killed in the middle of writing a chunk, an ingestion that died),
// once they are older than RetentionDuration: in every "tp_<ULID>/" prefix, referenced or not,
// except the fresh prefixes of live leases, where an optimization may be writing. (Prefixes
// nothing references are deleted whole by DeleteMarkedPrefixes; a leftover inside a topic's
// current prefix would otherwise stay forever.) Such files are never objects of the store:
// nothing lists them as chunks (store.CheckKey refuses them). Other stores write no temporary
// files: the result is empty. Store listing and catalog errors are returned for Temporal to
// retry (resuming at the last page of prefixes done); a deletion the store refuses is counted in
// Failed and the pass goes on. A negative RetentionDuration is a non-retryable ErrTypeInput error.
func (a *Activities) DeleteTempFiles(ctx context.Context, in DeleteTempFilesInput) (DeleteTempFilesResult, error) {
	if err := a.checkRetention(in.RetentionDuration); err != nil {
		return DeleteTempFilesResult{}, err
	}
	if !store.IsFileStore(a.Bucket) {
		return DeleteTempFilesResult{}, nil
	}
	pageSize := cleanupPageSize(in.PageSize)
	p := tempFilesProgress{PageToken: blob.FirstPageToken}
	resumeFrom(ctx, &p)
	for {
		prefixes, _, next, err := a.listDataPrefixes(ctx, p.PageToken, pageSize)
		if err != nil {
			return p.Result, err
		}
		leased, err := a.Catalog.LeasedPrefixes(ctx, prefixes)
		if err != nil {
			return p.Result, err
		}
		res := p.Result // a retry starts this page over from the counts before it
		for _, prefix := range prefixes {
			if err := a.deleteTempFilesUnder(ctx, prefix, leased[prefix], in.RetentionDuration, &res); err != nil {
				return p.Result, err
			}
			heartbeat(ctx, p)
		}
		p.Result = res
		if len(next) == 0 {
			break
		}
		p.PageToken = next
		heartbeat(ctx, p)
	}
	logger(ctx).Info("Temporary files of unfinished writes", "retention", in.RetentionDuration,
		"found", p.Result.Found, "deleted", p.Result.Deleted, "pending", p.Result.Pending,
		"inFlight", p.Result.InFlight, "failed", p.Result.Failed)
	return p.Result, nil
}

// deleteTempFilesUnder lists every object under "<prefix>/" and deletes the temporary files
// older than retention, unless the prefix is leased; it counts them in res. Only listing errors
// are returned.
func (a *Activities) deleteTempFilesUnder(ctx context.Context, prefix string, leased bool, retention time.Duration, res *DeleteTempFilesResult) error {
	it := a.Bucket.List(&blob.ListOptions{Prefix: prefix + "/"})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cleanup: list %s/: %w", prefix, err)
		}
		if obj.IsDir || !store.IsTempKey(obj.Key) {
			continue
		}
		res.Found++
		switch {
		case leased:
			res.InFlight++
		case time.Since(obj.ModTime) < retention:
			res.Pending++
		default:
			err := a.Bucket.Delete(ctx, obj.Key)
			switch {
			case err == nil:
				res.Deleted++
				logger(ctx).Info("Temporary file of an unfinished write deleted", "key", obj.Key, "modified", obj.ModTime)
			case gcerrors.Code(err) == gcerrors.NotFound: // gone meanwhile (renamed into place): not counted
				res.Found--
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				return err
			default:
				res.Failed++
				if len(res.Errors) < MaxCleanupErrors {
					res.Errors = append(res.Errors, fmt.Sprintf("temporary file %s: %v", obj.Key, err))
				}
				logger(ctx).Warn("Temporary file not deleted", "key", obj.Key, "error", err)
			}
		}
	}
}
