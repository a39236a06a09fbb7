package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// TestRunPassOptimizesEveryTopic runs the whole application on real parts: a dev server, a
// worker started by RunWorker on a real catalog and file store, the "test" dataset, and one pass
// started by RunPass. Every topic ends up optimized, with the same rows in fewer chunks that a
// reader can read, and a second pass finds nothing to do.
func TestRunPassOptimizesEveryTopic(t *testing.T) {
	srv := testenv.StartDevServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dbURL := pgtest.NewDatabase(t)
	bucket, storeURL := testenv.NewBucket(t)
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	opts, err := ingest.Preset("test", 1)
	if err != nil {
		t.Fatal(err)
	}
	ingested, err := ingest.Ingest(ctx, cat, bucket, opts)
	if err != nil {
		t.Fatal(err)
	}

	cfg := srv.Config(dbURL, storeURL)
	testenv.StartWorker(t, srv.Client, cfg)

	res, err := app.RunPass(ctx, srv.Client, cfg, app.PassOptions{MaxChunkSizeBytes: app.DefaultMaxChunkSizeBytes})
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	if err := app.WriteSummary(&summary, "test-run", res); err != nil {
		t.Fatal(err)
	}
	if res.Optimized != len(ingested) || res.Failed != 0 || res.Skipped != 0 {
		t.Fatalf("pass result: want %d optimized, none failed or skipped:\n%s", len(ingested), summary.String())
	}
	var rows int64
	for _, it := range ingested {
		rows += it.Rows
	}
	if res.Rows != rows {
		t.Errorf("pass rewrote %d rows, %d were ingested", res.Rows, rows)
	}

	reports, err := app.Report(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(ingested) {
		t.Fatalf("report lists %d topics after the pass, %d were ingested", len(reports), len(ingested))
	}
	for i, r := range reports {
		before := ingested[i]
		if r.Locator != before.Locator || r.OptimizedAt == nil || r.DataPrefix == before.Prefix || r.Chunks >= before.Chunks || r.Rows != before.Rows {
			t.Errorf("topic %s after the pass: %+v; before: %+v", r.Locator, r, before)
		}
		st, err := app.ReadObjects(ctx, bucket, r.ChunkKeys, 0)
		if err != nil {
			t.Errorf("read optimized %s: %v", r.Locator, err)
		} else if st.Rows != before.Rows {
			t.Errorf("optimized %s reads %d rows, want %d", r.Locator, st.Rows, before.Rows)
		}
	}

	again, err := app.RunPass(ctx, srv.Client, cfg, app.PassOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Optimized != 0 || again.Failed != 0 {
		summary.Reset()
		_ = app.WriteSummary(&summary, "second", again)
		t.Errorf("second pass should find nothing to do:\n%s", summary.String())
	}
}

func TestWriteSummaryListsFailures(t *testing.T) {
	var buf bytes.Buffer
	res := workflowsResult()
	if err := app.WriteSummary(&buf, "storeopt-run-x", res); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"optimized  2", "failed     2", "run_7/imu", "chunk tp_1/data/00042.parquet: no column", "1 more failures"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nsecond line") {
		t.Errorf("multi-line error not folded:\n%s", out)
	}
}

// A store fault on the last topics of a run leaves none unattempted: the summary then has no
// "not attempted 0 (… they stay queued …)" line, only the store fault itself.
func TestWriteSummaryOmitsNotAttemptedWhenZero(t *testing.T) {
	var buf bytes.Buffer
	res := workflowsResult()
	res.StoreFault = "store file:///data/store: read-only file system; mount it read-write"
	if err := app.WriteSummary(&buf, "storeopt-run-x", res); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "not attempted") {
		t.Errorf("summary says \"not attempted\" with a count of 0:\n%s", out)
	}
	if !strings.Contains(out, "store fault: 3 topics in a row failed the same way") {
		t.Errorf("summary lacks the store fault:\n%s", out)
	}
}

func TestWriteSummarySaysStoreFaultOnce(t *testing.T) {
	var buf bytes.Buffer
	res := workflowsResult()
	res.StoreFault = "store file:///data/store: read-only file system (mkdir /data/store/tp_x: read-only file system); mount it read-write"
	res.NotAttempted = 96
	for _, l := range []string{"run_7/gps", "run_7/cam"} {
		res.Failures = append(res.Failures, workflows.TopicFailure{Locator: l, Error: "topic " + l +
			": write-chunks group 0: store file:///data/store: read-only file system (mkdir /data/store/tp_" + l + ": read-only file system); mount it read-write"})
		res.Failed++
	}
	if err := app.WriteSummary(&buf, "storeopt-run-x", res); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"not attempted  96 (the run stopped on a store fault", "store fault: 3 topics in a row failed the same way",
		"  " + res.StoreFault + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "read-only file system"); n != 2 {
		t.Errorf("store fault said %d times, want once:\n%s", n/2, out)
	}
	if !strings.Contains(out, "run_7/cam  topic run_7/cam: write-chunks group 0: the store fault above\n") ||
		!strings.Contains(out, "chunk tp_1/data/00042.parquet: no column") {
		t.Errorf("failed topics not listed, or the store fault not in short:\n%s", out)
	}
}
