package activities_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/policy"
)

// TestCommitTakesItsSpecFromTheStoredPlan stages a tiered rollup of a topic's L0 chunks and then
// makes its plan row unreadable to the worker (a plan format version from a newer worker, or the
// row gone) before Commit: the commit fails with a non-retryable error and the topic keeps its
// chunks, levels and prefix; it is never committed as a full compaction (its L0 rollup switched
// in as L1 under the fresh prefix). With the plan left as it is the same commit succeeds, at
// level L0 in the topic's prefix, and a retry is answered "already committed" with the policy
// the commit applied.
func TestCommitTakesItsSpecFromTheStoredPlan(t *testing.T) {
	cases := []struct {
		name, sql, errType, want string
	}{
		{"plan of a newer format", `UPDATE plans SET body = convert_to(jsonb_set(convert_from(body, 'UTF8')::jsonb,
			'{version}', '99')::text, 'UTF8') WHERE topic_id = $1`, activities.ErrTypeInput, "stored plan has version 99"},
		{"no plan", `DELETE FROM plans WHERE topic_id = $1`, activities.ErrTypeNotFound, "no plan saved by run"},
		{"plan kept", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, ts := setup(t, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: 8, RowsPerChunk: 200}})
			id := ts[0].TopicID
			bg := context.Background()
			ctx := activities.WithRun(bg, "test-owner", "run-tiered")
			lease, err := a.Lease(ctx, activities.LeaseInput{TopicID: id, Policy: string(policy.Tiered)})
			if err != nil || lease.Policy != string(policy.Tiered) {
				t.Fatalf("lease: %+v, %v; want a tiered one", lease, err)
			}
			rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: 64 << 20, Policy: lease.Policy})
			if err != nil || rs.NothingToDo {
				t.Fatalf("read-sort: %+v, %v", rs, err)
			}
			for g := range rs.Groups {
				if _, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: g}); err != nil {
					t.Fatal(err)
				}
			}
			before, err := a.Catalog.Topic(bg, id)
			if err != nil {
				t.Fatal(err)
			}
			chunksBefore, err := a.Catalog.Chunks(bg, id)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sql != "" {
				if _, err := a.Catalog.Pool.Exec(bg, tc.sql, id); err != nil {
					t.Fatal(err)
				}
			}
			res, err := a.Commit(ctx, activities.CommitInput{TopicID: id})
			after, aerr := a.Catalog.Topic(bg, id)
			if aerr != nil {
				t.Fatal(aerr)
			}
			chunksAfter, aerr := a.Catalog.Chunks(bg, id)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if tc.sql != "" {
				var appErr *temporal.ApplicationError
				if !errors.As(err, &appErr) || appErr.Type() != tc.errType || !appErr.NonRetryable() {
					t.Fatalf("commit: %+v, %v; want a non-retryable %s", res, err, tc.errType)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ts[0].Locator) {
					t.Fatalf("error %q does not name the topic and say %q", err, tc.want)
				}
				if !reflect.DeepEqual(after, before) || !reflect.DeepEqual(chunksAfter, chunksBefore) {
					t.Fatalf("topic changed by a commit without a readable plan: prefix %s -> %s, %d chunks -> %d (levels %v)",
						before.DataPrefix, after.DataPrefix, len(chunksBefore), len(chunksAfter), levels(chunksAfter))
				}
				opts, err := a.Catalog.Optimizations(bg, id)
				if err != nil || len(opts) != 0 {
					t.Fatalf("optimizations recorded: %+v, %v", opts, err)
				}
				return
			}
			if err != nil || res.AlreadyCommitted {
				t.Fatalf("commit: %+v, %v", res, err)
			}
			if after.DataPrefix != before.DataPrefix || after.DataPrefix == lease.FreshPrefix {
				t.Fatalf("a tiered commit switched the prefix %s -> %s", before.DataPrefix, after.DataPrefix)
			}
			if len(chunksAfter) >= len(chunksBefore) {
				t.Fatalf("%d chunks after the rollup, %d before", len(chunksAfter), len(chunksBefore))
			}
			for _, c := range chunksAfter {
				if c.Level != policy.L0 {
					t.Fatalf("rollup output at levels %v, want L0 only", levels(chunksAfter))
				}
			}
			again, err := a.Commit(ctx, activities.CommitInput{TopicID: id})
			if err != nil || !again.AlreadyCommitted || again.NewPrefix != res.NewPrefix {
				t.Fatalf("retried commit: %+v, %v", again, err)
			}
			opts, err := a.Catalog.Optimizations(bg, id)
			if err != nil || len(opts) != 1 || opts[0].Policy != policy.Tiered {
				t.Fatalf("optimizations: %+v, %v; want one tiered", opts, err)
			}
		})
	}
}

func levels(chunks []catalog.Chunk) []string {
	var out []string
	for _, c := range chunks {
		out = append(out, c.Level.String())
	}
	return out
}
