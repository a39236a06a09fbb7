package activities_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/ingest"
)

// BenchmarkRewrite measures Lease + ReadSort + WriteChunks (two groups at once, as the workflow
// runs them) of one IMU-like topic, then releases the output. $STOREOPT_BENCH_CHUNKS sets the
// number of input chunks (default 200 of 5000 rows, about 100 MB of Arrow data).
func BenchmarkRewrite(b *testing.B) {
	chunks := 200
	if v, err := strconv.Atoi(os.Getenv("STOREOPT_BENCH_CHUNKS")); err == nil {
		chunks = v
	}
	a, ts := setup(b, 0, []ingest.TopicSpec{{Path: "imu", Kind: ingest.IMU, Chunks: chunks, RowsPerChunk: 5000,
		Overlap: 0.05, UnsortedFraction: 0.05, NullTimestamps: 3}})
	id := ts[0].TopicID
	b.SetBytes(ts[0].Bytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx := activities.WithRun(context.Background(), "bench", fmt.Sprintf("run-%d", i))
		if _, err := a.Lease(ctx, activities.LeaseInput{TopicID: id}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		rs, err := a.ReadSort(ctx, activities.ReadSortInput{TopicID: id, MaxChunkSizeBytes: 16 << 20})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		g := errgroup.Group{}
		g.SetLimit(2)
		for group := range rs.Groups {
			g.Go(func() error {
				_, err := a.WriteChunks(ctx, activities.WriteChunksInput{TopicID: id, Group: group})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.Logf("read-sort %v, write-chunks %v (%d groups)", t1.Sub(t0), time.Since(t1), rs.Groups)
		if _, err := a.Release(ctx, activities.ReleaseInput{TopicID: id, Reason: "benchmark"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
