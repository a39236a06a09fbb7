package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/uploads"
)

// AbortUploadsInput is the input of AbortAbandonedUploads.
type AbortUploadsInput struct {
	// RetentionDuration is how long ago an unfinished upload must have been started (the store's
	// start time, by the worker's clock) to be aborted; 0 = any age. Must not be negative.
	RetentionDuration time.Duration
	PageSize          int // uploads per store listing page; 0 = DefaultCleanupPageSize
}

// AbortUploadsResult counts the store's unfinished uploads under "tp_<ULID>/" keys and what
// became of them. Uploads under other keys are left alone and not counted.
type AbortUploadsResult struct {
	Kind         string   // the store's kind of upload ("S3 multipart upload"); "" = the store has none
	Found        int      // unfinished uploads found
	Aborted      int      // started before the retention, outside live leases: aborted
	AbortedBytes int64    // bytes the aborted uploads' parts held
	Pending      int      // younger than the retention: kept for a later pass
	InFlight     int      // under a live lease's fresh prefix, where an upload may still complete: kept
	Failed       int      // the store refused to abort them (retried by a later pass)
	Errors       []string // the first MaxCleanupErrors abort errors, each naming its upload
}

// abortProgress is the heartbeat of AbortAbandonedUploads: where to resume the listing.
type abortProgress struct {
	After  uploads.Cursor
	Result AbortUploadsResult
}

// AbortAbandonedUploads aborts the unfinished uploads that a store keeps outside its object
// listing (a.Uploads; nothing to do when it is nil, e.g. file:// and mem:// stores): an S3
// multipart upload of a worker killed while it uploaded an output chunk, or of an ingestion that
// died. The retry uploads the chunk again and the first upload's parts would otherwise stay in
// the bucket for good, unseen by listings and by DeleteMarkedPrefixes. It lists the uploads under
// "tp_" page by page and aborts each one under a "tp_<ULID>/" prefix that was started at least
// RetentionDuration ago, referenced prefix or not, except under the fresh prefix of a live
// lease, where an optimization's upload may still complete. A store that refuses an abort is
// counted in Failed with its error and the pass goes on; listing and catalog errors are returned
// for Temporal to retry (resuming at the last page done). A negative RetentionDuration is a
// non-retryable ErrTypeInput error.
func (a *Activities) AbortAbandonedUploads(ctx context.Context, in AbortUploadsInput) (AbortUploadsResult, error) {
	if err := a.checkRetention(in.RetentionDuration); err != nil {
		return AbortUploadsResult{}, err
	}
	if a.Uploads == nil {
		return AbortUploadsResult{}, nil
	}
	pageSize := in.PageSize
	if pageSize <= 0 {
		pageSize = DefaultCleanupPageSize
	}
	p := abortProgress{Result: AbortUploadsResult{Kind: a.Uploads.Kind()}}
	resumeFrom(ctx, &p)
	for {
		page, next, done, err := a.Uploads.ListPage(ctx, "tp_", p.After, pageSize)
		if err != nil {
			return p.Result, fmt.Errorf("cleanup: %w", err)
		}
		stop := keepAlive(ctx, p) // a retry lists this page again
		err = a.abortPage(ctx, page, in.RetentionDuration, &p.Result)
		stop()
		if err != nil {
			return p.Result, err
		}
		p.After = next
		heartbeat(ctx, p)
		if done {
			break
		}
	}
	r := p.Result
	logger(ctx).Info("Unfinished uploads", "kind", r.Kind, "retention", in.RetentionDuration, "found", r.Found,
		"aborted", r.Aborted, "abortedBytes", r.AbortedBytes, "pending", r.Pending, "inFlight", r.InFlight,
		"failed", r.Failed)
	return r, nil
}

// abortPage decides the uploads of one listing page and counts the outcomes in res. Only catalog
// errors are returned; a refused abort is counted.
func (a *Activities) abortPage(ctx context.Context, page []uploads.Upload, retention time.Duration, res *AbortUploadsResult) error {
	var ours []uploads.Upload
	var prefixes []string
	for _, u := range page {
		prefix, _, ok := strings.Cut(u.Key, "/")
		if !ok || store.CheckPrefix(prefix) != nil {
			continue
		}
		ours = append(ours, u)
		prefixes = append(prefixes, prefix)
	}
	if len(ours) == 0 {
		return nil
	}
	leased, err := a.Catalog.LeasedPrefixes(ctx, prefixes)
	if err != nil {
		return err
	}
	for i, u := range ours {
		res.Found++
		switch {
		case leased[prefixes[i]]:
			res.InFlight++
		case time.Since(u.Initiated) < retention:
			res.Pending++
		default:
			a.abortUpload(ctx, u, res)
		}
	}
	return nil
}

// abortUpload aborts one upload and counts the outcome in res.
func (a *Activities) abortUpload(ctx context.Context, u uploads.Upload, res *AbortUploadsResult) {
	bytes, err := a.Uploads.Abort(ctx, u)
	if err != nil {
		res.Failed++
		if len(res.Errors) < MaxCleanupErrors {
			res.Errors = append(res.Errors, fmt.Sprintf("%s %s of %s: %v", res.Kind, u.ID, u.Key, err))
		}
		logger(ctx).Warn("Unfinished upload not aborted", "key", u.Key, "upload_id", u.ID, "error", err)
		return
	}
	res.Aborted++
	res.AbortedBytes += bytes
	logger(ctx).Info("Unfinished upload aborted", "key", u.Key, "upload_id", u.ID, "initiated", u.Initiated, "bytes", bytes)
}
