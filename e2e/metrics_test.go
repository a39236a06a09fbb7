package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/deploy/grafana"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/metrics/metricstest"
)

// TestMetricsAfterAPass runs a pass over known topics on a worker serving metrics (real dev
// server, PostgreSQL, file store), scrapes /metrics over HTTP and checks storeopt's counters
// exactly against what the catalog says was done: the three simulator topics optimized (chunks,
// rows and object bytes replaced and written), a fourth topic with a corrupt chunk failed with an
// input error and quarantined (--quarantine-after 1), one execution of lease, read-sort and
// commit per topic that got that far and one write-chunks execution per output group, none
// failed but the bad topic's read-sort, the pool limit as configured and nothing left reserved;
// then a cleanup pass, whose deletions the metrics count as its report does. The Temporal SDK's
// metrics are served on the same endpoint, every series the Grafana dashboard queries is in the
// scrape, and Prometheus' promtool accepts the exposition.
func TestMetricsAfterAPass(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts := testPreset(t)
	ingested := e.ingest(t, opts)
	bad := makeTopic(t, e.cat, e.b, "metrics/bad", [][]handRow{rowsAt(1, 2, 3), rowsAt(4, 5, 6)})
	badKey := chunkKeys(t, e.cat, bad)[1]
	data, err := e.b.ReadAll(ctx, badKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.b.WriteAll(ctx, badKey, truncateFooter(data), nil); err != nil {
		t.Fatal(err)
	}
	var inChunks, rows, inBytes int64
	for _, it := range ingested {
		for _, c := range chunksOf(t, e, it.TopicID) {
			inChunks++
			rows += c.RowCount
			inBytes += c.SizeBytes
		}
	}

	const pool = 64 << 20
	cfg := e.cfg
	cfg.MemoryPoolBytes = pool
	cfg.QuarantineAfter = 1
	url, _ := testenv.StartWorkerWithMetrics(t, cfg)
	writtenBefore := metricstest.Scrape(t, url).Value(t, "storeopt_bytes_written_total", nil)
	// A topic workflow per topic (no batches of tiny topics): the bad topic's failure is a failed
	// activity and workflow, whose SDK series the dashboard shows.
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 32 << 10, BatchTopics: 1})
	if res.Optimized != 3 || res.Failed != 1 {
		t.Fatalf("run result %+v, want 3 optimized and 1 failed", res)
	}
	if n, err := e.cat.QuarantinedCount(ctx); err != nil || n != 1 {
		t.Fatalf("%d topics quarantined (%v), want the failed one", n, err)
	}
	var outChunks, outBytes, metadataBytes int64
	for _, it := range ingested {
		for _, c := range chunksOf(t, e, it.TopicID) {
			outChunks++
			outBytes += c.SizeBytes
		}
		tp, err := e.cat.Topic(ctx, it.TopicID)
		if err != nil {
			t.Fatal(err)
		}
		md, err := e.b.Attributes(ctx, tp.DataPrefix+"/metadata.json")
		if err != nil {
			t.Fatal(err)
		}
		metadataBytes += md.Size
	}

	s := metricstest.Scrape(t, url)
	full := map[string]string{"policy": "full"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"storeopt_topics_optimized_total", full, 3},
		{"storeopt_topics_optimized_total", nil, 3},
		{"storeopt_input_chunks_total", full, float64(inChunks)},
		{"storeopt_output_chunks_total", full, float64(outChunks)},
		{"storeopt_rows_total", full, float64(rows)},
		{"storeopt_input_bytes_total", full, float64(inBytes)},
		{"storeopt_output_bytes_total", full, float64(outBytes)},
		{"storeopt_topics_failed_total", map[string]string{"policy": "full", "error_type": activities.ErrTypeInput}, 1},
		{"storeopt_topics_failed_total", nil, 1},
		{"storeopt_topics_quarantined_total", full, 1},
		{"storeopt_topics_skipped_total", nil, 0},
		{"storeopt_step_duration_seconds_count", map[string]string{"step": metrics.StepLease, "outcome": "ok"}, 4},
		{"storeopt_step_duration_seconds_count", map[string]string{"step": metrics.StepReadSort, "outcome": "ok"}, 3},
		{"storeopt_step_duration_seconds_count", map[string]string{"step": metrics.StepReadSort, "outcome": "error"}, 1},
		{"storeopt_step_duration_seconds_count", map[string]string{"step": metrics.StepWriteChunks, "outcome": "ok"}, float64(outChunks)},
		{"storeopt_step_duration_seconds_count", map[string]string{"step": metrics.StepCommit, "outcome": "ok"}, 3},
		{"storeopt_step_duration_seconds_count", map[string]string{"outcome": "error"}, 1},
		// The preset's chunks overlap in time: every output is rewritten.
		{"storeopt_written_chunks_total", map[string]string{"path": metrics.PathRewrite}, float64(outChunks)},
		{"storeopt_written_chunks_total", map[string]string{"path": metrics.PathCopy}, 0},
		{"storeopt_memory_pool_limit_bytes", nil, pool},
		{"storeopt_memory_pool_reserved_bytes", nil, 0},
	} {
		if got := s.Value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if sum := s.Value(t, "storeopt_step_duration_seconds_sum", map[string]string{"step": metrics.StepWriteChunks}); sum <= 0 {
		t.Errorf("write-chunks took %v seconds in all", sum)
	}
	// Other tests of this package may write in the same process: the counter is a lower bound.
	if got := s.Value(t, "storeopt_bytes_written_total", nil) - writtenBefore; got < float64(outBytes+metadataBytes) {
		t.Errorf("bytes written grew by %v, want at least the %d bytes of the outputs and metadata copies", got, outBytes+metadataBytes)
	}
	if got := s.Value(t, "storeopt_bytes_read_total", nil); got < float64(inBytes) {
		t.Errorf("bytes read %v, want at least the %d bytes of the inputs", got, inBytes)
	}

	// Cleanup: its deletions are counted as the store saw them go (its report must agree; both
	// come from the code under test, the store's listing before and after does not).
	keysBefore, tempBefore := listKeys(t, e), tempKeys(t, e)
	cres := e.runCleanup(t, 0)
	keysAfter, tempAfter := listKeys(t, e), tempKeys(t, e)
	gone := map[string]int{} // top-level prefix → its objects deleted
	for k := range keysBefore {
		if !keysAfter[k] {
			prefix, _, _ := strings.Cut(k, "/")
			gone[prefix]++
		}
	}
	left := map[string]bool{} // top-level prefixes still holding objects
	for k := range keysAfter {
		prefix, _, _ := strings.Cut(k, "/")
		left[prefix] = true
	}
	var goneObjects, gonePrefixes, goneTemp int
	for prefix, n := range gone {
		goneObjects += n
		if !left[prefix] {
			gonePrefixes++
		}
	}
	for k := range tempBefore {
		if !tempAfter[k] {
			goneTemp++
		}
	}
	if gonePrefixes == 0 || goneObjects == 0 {
		t.Fatalf("cleanup deleted nothing from the store (report %+v)", cres)
	}
	s = metricstest.Scrape(t, url)
	for _, c := range []struct {
		kind          string
		store, report int
	}{
		{metrics.CleanupPrefixes, gonePrefixes, cres.Deleted},
		{metrics.CleanupObjects, goneObjects, cres.DeletedObjects},
		{metrics.CleanupTempFiles, goneTemp, cres.TempFilesDeleted},
	} {
		got := s.Value(t, "storeopt_cleanup_deleted_total", map[string]string{"kind": c.kind})
		if got != float64(c.store) || c.report != c.store {
			t.Errorf("cleanup deleted %s: metric %v, report %d, gone from the store %d", c.kind, got, c.report, c.store)
		}
	}
	if got := s.Value(t, "storeopt_cleanup_failed_total", nil); got != float64(cres.DeleteFailed+cres.TempFilesFailed) || got != 0 {
		t.Errorf("cleanup failures: metric %v, report %+v, want none", got, cres)
	}

	// The Temporal SDK's metrics (reported every second) on the same endpoint.
	sdkWanted := map[string]map[string]string{
		"temporal_workflow_completed_total":                 {"workflow_type": "OptimizeTopicWorkflow"},
		"temporal_activity_execution_latency_seconds_count": {"activity_type": "WriteChunks"},
	}
	s = scrapeUntil(t, url, 10*time.Second, func(s metricstest.Samples) bool {
		for name, labels := range sdkWanted {
			if _, ok := s.Sum(name, labels); !ok {
				return false
			}
		}
		completed, _ := s.Sum("temporal_workflow_completed_total", sdkWanted["temporal_workflow_completed_total"])
		return completed >= 3
	})
	if got := s.Value(t, "temporal_workflow_completed_total", sdkWanted["temporal_workflow_completed_total"]); got != 3 {
		t.Errorf("SDK: %v topic workflows completed, want 3", got)
	}

	// Every series the dashboard queries is served.
	dash, err := os.ReadFile("../deploy/grafana/" + grafana.File)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := grafana.Queries(dash)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	checked := 0
	for _, q := range queries {
		for _, name := range grafana.MetricNames(q.Expr) {
			checked++
			if !s.Has(name) {
				missing = append(missing, q.Panel+": "+name)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("found no series in the dashboard's %d queries: nothing was checked", len(queries))
	}
	if len(missing) > 0 {
		t.Errorf("the dashboard queries series the worker does not serve:\n%s", strings.Join(slices.Compact(missing), "\n"))
	}

	// Prometheus' own linter accepts the exposition.
	body := scrapeBody(t, url)
	cmd := exec.Command(testenv.Promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// chunksOf returns the topic's chunks.
func chunksOf(t *testing.T, e *env, topicID int64) []catalog.Chunk {
	t.Helper()
	cs, err := e.cat.Chunks(context.Background(), topicID)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// scrapeUntil scrapes url until ok accepts the samples, failing after timeout.
func scrapeUntil(t *testing.T, url string, timeout time.Duration, ok func(metricstest.Samples) bool) metricstest.Samples {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := metricstest.Scrape(t, url)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics at %s not as expected after %s; families: %v", url, timeout, s.Names())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrapeBody returns the text of one scrape.
func scrapeBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
