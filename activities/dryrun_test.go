package activities_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
)

// TestDryRunIsReadSortWithoutTheWrite: a dry run's ReadSort (DryRun, no lease) answers what the
// real ReadSort answers under a lease, figure for figure, and stores no plan; PlanTopics reports
// those figures for the topic.
func TestDryRunIsReadSortWithoutTheWrite(t *testing.T) {
	a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 200}})
	id := ts[0].TopicID
	ctx := activities.WithRun(context.Background(), "test-owner", "run-1")
	const maxChunk = 16 << 10
	dry, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: maxChunk, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Catalog.LoadPlan(ctx, id, "run-1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("after a dry ReadSort: plan lookup %v, want none stored", err)
	}
	pages, err := a.PlanTopics(ctx, activities.PlanTopicsInput{MaxChunkSizeBytes: maxChunk})
	if err != nil || len(pages.Topics) != 1 {
		t.Fatalf("PlanTopics: %+v, %v: want the topic", pages, err)
	}
	if _, err := a.Lease(ctx, activities.LeaseInput{TopicID: id}); err != nil {
		t.Fatal(err)
	}
	real, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: maxChunk})
	if err != nil {
		t.Fatal(err)
	}
	if dry.OutputChunks < 2 || !reflect.DeepEqual(dry, real) {
		t.Fatalf("dry ReadSort %+v, real %+v: want the same plan of several outputs", dry, real)
	}
	tp := pages.Topics[0]
	got := activities.ReadSortResult{InputChunks: tp.InputChunks, InputRows: tp.Rows, InputBytes: tp.InputBytes,
		InputArrowBytes: tp.InputArrowBytes, OutputChunks: tp.OutputChunks, OutputBytes: tp.OutputBytes,
		Groups: real.Groups, FooterValuesKept: real.FooterValuesKept}
	if !reflect.DeepEqual(got, real) {
		t.Fatalf("PlanTopics reports %+v, ReadSort planned %+v", tp, real)
	}
}
