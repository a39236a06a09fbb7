package workflows

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/storeopt/storeopt/activities"
)

// DefaultRetentionDuration is how long an unreferenced data prefix is kept (marked) before the
// cleanup routine deletes its objects, when CleanupInput gives none: 24 hours.
const DefaultRetentionDuration = 24 * time.Hour

// Steps of a cleanup, as the progress query reports them.
const (
	cleanupStepMark      = "mark"
	cleanupStepDelete    = "delete"
	cleanupStepTempFiles = "temp-files"
	cleanupStepUploads   = "uploads"
	cleanupStepReplaced  = "replaced"
)

// The change IDs of the steps added to the pass (DeleteTempFiles, AbortAbandonedUploads,
// DeleteReplacedObjects). Retired: only version 1 is supported
// (docs/contributing.md#supported-histories).

// cleanupTempFilesChange is the workflow.GetVersion change ID of the DeleteTempFiles step.
const cleanupTempFilesChange = "cleanup-temp-files"

// cleanupUploadsChange is the workflow.GetVersion change ID of the AbortAbandonedUploads step.
const cleanupUploadsChange = "cleanup-abort-unfinished-uploads"

// cleanupReplacedChange is the workflow.GetVersion change ID of the DeleteReplacedObjects step.
const cleanupReplacedChange = "cleanup-replaced-objects"

// CleanupInput is the input of CleanupWorkflow.
type CleanupInput struct {
	// RetentionDuration is how long a prefix stays marked unreferenced before its objects are
	// deleted, measured by the catalog database's clock. nil = DefaultRetentionDuration (24 h);
	// 0 = delete unreferenced prefixes in the same pass that finds them. In JSON: nanoseconds,
	// e.g. {"RetentionDuration": 3600000000000} for one hour, {} for the default.
	RetentionDuration *time.Duration
	// PageSize is how many prefixes or marks one page of the activities handles; 0 = 1000.
	PageSize int
	// HeartbeatTimeout of the cleanup activities; 0 = DefaultHeartbeatTimeout (one minute).
	HeartbeatTimeout time.Duration
}

// RetentionOf returns a *time.Duration for CleanupInput.RetentionDuration.
func RetentionOf(d time.Duration) *time.Duration { return &d }

// CleanupResult counts what one cleanup pass did with the store's top-level prefixes.
type CleanupResult struct {
	RetentionDuration time.Duration // the retention applied
	Prefixes          int           // "tp_<ULID>/" prefixes listed in the store
	Referenced        int           // referenced by a topic, a live lease or a plan: kept
	Marked            int           // unreferenced, marked by this pass
	Unmarked          int           // marked earlier but referenced again: mark removed
	Pending           int           // marked, retention not over yet: kept for now
	Ignored           int           // top-level entries that are not "tp_<ULID>/" prefixes
	Deleted           int           // prefixes whose objects were deleted
	DeletedObjects    int           // objects deleted
	DeleteFailed      int           // prefixes whose deletion failed (retried by the next pass)
	// Temporary files of unfinished file:// writes ("<key>.<random>.tmp", left by killed
	// writers) found inside prefixes, deleted (older than the retention, outside live leases),
	// and those the store refused to delete (retried by the next pass).
	TempFiles        int
	TempFilesDeleted int
	TempFilesFailed  int
	// Unfinished S3 multipart uploads (left by killed writers) found under "tp_<ULID>/" keys,
	// aborted (started before the retention, outside live leases) with the bytes their parts
	// held, and those the store refused to abort (retried by the next pass).
	Uploads            int
	UploadsAborted     int
	UploadBytesAborted int64
	UploadsFailed      int
	// Objects of chunks replaced by compactions of live topics (their prefix stays referenced):
	// deleted once replaced at least the retention ago, still inside the retention, and those
	// the store refused to delete (retried by the next pass).
	ReplacedDeleted int
	ReplacedPending int
	ReplacedFailed  int
	Errors          []string // the first deletion and abort errors (at most activities.MaxCleanupErrors)
}

// CleanupWorkflow is one pass of the cleanup routine: MarkPrefixes lists every top-level
// "tp_<ULID>/" prefix of the store and marks those nothing in the catalog references (a topic's
// data prefix, a live lease's or a plan's fresh prefix), unmarking those referenced again; then
// DeleteMarkedPrefixes deletes the objects of every prefix marked at least RetentionDuration ago
// that is still unreferenced, deciding each one in a catalog transaction; last, DeleteTempFiles
// deletes the temporary files that killed writes left in a file:// store (also in referenced
// prefixes, never under a live lease) once they are RetentionDuration old, and
// AbortAbandonedUploads aborts the unfinished multipart uploads of an S3 store under
// "tp_<ULID>/" keys (never under a live lease) started at least RetentionDuration ago, and
// DeleteReplacedObjects deletes the objects of chunks that compactions of live topics replaced
// inside prefixes that stay referenced, once replaced RetentionDuration ago. The old
// prefix of an
// optimized topic is thus deleted one retention period after the first pass that sees it
// unreferenced, so readers that resolved it just before the switch keep working.
//
// Prefix lists never pass through the workflow: the activities page through the store and the
// catalog and return counts. A failed deletion is counted in the result (DeleteFailed, Errors)
// and left marked for the next pass; the workflow fails only when an activity fails after its
// retries, or with a non-retryable activities.ErrTypeInput error for a negative retention.
//
// Queries: ProgressQuery returns the current step ("mark", "delete", "temp-files", "uploads",
// "replaced", "done").
func CleanupWorkflow(ctx workflow.Context, in CleanupInput) (CleanupResult, error) {
	retention := DefaultRetentionDuration
	if in.RetentionDuration != nil {
		retention = *in.RetentionDuration
	}
	res := CleanupResult{RetentionDuration: retention}
	if retention < 0 {
		return res, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cleanup: retention duration %s is negative (0 deletes at once)", retention),
			activities.ErrTypeInput, nil)
	}
	step := cleanupStepMark
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (string, error) { return step, nil }); err != nil {
		return res, err
	}
	actx := withCleanupOptions(ctx, in.HeartbeatTimeout)
	logger := workflow.GetLogger(ctx)

	marked, err := cleanupStep(ctx, actx, &step, "", cleanupStepMark,
		a.MarkPrefixes, activities.MarkPrefixesInput{PageSize: in.PageSize})
	if err != nil {
		return res, err
	}
	res.Prefixes, res.Referenced, res.Marked = marked.Prefixes, marked.Referenced, marked.Marked
	res.Unmarked, res.Ignored = marked.Unmarked, marked.Ignored

	deleted, err := cleanupStep(ctx, actx, &step, "", cleanupStepDelete,
		a.DeleteMarkedPrefixes, activities.DeleteMarkedPrefixesInput{RetentionDuration: retention, PageSize: in.PageSize})
	if err != nil {
		return res, err
	}
	res.Unmarked += deleted.Unmarked
	res.Pending = deleted.Pending
	res.Deleted, res.DeletedObjects = deleted.Deleted, deleted.DeletedObjects
	res.DeleteFailed, res.Errors = deleted.DeleteFailed, deleted.Errors

	temp, err := cleanupStep(ctx, actx, &step, cleanupTempFilesChange, cleanupStepTempFiles,
		a.DeleteTempFiles, activities.DeleteTempFilesInput{RetentionDuration: retention, PageSize: in.PageSize})
	if err != nil {
		return res, err
	}
	res.TempFiles, res.TempFilesDeleted, res.TempFilesFailed = temp.Found, temp.Deleted, temp.Failed
	res.addErrors(temp.Errors)

	up, err := cleanupStep(ctx, actx, &step, cleanupUploadsChange, cleanupStepUploads,
		a.AbortAbandonedUploads, activities.AbortUploadsInput{RetentionDuration: retention, PageSize: in.PageSize})
	if err != nil {
		return res, err
	}
	res.Uploads, res.UploadsAborted, res.UploadBytesAborted, res.UploadsFailed = up.Found, up.Aborted, up.AbortedBytes, up.Failed
	res.addErrors(up.Errors)

	rep, err := cleanupStep(ctx, actx, &step, cleanupReplacedChange, cleanupStepReplaced,
		a.DeleteReplacedObjects, activities.DeleteReplacedObjectsInput{RetentionDuration: retention, PageSize: in.PageSize})
	if err != nil {
		return res, err
	}
	res.ReplacedDeleted, res.ReplacedPending, res.ReplacedFailed = rep.Deleted, rep.Pending, rep.Failed
	res.addErrors(rep.Errors)

	step = stepDone
	logger.Info("Cleanup finished", "RetentionDuration", retention, "Prefixes", res.Prefixes,
		"Referenced", res.Referenced, "Marked", res.Marked, "Unmarked", res.Unmarked, "Pending", res.Pending,
		"Deleted", res.Deleted, "DeletedObjects", res.DeletedObjects, "DeleteFailed", res.DeleteFailed,
		"TempFiles", res.TempFiles, "TempFilesDeleted", res.TempFilesDeleted, "TempFilesFailed", res.TempFilesFailed,
		"Uploads", res.Uploads, "UploadsAborted", res.UploadsAborted, "UploadBytesAborted", res.UploadBytesAborted,
		"UploadsFailed", res.UploadsFailed, "ReplacedDeleted", res.ReplacedDeleted, "ReplacedPending", res.ReplacedPending,
		"ReplacedFailed", res.ReplacedFailed)
	for _, e := range res.Errors {
		logger.Warn("Prefix not deleted", "Error", e)
	}
	return res, nil
}

// addErrors adds a step's errors to the pass's, MaxCleanupErrors in all at most.
func (r *CleanupResult) addErrors(errs []string) {
	r.Errors = append(r.Errors, errs[:min(len(errs), activities.MaxCleanupErrors-len(r.Errors))]...)
}

// cleanupStep runs one step of the pass: the step's change ID ("" for the first steps) is
// retired, version 1 only (docs/contributing.md#supported-histories); *progress shows the step
// (ProgressQuery) while activity runs with input in under the options of actx.
func cleanupStep[In, Res any](ctx, actx workflow.Context, progress *string, change, step string,
	activity func(context.Context, In) (Res, error), in In) (Res, error) {
	if change != "" {
		workflow.GetVersion(ctx, change, 1, 1)
	}
	*progress = step
	var res Res
	err := workflow.ExecuteActivity(actx, activity, in).Get(ctx, &res)
	return res, err
}

// withCleanupOptions sets the options of the cleanup activities: long, heartbeating (a lost
// worker is noticed within the heartbeat timeout and the activity resumes from its last
// heartbeat elsewhere), infrastructure faults retried.
func withCleanupOptions(ctx workflow.Context, heartbeatTimeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, heartbeating(6*time.Hour, heartbeatTimeout))
}
