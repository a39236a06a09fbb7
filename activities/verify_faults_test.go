//go:build storeopt_faults

package activities_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
)

// TestVerificationCatchesCorruptOutput injects a dropped row, a changed value and an altered
// field metadata entry into the output of an optimization (fault points of the data path, built
// with -tags storeopt_faults): verification refuses each with a non-retryable verification error
// naming the difference, and the topic stays exactly as it was.
func TestVerificationCatchesCorruptOutput(t *testing.T) {
	cases := []struct {
		point, want string
	}{
		{faults.OutputDropRow, "rows"},
		{faults.OutputChangeValue, "content digest"},
		{faults.OutputAlterMetadata, "metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 300,
				Overlap: 0.2, UnsortedFraction: 0.2}})
			id := ts[0].TopicID
			before, err := a.Catalog.Topic(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			chunksBefore, _ := a.Catalog.Chunks(context.Background(), id)
			t.Setenv(faults.EnvVar, tc.point+"=on*1")
			ctx := activities.WithRun(context.Background(), "test-owner", "run-"+tc.point)
			err = writeAndCommit(ctx, a, id)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeVerification || appErr.NonRetryable() == false {
				t.Fatalf("got %v, want a non-retryable %s", err, activities.ErrTypeVerification)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ts[0].Locator) {
				t.Fatalf("error %q does not name the topic and %q", err, tc.want)
			}
			t.Logf("caught: %v", err)
			after, _ := a.Catalog.Topic(context.Background(), id)
			chunksAfter, _ := a.Catalog.Chunks(context.Background(), id)
			if after.DataPrefix != before.DataPrefix || after.OptimizedAt != nil || len(chunksAfter) != len(chunksBefore) ||
				chunksAfter[0].ID != chunksBefore[0].ID {
				t.Fatalf("topic changed after a refused commit: %+v -> %+v", before, after)
			}
			rel, err := a.Release(ctx, activities.ReleaseInput{TopicID: id, Reason: "verification failed"})
			if err != nil || !rel.Released || rel.DeletedObjects == 0 {
				t.Fatalf("release: %+v, %v", rel, err)
			}
		})
	}
}

// writeAndCommit runs Lease, ReadSort, every WriteChunks group and Commit, stopping at the first
// error.
func writeAndCommit(ctx context.Context, a *activities.Activities, id int64) error {
	if _, err := a.Lease(ctx, activities.LeaseInput{TopicID: id}); err != nil {
		return err
	}
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: 32 << 10})
	if err != nil {
		return err
	}
	var g errgroup.Group
	for group := range rs.Groups {
		g.Go(func() error {
			_, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: group})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err = a.Commit(ctx, activities.CommitInput{TopicID: id})
	return err
}
