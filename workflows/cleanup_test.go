package workflows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
)

// runCleanup runs CleanupWorkflow with mocked activities and returns its result and the
// retention DeleteMarkedPrefixes was given (-1 if it was not called).
func runCleanup(t *testing.T, in CleanupInput, deleted activities.DeleteMarkedPrefixesResult) (CleanupResult, time.Duration, error) {
	t.Helper()
	env := newTestEnv(t)
	env.RegisterWorkflow(CleanupWorkflow)
	env.OnActivity(a.MarkPrefixes, mock.Anything, mock.Anything).Return(activities.MarkPrefixesResult{
		Prefixes: 10, Referenced: 6, Marked: 2, Unmarked: 1, Pending: 2, Ignored: 1}, nil).Maybe()
	got := time.Duration(-1)
	env.OnActivity(a.DeleteMarkedPrefixes, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeleteMarkedPrefixesInput) (activities.DeleteMarkedPrefixesResult, error) {
			got = in.RetentionDuration
			return deleted, nil
		}).Maybe()
	env.OnActivity(a.DeleteTempFiles, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeleteTempFilesInput) (activities.DeleteTempFilesResult, error) {
			if in.RetentionDuration != got {
				return activities.DeleteTempFilesResult{}, fmt.Errorf("DeleteTempFiles: retention %s, DeleteMarkedPrefixes %s", in.RetentionDuration, got)
			}
			return activities.DeleteTempFilesResult{Found: 4, Deleted: 2, Pending: 1, Failed: 1,
				Errors: []string{"temporary file tp_Y/data/00000.parquet.1f.tmp: permission denied"}}, nil
		}).Maybe()
	env.OnActivity(a.AbortAbandonedUploads, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AbortUploadsInput) (activities.AbortUploadsResult, error) {
			if in.RetentionDuration != got {
				return activities.AbortUploadsResult{}, fmt.Errorf("AbortAbandonedUploads: retention %s, DeleteMarkedPrefixes %s", in.RetentionDuration, got)
			}
			return activities.AbortUploadsResult{Kind: "S3 multipart upload", Found: 5, Aborted: 2, AbortedBytes: 5 << 20,
				Pending: 1, InFlight: 1, Failed: 1, Errors: []string{"S3 multipart upload u1 of tp_Z/data/00000.parquet: access denied"}}, nil
		}).Maybe()
	env.OnActivity(a.DeleteReplacedObjects, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeleteReplacedObjectsInput) (activities.DeleteReplacedObjectsResult, error) {
			if in.RetentionDuration != got {
				return activities.DeleteReplacedObjectsResult{}, fmt.Errorf("DeleteReplacedObjects: retention %s, DeleteMarkedPrefixes %s", in.RetentionDuration, got)
			}
			return activities.DeleteReplacedObjectsResult{Deleted: 7, Pending: 3, Failed: 1,
				Errors: []string{"replaced object tp_W/data/00003.parquet: permission denied"}}, nil
		}).Maybe()
	env.ExecuteWorkflow(CleanupWorkflow, in)
	require.True(t, env.IsWorkflowCompleted())
	var res CleanupResult
	if err := env.GetWorkflowError(); err != nil {
		return res, got, err
	}
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, got, nil
}

func TestCleanupWorkflowCombinesCounts(t *testing.T) {
	res, retention, err := runCleanup(t, CleanupInput{RetentionDuration: RetentionOf(0)},
		activities.DeleteMarkedPrefixesResult{Deleted: 3, DeletedObjects: 40, Unmarked: 1, DeleteFailed: 1,
			Errors: []string{"prefix tp_X: permission denied"}, Pending: 0})
	require.NoError(t, err)
	require.Zero(t, retention, "0 deletes at once")
	require.Equal(t, CleanupResult{Prefixes: 10, Referenced: 6, Marked: 2, Unmarked: 2, Ignored: 1,
		Deleted: 3, DeletedObjects: 40, DeleteFailed: 1, TempFiles: 4, TempFilesDeleted: 2, TempFilesFailed: 1,
		Uploads: 5, UploadsAborted: 2, UploadBytesAborted: 5 << 20, UploadsFailed: 1,
		ReplacedDeleted: 7, ReplacedPending: 3, ReplacedFailed: 1,
		Errors: []string{"prefix tp_X: permission denied", "temporary file tp_Y/data/00000.parquet.1f.tmp: permission denied",
			"S3 multipart upload u1 of tp_Z/data/00000.parquet: access denied",
			"replaced object tp_W/data/00003.parquet: permission denied"}}, res)
}

func TestCleanupWorkflowRetention(t *testing.T) {
	res, retention, err := runCleanup(t, CleanupInput{}, activities.DeleteMarkedPrefixesResult{Pending: 2})
	require.NoError(t, err)
	require.Equal(t, DefaultRetentionDuration, retention, "no retention given: 24 h")
	require.Equal(t, 24*time.Hour, res.RetentionDuration)
	require.Equal(t, 2, res.Pending)

	_, retention, err = runCleanup(t, CleanupInput{RetentionDuration: RetentionOf(time.Hour)}, activities.DeleteMarkedPrefixesResult{})
	require.NoError(t, err)
	require.Equal(t, time.Hour, retention)
}

func TestCleanupWorkflowRefusesNegativeRetention(t *testing.T) {
	env := newTestEnv(t)
	env.RegisterWorkflow(CleanupWorkflow)
	env.ExecuteWorkflow(CleanupWorkflow, CleanupInput{RetentionDuration: RetentionOf(-time.Second)})
	require.True(t, env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	require.Equal(t, activities.ErrTypeInput, appErr.Type())
	require.Contains(t, appErr.Error(), "negative")
}
