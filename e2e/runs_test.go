package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// TestCorruptChunkFailsOnlyItsTopic replaces one chunk of a topic with a corrupt Parquet file
// from the shared test data's bad_data (sharedDataDir; refused for having no timestamp_ns
// column, see arrowRefusal): that topic is reported with its locator and the chunk's error and
// left exactly as it was (catalog, objects, no partial output, not queued), while the other
// topics of the run are optimized.
func TestCorruptChunkFailsOnlyItsTopic(t *testing.T) {
	bad, err := os.ReadFile(filepath.Join(sharedDataDir(t, "bad_data"), "ARROW-GH-41321.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	ctx := context.Background()
	opts := testPreset(t)
	ingested := e.ingest(t, opts)
	good := []snapshot{e.snapshot(t, ingested[0].TopicID), e.snapshot(t, ingested[2].TopicID)}
	victim := ingested[1]
	keys := chunkKeys(t, e.cat, victim.TopicID)
	if err := e.b.WriteAll(ctx, keys[3], bad, nil); err != nil {
		t.Fatal(err)
	}
	topicBefore, err := e.cat.Topic(ctx, victim.TopicID)
	if err != nil {
		t.Fatal(err)
	}
	chunksBefore, err := e.cat.Chunks(ctx, victim.TopicID)
	if err != nil {
		t.Fatal(err)
	}
	objectsBefore := listKeys(t, e)

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 32 << 10})
	if res.Optimized != 2 || res.Failed != 1 || len(res.Failures) != 1 {
		t.Fatalf("run result %+v, want 2 optimized and 1 failed", res)
	}
	f := res.Failures[0]
	if f.Locator != victim.Locator || !strings.Contains(f.Error, victim.Locator) || !strings.Contains(f.Error, keys[3]) ||
		!strings.Contains(f.Error, arrowRefusal(bad)) {
		t.Fatalf("failure %+v does not name topic %s, chunk %s and the cause %q", f, victim.Locator, keys[3], arrowRefusal(bad))
	}
	t.Logf("reported: %s", f.Error)
	for _, s := range good {
		e.checkOptimized(t, s, 32<<10)
	}
	topicAfter, err := e.cat.Topic(ctx, victim.TopicID)
	if err != nil {
		t.Fatal(err)
	}
	chunksAfter, err := e.cat.Chunks(ctx, victim.TopicID)
	if err != nil {
		t.Fatal(err)
	}
	if topicAfter.DataPrefix != topicBefore.DataPrefix || topicAfter.OptimizedAt != nil ||
		topicAfter.ChunkSetVersion != topicBefore.ChunkSetVersion || len(chunksAfter) != len(chunksBefore) {
		t.Fatalf("failed topic changed in the catalog: %+v -> %+v", topicBefore, topicAfter)
	}
	for i := range chunksBefore {
		if chunksBefore[i].ID != chunksAfter[i].ID || chunksBefore[i].ObjectKey != chunksAfter[i].ObjectKey {
			t.Fatalf("failed topic's chunk %d changed", i)
		}
	}
	// The only new objects belong to the optimized topics' new prefixes.
	newPrefixes := map[string]bool{}
	for _, s := range good {
		tp, _ := e.cat.Topic(ctx, s.id)
		newPrefixes[tp.DataPrefix] = true
	}
	for k := range listKeys(t, e) {
		if objectsBefore[k] {
			continue
		}
		p, _, _ := strings.Cut(k, "/")
		if !newPrefixes[p] {
			t.Errorf("object %s left behind by the failed optimization", k)
		}
	}
	for k := range objectsBefore {
		if ok, _ := e.b.Exists(ctx, k); !ok {
			t.Errorf("object %s deleted", k)
		}
	}
	e.queueEmpty(t)
}

// listKeys returns the keys of the objects in e's store. Temporary files of unfinished writes
// (store.IsTempKey) are not objects and are left out: see tempKeys.
func listKeys(t *testing.T, e *env) map[string]bool {
	t.Helper()
	return listStore(t, e, false)
}

// tempKeys returns the keys of the temporary files of unfinished writes in e's store.
func tempKeys(t *testing.T, e *env) map[string]bool {
	t.Helper()
	return listStore(t, e, true)
}

// listStore lists e's whole store: the temporary files of unfinished writes when temp is true,
// else everything else. A listing error fails the test: a partial listing would make "nothing
// left behind" and "no object under the prefix" pass.
func listStore(t *testing.T, e *env, temp bool) map[string]bool {
	t.Helper()
	keys, err := storeKeys(context.Background(), e.b, temp)
	if err != nil {
		t.Fatalf("list the store: %v", err)
	}
	return keys
}

// storeKeys lists b's keys: those of temporary files of unfinished writes when temp is true, else
// every other one. It returns the first listing error.
func storeKeys(ctx context.Context, b *blob.Bucket, temp bool) (map[string]bool, error) {
	keys := map[string]bool{}
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return keys, nil
		}
		if err != nil {
			return nil, err
		}
		if store.IsTempKey(obj.Key) == temp {
			keys[obj.Key] = true
		}
	}
}

// TestStoreKeysFailsOnListingError: the listing behind listKeys returns the store's listing
// error (the fault store failing its list requests, as an unreachable store would) instead of
// the keys seen so far, so the store checks of these tests cannot pass on a partial listing.
func TestStoreKeysFailsOnListingError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := blob.OpenBucket(ctx, faults.StoreScheme+"://"+dir)
	if err != nil {
		t.Fatalf("open the fault store (tests need -tags storeopt_faults): %v", err)
	}
	defer b.Close()
	for _, k := range []string{"tp_A/metadata.json", "tp_A/data/00000.parquet", "tp_B/data/00000.parquet"} {
		if err := b.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(faults.EnvVar, faults.StoreList+"=fail*1")
	if keys, err := storeKeys(ctx, b, false); err == nil {
		t.Fatalf("a failing listing gave %v and no error", keys)
	}
	if keys, err := storeKeys(ctx, b, false); err != nil || len(keys) != 3 {
		t.Fatalf("listing once the store answers again: %v, %v; want the 3 keys", keys, err)
	}
}

// TestConcurrentRunsOptimizeEachTopicOnce starts two runs at the same moment on two workers
// (each WriteChunks slowed down by 100 ms, so that the runs overlap however fast the machine):
// every topic is optimized exactly once (one optimization record), and the runs overlapped, the
// second skipping topics the first was optimizing.
func TestConcurrentRunsOptimizeEachTopicOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts := testPreset(t)
	for i := range 3 {
		opts.Sequence = "concurrent_" + string(rune('a'+i))
		e.ingest(t, opts)
	}
	t.Setenv(faults.EnvVar, faults.WriteChunksBeforeWrite+"=sleep:100ms")
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	var wg sync.WaitGroup
	results := make([]workflows.StoreOptimizerResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			_, results[i], errs[i] = e.pass(app.PassOptions{MaxChunkSizeBytes: 32 << 10, MaxConcurrentTopics: 2})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	topics, err := e.cat.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	optimized := results[0].Optimized + results[1].Optimized
	if optimized != len(topics) || results[0].Failed+results[1].Failed != 0 {
		t.Fatalf("runs %+v and %+v: %d optimized in all, want %d", results[0], results[1], optimized, len(topics))
	}
	t.Logf("run 1: %d optimized, %d skipped; run 2: %d optimized, %d skipped",
		results[0].Optimized, results[0].Skipped, results[1].Optimized, results[1].Skipped)
	if results[0].Skipped+results[1].Skipped == 0 {
		t.Errorf("no run skipped a topic: the runs did not overlap, so this test proved nothing about concurrent runs")
	}
	for _, tp := range topics {
		recs, err := e.cat.Optimizations(ctx, tp.ID)
		if err != nil || len(recs) != 1 {
			t.Errorf("topic %s: %d optimizations (err %v), want exactly 1", tp.Locator, len(recs), err)
		}
		checkPrefixChunks(t, e, tp)
	}
	e.queueEmpty(t)
}

// checkPrefixChunks checks that a topic's catalog chunks are exactly the data objects of its
// prefix: no duplicate output of a second optimization.
func checkPrefixChunks(t *testing.T, e *env, tp catalog.Topic) {
	t.Helper()
	tp, err := e.cat.Topic(context.Background(), tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, k := range chunkKeys(t, e.cat, tp.ID) {
		want[k] = true
	}
	got := 0
	for k := range listKeys(t, e) {
		if strings.HasPrefix(k, tp.DataPrefix+"/data/") {
			got++
			if !want[k] {
				t.Errorf("topic %s: object %s is not in the catalog", tp.Locator, k)
			}
		}
	}
	if got != len(want) {
		t.Errorf("topic %s: %d objects under %s/data/, catalog has %d chunks", tp.Locator, got, tp.DataPrefix, len(want))
	}
}
