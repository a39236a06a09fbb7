package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/metrics"
	"github.com/storeopt/storeopt/metrics/metricstest"
)

// debtCounts is the compaction debt counted from the chunk rows themselves (not through the
// catalog's view): a chunk under its topic's ingestion prefix is one ingestion wrote, the others
// are compaction outputs.
type debtCounts struct {
	l0Chunks, l0Bytes, uncompacted, maxTopic, overTrigger float64
	byState                                               map[string]float64
	oldestAge                                             float64 // seconds
	written                                               float64
}

func countDebt(t *testing.T, e *env, topicIDs []int64, minChunks int, th catalog.WriteThresholds) debtCounts {
	t.Helper()
	ctx := context.Background()
	d := debtCounts{byState: map[string]float64{}}
	var oldest time.Time
	for _, id := range topicIDs {
		tp, err := e.cat.Topic(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var l0 int
		for _, c := range chunksOf(t, e, id) {
			if !strings.HasPrefix(c.ObjectKey, tp.DataPrefix+"/") {
				d.written += float64(c.SizeBytes) // outputs of tiered compactions stay L0 here
			}
			if c.Level != 0 {
				continue
			}
			l0++
			d.l0Bytes += float64(c.SizeBytes)
			if strings.HasPrefix(c.ObjectKey, tp.DataPrefix+"/") {
				d.uncompacted++
				var at time.Time
				if err := e.cat.Pool.QueryRow(ctx, `SELECT ingested_at FROM chunks WHERE id = $1`, c.ID).Scan(&at); err != nil {
					t.Fatal(err)
				}
				if oldest.IsZero() || at.Before(oldest) {
					oldest = at
				}
			}
		}
		d.l0Chunks += float64(l0)
		d.maxTopic = max(d.maxTopic, float64(l0))
		if l0 >= minChunks {
			d.overTrigger++
		}
		switch {
		case l0 >= th.StopL0Chunks:
			d.byState["stop"]++
		case l0 >= th.DelayL0Chunks:
			d.byState["delay"]++
		default:
			d.byState["ok"]++
		}
	}
	if !oldest.IsZero() {
		d.oldestAge = time.Since(oldest).Seconds()
	}
	return d
}

// checkDebtMetrics scrapes the worker until its debt gauges equal the counts (they are measured
// at most metrics.DebtMaxAge apart) and fails naming every series that differs.
func checkDebtMetrics(t *testing.T, url, when string, want debtCounts, ingested float64) {
	t.Helper()
	var diffs []string
	compare := func(s metricstest.Samples) bool {
		diffs = nil
		check := func(name string, labels map[string]string, want, tolerance float64) {
			got, ok := s.Sum(name, labels)
			if !ok || math.Abs(got-want) > tolerance {
				diffs = append(diffs, fmt.Sprintf("%s%v = %v (served %t), the catalog's rows say %v", name, labels, got, ok, want))
			}
		}
		check("storeopt_debt_up", nil, 1, 0)
		check("storeopt_debt_l0_chunks", nil, want.l0Chunks, 0)
		check("storeopt_debt_l0_bytes", nil, want.l0Bytes, 0)
		check("storeopt_debt_uncompacted_chunks", nil, want.uncompacted, 0)
		check("storeopt_debt_max_topic_l0_chunks", nil, want.maxTopic, 0)
		check("storeopt_debt_topics_over_trigger", nil, want.overTrigger, 0)
		for _, st := range catalog.WriteStates {
			check("storeopt_debt_topics", map[string]string{"write_state": st}, want.byState[st], 0)
		}
		check("storeopt_debt_oldest_uncompacted_age_seconds", nil, want.oldestAge, metrics.DebtMaxAge.Seconds()+2)
		check("storeopt_debt_ingested_bytes", nil, ingested, 0)
		check("storeopt_debt_compaction_written_bytes", nil, want.written, 0)
		check("storeopt_debt_write_amplification", nil, want.written/ingested, 1e-9)
		return len(diffs) == 0
	}
	deadline := time.Now().Add(3 * metrics.DebtMaxAge)
	for !compare(metricstest.Scrape(t, url)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the worker's debt metrics disagree with the catalog:\n%s", when, strings.Join(diffs, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDebtMetricsAgreeWithTheCatalog ingests live topics, then checks the worker's compaction
// debt gauges against the chunk rows counted one by one: before a run (everything uncompacted,
// the write signal delaying one topic and stopping another), after a run under auto (each topic
// merged into its sorted run: no L0 chunk left, bytes written per byte ingested), and
// after more chunks arrive. The run's own result carries the debt it started from.
func TestDebtMetricsAgreeWithTheCatalog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts, err := ingest.Preset("test", 1) // IMU 10 chunks, GPS 8, camera 6
	if err != nil {
		t.Fatal(err)
	}
	opts.NoFinalize = true
	topics, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var ingested float64
	for _, tp := range topics {
		ids = append(ids, tp.TopicID)
		ingested += float64(tp.Bytes)
	}

	th := catalog.WriteThresholds{DelayL0Chunks: 8, StopL0Chunks: 10, MaxDelay: time.Second}
	cfg := e.cfg
	cfg.WriteSignal = th
	url, _ := testenv.StartWorkerWithMetrics(t, cfg)
	before := countDebt(t, e, ids, 2, th)
	if before.byState["stop"] != 1 || before.byState["delay"] != 1 || before.uncompacted != 24 {
		t.Fatalf("the test's premise: %+v", before)
	}
	checkDebtMetrics(t, url, "before a run", before, ingested)

	res := e.runPass(t, app.PassOptions{Policy: "auto", MinChunks: 2})
	if res.Leveled != 3 {
		t.Fatalf("run result %+v, want 3 topics leveled", res)
	}
	if d := res.Debt; d == nil || d.L0Chunks != 24 || d.UncompactedChunks != 24 || d.TopicsOverTrigger != 3 ||
		d.MaxTopicL0Chunks != 10 || d.DelayedTopics != 1 || d.StoppedTopics != 1 || d.IngestedBytes != int64(ingested) ||
		d.CompactionWrittenBytes != 0 {
		t.Errorf("the run's debt at its start: %+v, want the catalog's before it", d)
	}
	after := countDebt(t, e, ids, 2, th)
	if after.uncompacted != 0 || after.l0Chunks != 0 || after.written != float64(res.OutputBytes) {
		t.Fatalf("after the run: %+v, run result %+v", after, res)
	}
	checkDebtMetrics(t, url, "after a run", after, ingested)

	// More chunks for the IMU topic: uncompacted again, over the trigger again.
	if err := ingest.Append(ctx, e.cat, e.b, opts, topics[:1], 10, 3); err != nil {
		t.Fatal(err)
	}
	var appended float64
	for _, c := range chunksOf(t, e, ids[0]) {
		if c.Ordinal >= 10 {
			appended += float64(c.SizeBytes)
		}
	}
	checkDebtMetrics(t, url, "after appends", countDebt(t, e, ids, 2, th), ingested+appended)
}

// TestAutoRunTakesTheWorstTopicsFirst: a run under auto starts its topics in order of debt (the
// most L0 chunks first), not in topic ID order; with one topic in flight at a time the commits
// come in that order.
func TestAutoRunTakesTheWorstTopicsFirst(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	counts := []int{3, 9, 5, 7} // topic ID order is not debt order
	opts := ingest.Options{Sequence: "backlog", Seed: 3, NoFinalize: true}
	for i, n := range counts {
		opts.Topics = append(opts.Topics, ingest.TopicSpec{Path: fmt.Sprintf("gps_%d", i), Kind: ingest.GPS, Chunks: n, RowsPerChunk: 5})
	}
	topics, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{Policy: "auto", MinChunks: 2, BatchTopics: 1, MaxConcurrentTopics: 1, MaxConcurrentSmallTopics: 1})
	if res.Leveled != len(counts) {
		t.Fatalf("run result %+v, want every topic leveled", res)
	}
	saveHistory(t, e.srv.Client, e.lastRun, "store-optimizer-debt-first")
	rows, err := e.cat.Pool.Query(ctx, `SELECT t.locator FROM optimizations o JOIN topics t ON t.id = o.topic_id ORDER BY o.committed_at, o.id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{topics[1].Locator, topics[3].Locator, topics[2].Locator, topics[0].Locator} // 9, 7, 5, 3 chunks
	if !slices.Equal(got, want) {
		t.Errorf("commit order %v, want the most L0 chunks first %v", got, want)
	}
}
