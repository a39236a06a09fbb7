package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// liveTopics are topics ingested live (not finalized) with opts.
type liveTopics struct {
	opts   ingest.Options
	topics []ingest.IngestedTopic
}

// liveSequence ingests the "test" preset's topics under sequence with nChunks chunks each and
// leaves them live (not finalized).
func (e *env) liveSequence(t *testing.T, sequence string, nChunks int) liveTopics {
	t.Helper()
	opts := testPreset(t)
	opts.Sequence, opts.NoFinalize = sequence, true
	for i := range opts.Topics {
		opts.Topics[i].Chunks = nChunks
	}
	topics, err := ingest.Ingest(context.Background(), e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return liveTopics{opts: opts, topics: topics}
}

// levels returns the topic's chunks as "L<level>" strings in catalog order.
func (e *env) levels(t *testing.T, id int64) []string {
	t.Helper()
	chunks, err := e.cat.Chunks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range chunks {
		out = append(out, c.Level.String())
	}
	return out
}

// TestPoliciesGiveTheRowsOfOneFullRewrite: tiered, then leveled, then full compactions of a topic
// give the same rows in the same order as one full rewrite of the same input (ties, nulls and
// unsorted chunks included), and each policy leaves the levels it promises.
func TestPoliciesGiveTheRowsOfOneFullRewrite(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const chunks = 12
	stepsLive := e.liveSequence(t, "steps", chunks)
	wholeLive := e.liveSequence(t, "whole", chunks)
	steps, whole := stepsLive.topics, wholeLive.topics
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	// The test preset's chunks are 4 to 44 KB: with 128 KB outputs, tiered joins a few neighbours.
	const maxChunk = 128 << 10

	var before []snapshot
	for _, tp := range steps {
		before = append(before, e.snapshot(t, tp.TopicID))
	}

	// Tiered, scoped to one sequence: L0 -> L0, fewer chunks, the other sequence untouched.
	wholeBefore := e.recordTopics(t, whole)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "tiered", Scope: []string{"sequence:steps"}})
	if res.Optimized != len(steps) || res.Tiered != len(steps) || res.Failed != 0 {
		t.Fatalf("tiered run %+v, want %d tiered", res, len(steps))
	}
	e.checkUntouchedTopics(t, wholeBefore)
	for i, tp := range steps {
		lv := e.levels(t, tp.TopicID)
		if len(lv) >= chunks || slices.Contains(lv, "L1") {
			t.Fatalf("topic %s after tiered: %v, want fewer L0 chunks only", tp.Locator, lv)
		}
		after := readTopic(t, e.b, chunkKeys(t, e.cat, tp.TopicID))
		equalRows(t, tp.Locator, before[i].content, after)
		e.checkBlocks(t, tp.TopicID)
	}

	// More chunks arrive; leveled merges every L0 chunk into the sorted run.
	e.appendChunks(t, stepsLive, chunks, 4)
	res = e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "leveled", Scope: []string{"sequence:steps"}})
	if res.Leveled != len(steps) || res.Failed != 0 {
		t.Fatalf("leveled run %+v, want %d leveled", res, len(steps))
	}
	for _, tp := range steps {
		for _, l := range e.levels(t, tp.TopicID) {
			if l != "L1" {
				t.Fatalf("topic %s after leveled: %v, want L1 only", tp.Locator, e.levels(t, tp.TopicID))
			}
		}
		checkOrder(t, readTopic(t, e.b, chunkKeys(t, e.cat, tp.TopicID)))
		e.checkBlocks(t, tp.TopicID)
	}

	// Leveled again with new data; then both sequences get their last chunks, are finalized and
	// rewritten whole (full): "steps" from its L1 run and new L0 chunks, "whole" from its raw
	// chunks in one go.
	e.appendChunks(t, stepsLive, chunks+4, 3)
	res = e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "leveled", Scope: []string{"sequence:steps"}})
	if res.Leveled != len(steps) || res.Failed != 0 {
		t.Fatalf("second leveled run %+v", res)
	}
	e.appendChunks(t, stepsLive, chunks+7, 2)
	e.appendChunks(t, wholeLive, chunks, 9)
	for _, seq := range []string{"steps", "whole"} {
		if _, err := ingest.Finalize(ctx, e.cat, seq); err != nil {
			t.Fatal(err)
		}
	}
	res = e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk})
	if res.Optimized != len(steps)+len(whole) || res.Failed != 0 {
		t.Fatalf("full run %+v, want every topic", res)
	}
	for i := range steps {
		a := readTopic(t, e.b, chunkKeys(t, e.cat, steps[i].TopicID))
		b := readTopic(t, e.b, chunkKeys(t, e.cat, whole[i].TopicID))
		checkOrder(t, a)
		if len(a.ordered) != len(b.ordered) || len(a.ordered) == 0 {
			t.Fatalf("topic %s: %d rows after the steps, %d after one full rewrite", steps[i].Locator, len(a.ordered), len(b.ordered))
		}
		for r := range a.ordered {
			if a.ordered[r] != b.ordered[r] {
				t.Fatalf("topic %s: row %d differs from one full rewrite:\n steps %s\n whole %s", steps[i].Locator, r, a.ordered[r], b.ordered[r])
			}
		}
	}
	opts, err := e.cat.Optimizations(ctx, steps[0].TopicID)
	if err != nil {
		t.Fatal(err)
	}
	var applied []policy.Policy
	for _, o := range opts {
		applied = append(applied, o.Policy)
	}
	if !slices.Equal(applied, []policy.Policy{policy.Tiered, policy.Leveled, policy.Leveled, policy.Full}) {
		t.Fatalf("optimizations of %s: %v", steps[0].Locator, applied)
	}
	e.queueEmpty(t)
	saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, steps[0].Locator), "optimize-topic-full-after-levels")
}

// TestPoliciesKeepTheTieOrder: rows with equal timestamps across chunks (and null timestamps)
// keep ingestion order (source chunk, then row) through tiered, leveled and full compactions, as
// one full rewrite of the same chunks orders them: L1 rows, ingested first, come before L0 rows.
func TestPoliciesKeepTheTieOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Every chunk has rows at 10, 20 and 30 (several), an unsorted one, and null timestamps.
	batch := func(i int) [][]handRow {
		var out [][]handRow
		for c := range 3 {
			rows := rowsAt(30, 10, 20, 20, int64(10+c), 30)
			if (i+c)%2 == 0 {
				rows = append(rows, handRow{ts: nil})
			}
			out = append(out, rows)
		}
		return out
	}
	stepsID, stepsPrefix := makeLiveTopic(t, e.cat, e.b, "ties_steps/t")
	wholeID, wholePrefix := makeLiveTopic(t, e.cat, e.b, "ties_whole/t")
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	run := func(p string, want func(workflows.StoreOptimizerResult) bool) {
		t.Helper()
		res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 1 << 20, Policy: p, Scope: []string{"sequence:ties_steps"},
			BatchTopics: historyBatchTopics()})
		if !want(res) || res.Failed != 0 {
			t.Fatalf("%s run %+v", p, res)
		}
		if p == "leveled" { // the topic is one sorted run again (tiered leaves overlapping L0 chunks)
			checkOrder(t, readTopic(t, e.b, chunkKeys(t, e.cat, stepsID)))
		}
	}
	from := 0
	for round, p := range []string{"tiered", "leveled", "tiered", "leveled", "leveled"} {
		addHandChunks(t, e.cat, e.b, stepsID, stepsPrefix, from, batch(round))
		addHandChunks(t, e.cat, e.b, wholeID, wholePrefix, from, batch(round))
		from += 3
		if p == "tiered" {
			run(p, func(r workflows.StoreOptimizerResult) bool { return r.Tiered == 1 })
		} else {
			run(p, func(r workflows.StoreOptimizerResult) bool { return r.Leveled == 1 })
		}
		if round < 2 { // the replay test's histories of both policies
			saveHistory(t, e.srv.Client, workflows.TopicWorkflowID(e.cfg.TaskQueue, "ties_steps/t"), "optimize-topic-"+p)
			saveHistory(t, e.srv.Client, e.lastRun, "store-optimizer-"+p)
		}
	}
	addHandChunks(t, e.cat, e.b, stepsID, stepsPrefix, from, batch(9))
	addHandChunks(t, e.cat, e.b, wholeID, wholePrefix, from, batch(9))
	for _, id := range []int64{stepsID, wholeID} {
		if err := e.cat.FinalizeTopic(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 1 << 20}); res.Optimized != 2 || res.Failed != 0 {
		t.Fatalf("full run %+v", res)
	}
	a := readTopic(t, e.b, chunkKeys(t, e.cat, stepsID))
	b := readTopic(t, e.b, chunkKeys(t, e.cat, wholeID))
	checkOrder(t, a)
	if !slices.Equal(a.ordered, b.ordered) || len(a.ordered) == 0 {
		t.Fatalf("steps and one full rewrite differ:\n%v\n%v", a.ordered, b.ordered)
	}
}

// appendChunks appends n more chunks (ordinals from, from+1, …) to each live topic: the chunks a
// longer recording of the same preset would have had (same seed), written into the topic's
// ingestion prefix.
func (e *env) appendChunks(t *testing.T, lt liveTopics, from, n int) {
	t.Helper()
	if err := ingest.Append(context.Background(), e.cat, e.b, lt.opts, lt.topics, from, n); err != nil {
		t.Fatal(err)
	}
}

// checkBlocks checks the block index of every chunk written by a compaction: its blocks add up
// to the chunk's rows, lie inside the object and inside the chunk's time range.
func (e *env) checkBlocks(t *testing.T, id int64) {
	t.Helper()
	chunks, err := e.cat.Chunks(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if c.Blocks == nil {
			continue // an ingested chunk: no block index
		}
		var rows, nulls int64
		for _, b := range c.Blocks {
			rows += b.Rows
			nulls += b.Nulls
			if b.Offset < 4 || b.Offset+b.Length > c.SizeBytes {
				t.Fatalf("chunk %s: block %+v outside the object of %d bytes", c.ObjectKey, b, c.SizeBytes)
			}
			if b.MinTs != nil && (c.MinTimestampNs == nil || *b.MinTs < *c.MinTimestampNs || *b.MaxTs > *c.MaxTimestampNs) {
				t.Fatalf("chunk %s: block range [%d, %d] outside the chunk's", c.ObjectKey, *b.MinTs, *b.MaxTs)
			}
			if c.Level == policy.L0 && b.Source == "" {
				t.Fatalf("chunk %s: rollup block without its source chunk", c.ObjectKey)
			}
		}
		if rows != c.RowCount || nulls != c.TimestampNullCount {
			t.Fatalf("chunk %s: blocks hold %d rows (%d null timestamps), chunk %d (%d)", c.ObjectKey, rows, nulls, c.RowCount, c.TimestampNullCount)
		}
	}
}

// recordTopics records the catalog state and objects of topics, to check later that a run did
// not touch them.
func (e *env) recordTopics(t *testing.T, topics []ingest.IngestedTopic) []topicRecord {
	t.Helper()
	var out []topicRecord
	for _, tp := range topics {
		out = append(out, e.recordTopic(t, tp.TopicID))
	}
	return out
}

func (e *env) checkUntouchedTopics(t *testing.T, records []topicRecord) {
	t.Helper()
	for _, r := range records {
		e.checkUntouched(t, r)
	}
}

// TestLeveledReadsOnlyTheOverlappingRun: a leveled compaction of a topic with a run of at least
// 100 L1 chunks and 20 new L0 chunks reads only the L1 chunks the new data overlaps (counted from the bytes the
// worker read from the store).
func TestLeveledReadsOnlyTheOverlappingRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts := testPreset(t)
	opts.Sequence, opts.NoFinalize = "cost", true
	opts.Topics = []ingest.TopicSpec{{Path: "sensors/imu", Kind: ingest.IMU, Chunks: 100, RowsPerChunk: 200}}
	topics := e.ingest(t, opts)
	live := liveTopics{opts: opts, topics: topics}
	id := topics[0].TopicID
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	// Outputs of three quarters of an ingested chunk's bytes: more than 100 L1 chunks.
	chunks, err := e.cat.Chunks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	maxChunk := chunks[0].SizeBytes * 3 / 4
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "leveled", MinChunks: 1})
	if res.Leveled != 1 {
		t.Fatalf("first leveled run %+v", res)
	}
	run, err := e.cat.Chunks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(run) < 100 {
		t.Fatalf("%d L1 chunks after the first leveled compaction, want at least 100", len(run))
	}
	var runBytes int64
	for _, c := range run {
		runBytes += c.SizeBytes
	}
	e.appendChunks(t, live, 100, 20)
	var newBytes int64
	all, err := e.cat.Chunks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all[len(run):] {
		newBytes += c.SizeBytes
	}
	// The worker runs in this process: store.ObserveReads sees every object it reads.
	var mu sync.Mutex
	readL1 := map[string]int64{} // bytes read per L1 chunk object
	var readOther int64
	isL1 := map[string]bool{}
	for _, c := range run {
		isL1[c.ObjectKey] = true
	}
	stop := store.ObserveReads(func(key string, n int64) {
		mu.Lock()
		defer mu.Unlock()
		if isL1[key] {
			readL1[key] += n
		} else {
			readOther += n
		}
	})
	res = e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "leveled", MinChunks: 1})
	stop()
	if res.Leveled != 1 || res.Failed != 0 {
		t.Fatalf("second leveled run %+v", res)
	}
	t.Logf("second leveled compaction read %d of the %d L1 chunks, %d bytes of other objects (new L0 chunks %d bytes, layouts, outputs' footers); plan input %d bytes",
		len(readL1), len(run), readOther, newBytes, res.InputBytes)
	// The new chunks continue the recording: they overlap the run's last chunk at most, plus a
	// small last chunk merged so the run does not end in a sliver: at most two L1 chunks read.
	if len(readL1) > 2 {
		t.Fatalf("leveled compaction read %d of the %d L1 chunks, want at most the last two", len(readL1), len(run))
	}
	for key := range readL1 {
		if key != run[len(run)-1].ObjectKey && key != run[len(run)-2].ObjectKey {
			t.Fatalf("leveled compaction read L1 chunk %s, which the new data does not overlap", key)
		}
	}
	if res.InputBytes > newBytes+2*maxChunk {
		t.Fatalf("plan read %d bytes, want the %d new bytes plus at most two L1 chunks", res.InputBytes, newBytes)
	}
	checkOrder(t, readTopic(t, e.b, chunkKeys(t, e.cat, id)))
}

var _ = fmt.Sprint
var _ = catalog.ErrNotFound

// TestCleanupDeletesReplacedChunks: the objects of chunks replaced by tiered and leveled
// compactions of a live topic (inside its ingestion prefix, which stays referenced) are deleted by
// the cleanup once the retention has passed, and never an object a chunk row names; a tiered
// output prefix that no chunk lives in any more goes as a whole.
func TestCleanupDeletesReplacedChunks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lt := e.liveSequence(t, "clean", 8)
	id := lt.topics[0].TopicID // the IMU topic
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	before := readTopic(t, e.b, chunkKeys(t, e.cat, id))
	ingestedKeys := chunkKeys(t, e.cat, id)

	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 128 << 10, Policy: "tiered", Scope: []string{"topic:" + lt.topics[0].Locator}}); res.Tiered != 1 {
		t.Fatalf("tiered run %+v", res)
	}
	tieredKeys := chunkKeys(t, e.cat, id)
	replaced := 0
	for _, k := range ingestedKeys {
		if !slices.Contains(tieredKeys, k) {
			replaced++
		}
	}
	// Inside the retention nothing goes.
	res := e.runCleanup(t, time.Hour)
	if res.ReplacedDeleted != 0 || res.ReplacedPending != replaced {
		t.Fatalf("cleanup inside the retention: %+v, want %d replaced objects pending", res, replaced)
	}
	for _, k := range ingestedKeys {
		if ok, err := e.b.Exists(ctx, k); err != nil || !ok {
			t.Fatalf("object %s gone inside the retention (err %v)", k, err)
		}
	}
	res = e.runCleanup(t, 0)
	if res.ReplacedDeleted != replaced || res.ReplacedFailed != 0 {
		t.Fatalf("cleanup after the retention: %+v, want %d replaced objects deleted", res, replaced)
	}
	for _, k := range ingestedKeys {
		ok, err := e.b.Exists(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if ok != slices.Contains(tieredKeys, k) {
			t.Fatalf("object %s: exists %t, but a chunk row names it: %t", k, ok, slices.Contains(tieredKeys, k))
		}
	}
	topic, err := e.cat.TopicByLocator(ctx, lt.topics[0].Locator)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.b.Exists(ctx, topic.DataPrefix+"/metadata.json"); err != nil || !ok {
		t.Fatalf("the live topic's metadata.json is gone (err %v)", err)
	}
	equalRows(t, lt.topics[0].Locator, before, readTopic(t, e.b, tieredKeys))

	// Leveled replaces the tiered outputs: their objects go, and so does the prefix they lived in.
	e.appendChunks(t, lt, 8, 2)
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 128 << 10, Policy: "leveled", Scope: []string{"topic:" + lt.topics[0].Locator}}); res.Leveled != 1 {
		t.Fatalf("leveled run %+v", res)
	}
	leveledKeys := chunkKeys(t, e.cat, id)
	res = e.runCleanup(t, 0)
	if res.ReplacedFailed != 0 || res.DeleteFailed != 0 {
		t.Fatalf("cleanup after leveled: %+v", res)
	}
	for _, k := range tieredKeys {
		ok, err := e.b.Exists(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if ok != slices.Contains(leveledKeys, k) {
			t.Fatalf("object %s after leveled and cleanup: exists %t, named by a chunk row %t", k, ok, slices.Contains(leveledKeys, k))
		}
	}
	checkOrder(t, readTopic(t, e.b, leveledKeys))
}

// TestStarterLevelsCommands drives the levels through the starter binary as an operator does:
// ingest a live sequence, a scoped auto pass, report --levels, read a window (--json), finalize,
// and clear usage errors for a bad policy or scope.
func TestStarterLevelsCommands(t *testing.T) {
	e := newEnv(t)
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	run := func(want int, args ...string) string {
		t.Helper()
		out, code := e.starter(t, args...)
		if code != want {
			t.Fatalf("starter %v exited %d, want %d:\n%s", args, code, want, out)
		}
		return out
	}
	run(0, "ingest", "--preset", "test", "--sequence", "cli", "--live", "3s", "--chunk-interval", "300ms", "--no-finalize")
	out := run(0, "report", "--levels")
	if !strings.Contains(out, "cli/sensors/imu") || !strings.Contains(out, "false") {
		t.Fatalf("report --levels before:\n%s", out)
	}
	out = run(0, "store-optimizer", "--policy", "auto", "--min-chunks", "2", "--scope", "sequence:cli", "--max-chunk-size", "200000")
	if !regexp.MustCompile(`optimized\s+3`).MatchString(out) {
		t.Fatalf("auto pass:\n%s", out)
	}
	out = run(0, "report", "--levels")
	t.Logf("report --levels:\n%s", out)

	topic, err := e.cat.TopicByLocator(context.Background(), "cli/sensors/imu")
	if err != nil {
		t.Fatal(err)
	}
	if topic.MinTimestampNs == nil {
		t.Fatal("live topic without a timestamp range")
	}
	from, to := *topic.MinTimestampNs, *topic.MaxTimestampNs+1
	out = run(0, "read", "--topic", "cli/sensors/imu", "--from", fmt.Sprint(from), "--to", fmt.Sprint(to), "--json")
	var st struct {
		Rows          int64 `json:"rows"`
		Blocks        int64 `json:"blocks"`
		BlocksByPages int64 `json:"blocks_by_pages"`
		BytesFetched  int64 `json:"bytes_fetched"`
		Requests      int64 `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st); err != nil {
		t.Fatalf("read --json: %v\n%s", err, out)
	}
	if st.Rows == 0 || st.Blocks == 0 || st.BytesFetched <= 0 || st.Requests <= 0 || st.BlocksByPages > st.Blocks {
		t.Fatalf("read --json: %s", out)
	}
	run(0, "finalize", "--sequence", "cli")
	run(2, "store-optimizer", "--policy", "sideways")
	out = run(2, "store-optimizer", "--scope", "tenant:x")
	if !strings.Contains(out, "sequence:NAME") {
		t.Fatalf("bad scope message:\n%s", out)
	}
	run(2, "read", "--topic", "cli/sensors/imu", "--from", "10", "--to", "5")
}
