//go:build storeopt_faults

package activities_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/metrics"
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
		{faults.OutputAlterMetadata, "footer differs"},
		// An encoder fault, after the rows handed to the writer were digested and counted.
		{faults.EncodeChangeValue, "differs from the rows decoded from the stored chunk"},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 300,
				Overlap: 0.2, UnsortedFraction: 0.2}})
			err := refusedCommit(t, a, ts[0], tc.point+"=on*1", 32<<10, metrics.PathRewrite)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if tc.point == faults.EncodeChangeValue {
				if on := faults.ActedOn(tc.point); len(on) != 1 {
					t.Fatalf("fault %s acted on columns %v, want one", tc.point, on)
				}
				if !regexp.MustCompile(`output chunk \d+ \(tp_\w+/data/\d{5}\.parquet\)`).MatchString(err.Error()) {
					t.Fatalf("error %q does not name the chunk", err)
				}
			}
		})
	}
}

// TestVerificationCatchesCorruptCopies is TestVerificationCatchesCorruptOutput for outputs the
// copy path assembles (a topic recorded in order): a bit of a copied page flipped on its way to
// the store after the inputs' pages were digested, and an altered footer entry, are refused.
func TestVerificationCatchesCorruptCopies(t *testing.T) {
	for _, tc := range []struct{ point, want string }{
		{faults.CopyChangePage, "differs from the rows decoded from the stored chunk"},
		{faults.OutputAlterMetadata, "footer differs"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 300}})
			err := refusedCommit(t, a, ts[0], tc.point+"=on*1", 96<<10, metrics.PathCopy) // outputs of two chunks each
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if tc.point == faults.CopyChangePage && len(faults.ActedOn(tc.point)) != 1 {
				t.Fatalf("fault %s acted on columns %v, want one", tc.point, faults.ActedOn(tc.point))
			}
		})
	}
}

// TestVerificationCatchesCorruptPassThrough is TestVerificationCatchesCorruptOutput for outputs
// the pass-through path keeps (a topic recorded in order with a page index, chunks of about the
// size limit): a bit of the store's copy of a chunk flipped after the copy, and an altered
// footer entry, are refused.
func TestVerificationCatchesCorruptPassThrough(t *testing.T) {
	for _, tc := range []struct{ point, want string }{
		{faults.PassChangeByte, "differs from the rows decoded from the stored chunk"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 6, RowsPerChunk: 300,
				PageIndex: true, RowGroupRows: 100}})
			chunks, err := a.Catalog.Chunks(context.Background(), ts[0].TopicID)
			if err != nil {
				t.Fatal(err)
			}
			err = refusedCommit(t, a, ts[0], tc.point+"=on*1", passThroughLimit(chunks), metrics.PathPassThrough)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestVerificationCatchesBoundaryFaults moves a key range's bound by one row in one input chunk
// inside the merge, before any digest is taken (fault points of package merge, built with -tags
// storeopt_faults), so that every per-output check agrees: a row taken by two outputs; a row
// taken by none; both in one input chunk (the chunk's row count and every total stay right); a
// row taken twice in one input chunk and another by no output in a second one (total rows
// right). Commit refuses each with a non-retryable verification error naming every input chunk
// the fault acted on, the rows it holds and the rows the outputs took, and the topic stays
// exactly as it was. A case fails if its fault did not act.
func TestVerificationCatchesBoundaryFaults(t *testing.T) {
	const rows = 300 // rows per input chunk
	twice := func(key string) string {
		return fmt.Sprintf("input chunk %s: %d rows taken by the output chunks, %d in the chunk", key, rows+1, rows)
	}
	skipped := func(key string) string {
		return fmt.Sprintf("input chunk %s: %d rows taken by the output chunks, %d in the chunk", key, rows-1, rows)
	}
	shifted := func(key string) string {
		return fmt.Sprintf("input chunk %s: %d rows taken by the output chunks, as many as the chunk holds, "+
			"but not each of its rows 0..%d exactly once (a row taken twice, another by no output)", key, rows, rows-1)
	}
	cases := []struct {
		name string
		// want maps each fault point to the message its input chunk must get.
		want map[string]func(key string) string
	}{
		{"row taken twice", map[string]func(string) string{faults.MergeDuplicateRow: twice}},
		{"row taken by no output", map[string]func(string) string{faults.MergeSkipRow: skipped}},
		{"one chunk: a row twice, another by no output", map[string]func(string) string{faults.MergeShiftRange: shifted}},
		{"two chunks: a row twice in one, another by no output in the other",
			map[string]func(string) string{faults.MergeDuplicateRow: twice, faults.MergeSkipRow: skipped}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: rows,
				Overlap: 0.3, UnsortedFraction: 0.2, EqualTimestamps: true}})
			chunks, err := a.Catalog.Chunks(context.Background(), ts[0].TopicID)
			if err != nil {
				t.Fatal(err)
			}
			keyOf := map[string]string{} // chunk ID → object key
			for _, c := range chunks {
				keyOf[fmt.Sprint(c.ID)] = c.ObjectKey
			}
			var spec []string
			for point := range tc.want {
				spec = append(spec, point+"=on*1")
			}
			err = refusedCommit(t, a, ts[0], strings.Join(spec, ";"), 8<<10, metrics.PathRewrite)
			acted := map[string]bool{}
			for point, want := range tc.want {
				on := faults.ActedOn(point)
				if len(on) != 1 {
					t.Fatalf("fault %s acted on chunks %v, want exactly one", point, on)
				}
				acted[on[0]] = true
				if w := want(keyOf[on[0]]); !strings.Contains(err.Error(), w) {
					t.Errorf("fault %s acted on chunk %s: error %q does not say %q", point, keyOf[on[0]], err, w)
				}
			}
			if len(acted) != len(tc.want) {
				t.Fatalf("the faults acted on %d input chunks, want %d", len(acted), len(tc.want))
			}
			if n := strings.Count(err.Error(), "input chunk "); n != len(acted) {
				t.Errorf("error names %d input chunks, the faults acted on %d: %q", n, len(acted), err)
			}
		})
	}
}

// TestVerificationCatchesAnInputLeftOutOfThePlan leaves one selected input chunk out of the plan
// read-sort computes (faults.PlanDropInput): its inputs and totals agree with each other and with
// every output, but the commit would replace (delete) the chunk with the others. The commit
// refuses it, naming the chunk, its rows and the rows taken (none), and the topic stays exactly
// as it was. The case fails if the fault did not act.
func TestVerificationCatchesAnInputLeftOutOfThePlan(t *testing.T) {
	const rows = 300
	for _, path := range metrics.WritePaths {
		t.Run(path, func(t *testing.T) {
			spec := ingest.TopicSpec{Path: "imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: rows}
			switch path {
			case metrics.PathRewrite:
				spec.Overlap, spec.UnsortedFraction = 0.3, 0.2
			case metrics.PathPassThrough:
				spec.PageIndex, spec.RowGroupRows = true, 100
			}
			testInputLeftOut(t, spec, path)
		})
	}
}

// testInputLeftOut is TestVerificationCatchesAnInputLeftOutOfThePlan for a topic of spec whose
// outputs all take path.
func testInputLeftOut(t *testing.T, spec ingest.TopicSpec, path string) {
	rows := int64(spec.RowsPerChunk)
	a, ts := setup(t, 0, []ingest.TopicSpec{spec})
	chunks, err := a.Catalog.Chunks(context.Background(), ts[0].TopicID)
	if err != nil {
		t.Fatal(err)
	}
	maxChunk := map[string]int64{
		metrics.PathRewrite:     8 << 10,                  // outputs cut inside inputs
		metrics.PathCopy:        96 << 10,                 // outputs of two whole inputs each
		metrics.PathPassThrough: passThroughLimit(chunks), // outputs of one input each
	}[path]
	err = refusedCommit(t, a, ts[0], faults.PlanDropInput+"=on*1", maxChunk, path)
	on := faults.ActedOn(faults.PlanDropInput)
	if len(on) != 1 {
		t.Fatalf("fault %s acted on chunks %v, want exactly one", faults.PlanDropInput, on)
	}
	var key string
	for _, c := range chunks {
		if fmt.Sprint(c.ID) == on[0] {
			key = c.ObjectKey
		}
	}
	want := fmt.Sprintf("input chunk %s: 0 rows taken by the output chunks, %d in the chunk", key, rows)
	if key == "" || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// refusedCommit optimizes the topic with the faults spec (STOREOPT_FAULTS) and output chunks of
// maxChunk bytes, checks that the run is refused with a non-retryable verification error naming
// the topic, that every output was written by path (metrics.PathRewrite, PathCopy or
// PathPassThrough), that the topic is exactly as it was and that Release deletes the run's
// output, and returns the error.
func refusedCommit(t *testing.T, a *activities.Activities, topic ingest.IngestedTopic, spec string, maxChunk int64, path string) error {
	t.Helper()
	id := topic.TopicID
	before, err := a.Catalog.Topic(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	chunksBefore, err := a.Catalog.Chunks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// The fault points reload their rules when STOREOPT_FAULTS changes: have them see it unset
	// first, so that a spec an earlier test used and exhausted starts afresh.
	t.Setenv(faults.EnvVar, "")
	faults.Triggered("")
	t.Setenv(faults.EnvVar, spec)
	ctx := activities.WithRun(context.Background(), "test-owner", "run-faulty")
	refused, w := writeAndCommit(ctx, a, id, maxChunk)
	byPath := map[string]int{metrics.PathRewrite: w.WrittenChunks - w.CopiedChunks - w.PassedChunks,
		metrics.PathCopy: w.CopiedChunks, metrics.PathPassThrough: w.PassedChunks}
	if byPath[path] != w.WrittenChunks || w.WrittenChunks == 0 {
		t.Fatalf("output chunks written by path: %v, want all %d by %s", byPath, w.WrittenChunks, path)
	}
	var appErr *temporal.ApplicationError
	if !errors.As(refused, &appErr) || appErr.Type() != activities.ErrTypeVerification || appErr.NonRetryable() == false {
		t.Fatalf("got %v, want a non-retryable %s", refused, activities.ErrTypeVerification)
	}
	if !strings.Contains(refused.Error(), topic.Locator) {
		t.Fatalf("error %q does not name the topic", refused)
	}
	t.Logf("caught: %v", refused)
	after, err := a.Catalog.Topic(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	chunksAfter, err := a.Catalog.Chunks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) || !reflect.DeepEqual(chunksAfter, chunksBefore) {
		t.Fatalf("topic changed after a refused commit: %+v -> %+v", before, after)
	}
	rel, err := a.Release(ctx, activities.ReleaseInput{TopicID: id, Reason: "verification failed"})
	if err != nil || !rel.Released || rel.DeletedObjects == 0 {
		t.Fatalf("release: %+v, %v", rel, err)
	}
	return refused
}

// writeAndCommit runs Lease, ReadSort (output chunks of maxChunk bytes), every WriteChunks group
// and Commit, stopping at the first error; it returns that error and the WriteChunks results'
// chunk counts added up.
func writeAndCommit(ctx context.Context, a *activities.Activities, id, maxChunk int64) (err error, w activities.WriteChunksResult) {
	if _, err := a.Lease(ctx, activities.LeaseInput{TopicID: id}); err != nil {
		return err, w
	}
	rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: maxChunk})
	if err != nil {
		return err, w
	}
	var g errgroup.Group
	var mu sync.Mutex
	for group := range rs.Groups {
		g.Go(func() error {
			res, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: group})
			mu.Lock()
			w.WrittenChunks += res.WrittenChunks
			w.CopiedChunks += res.CopiedChunks
			w.PassedChunks += res.PassedChunks
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err, w
	}
	_, err = a.Commit(ctx, activities.CommitInput{TopicID: id})
	return err, w
}
