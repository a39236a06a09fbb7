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
// those figures for the topic. A topic recorded with a page index in chunks of about the output
// size is planned with every output kept as its chunk (PassThroughChunks), one of overlapping
// chunks with none.
func TestDryRunIsReadSortWithoutTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     ingest.TopicSpec
		maxChunk int64
		kept     bool
	}{
		{"rewritten", ingest.TopicSpec{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 200, Overlap: 0.1}, 16 << 10, false},
		{"kept", ingest.TopicSpec{Path: "imu", Kind: ingest.IMU, Chunks: 6, RowsPerChunk: 200, PageIndex: true, RowGroupRows: 50}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{tc.spec})
			id := ts[0].TopicID
			ctx := activities.WithRun(context.Background(), "test-owner", "run-1")
			maxChunk := tc.maxChunk
			if maxChunk == 0 {
				chunks, err := a.Catalog.Chunks(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				maxChunk = passThroughLimit(chunks)
			}
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
			if kept := dry.PassThroughChunks == dry.OutputChunks; kept != tc.kept || (!tc.kept && dry.PassThroughChunks != 0) {
				t.Fatalf("%d of %d outputs kept as their chunks, want all: %v", dry.PassThroughChunks, dry.OutputChunks, tc.kept)
			}
			tp := pages.Topics[0]
			got := activities.ReadSortResult{InputChunks: tp.InputChunks, InputRows: tp.Rows, InputBytes: tp.InputBytes,
				InputArrowBytes: tp.InputArrowBytes, OutputChunks: tp.OutputChunks, OutputBytes: tp.OutputBytes,
				PassThroughChunks: tp.PassThroughChunks, Groups: real.Groups, FooterValuesKept: real.FooterValuesKept}
			if !reflect.DeepEqual(got, real) {
				t.Fatalf("PlanTopics reports %+v, ReadSort planned %+v", tp, real)
			}
		})
	}
}
