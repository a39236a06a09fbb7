package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/topicread"
)

// The levels bench (-levels): on one dataset (the IMU topic by default), a 1-second window read
// with topicread.Window (what `starter read` runs) before optimization, after a tiered
// compaction, after a leveled one, and after a full rewrite; and the cost of keeping a live topic
// compact under the auto policy (the topic's chunks appended batch by batch, one auto compaction
// after each batch), in CPU seconds per GB ingested, against one full rewrite of the same data.
// Everything runs in this process against a copy of the dataset's catalog and its file store.

// windowReport is one window read.
type windowReport struct {
	State        string  `json:"state"`
	Chunks       int     `json:"chunks"`
	L0, L1       int     `json:"-"`
	ChunksRead   int     `json:"chunks_read"`
	Blocks       int     `json:"blocks"`
	Rows         int64   `json:"rows"`
	BytesFetched int64   `json:"bytes_fetched"`
	Seconds      float64 `json:"seconds"` // median of 5 reads
}

// liveReport is the cost of keeping a live topic compact.
type liveReport struct {
	Batches         int     `json:"batches"`
	Tiered          int     `json:"tiered"`
	Leveled         int     `json:"leveled"`
	NothingToDo     int     `json:"nothing_to_do"`
	IngestedBytes   int64   `json:"ingested_bytes"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	CPUSecondsPerGB float64 `json:"cpu_seconds_per_gb"`
	FullCPUPerGB    float64 `json:"full_rewrite_cpu_seconds_per_gb"`
	FinalL1Chunks   int     `json:"final_l1_chunks"`
}

// levelsBench runs the levels bench on every dataset of cfg and prints its tables.
func levelsBench(ctx context.Context, cfg config, batch int) error {
	return forEachDataset(ctx, cfg, func(srv *server, d *dataset) error {
		windows, err := windowReads(ctx, cfg, srv, d)
		if err != nil {
			return fmt.Errorf("dataset %s: window reads: %w", d.Name, err)
		}
		live, err := liveCost(ctx, cfg, srv, d, batch)
		if err != nil {
			return fmt.Errorf("dataset %s: live cost: %w", d.Name, err)
		}
		if cfg.jsonOut {
			return json.NewEncoder(os.Stdout).Encode(map[string]any{"dataset": d.Name, "windows": windows, "live": live})
		}
		printLevels(os.Stdout, d, windows, live)
		return nil
	})
}

// forEachDataset prepares every dataset of cfg in turn and calls fn with it; the bench databases
// are dropped at the end (unless -keep-databases).
func forEachDataset(ctx context.Context, cfg config, fn func(srv *server, d *dataset) error) error {
	srv := &server{adminURL: cfg.pgURL}
	if !cfg.keepDatabases {
		defer srv.dropAll(context.WithoutCancel(ctx))
	}
	for _, shape := range cfg.shapes {
		d, err := prepareDataset(ctx, cfg, srv, shape)
		if err != nil {
			return err
		}
		if err := fn(srv, d); err != nil {
			return err
		}
	}
	return nil
}

// benchCatalog is a copy of the dataset's catalog with storeopt's activities on it.
type benchCatalog struct {
	cat      *catalog.Catalog
	acts     *activities.Activities
	d        *dataset
	runs     int
	prefixes []string // fresh prefixes written, removed from the dataset's store at the end
}

func openBenchCatalog(ctx context.Context, cfg config, srv *server, d *dataset, name string) (*benchCatalog, func(), error) {
	db := d.Template + "_" + name
	url, err := srv.create(ctx, db, d.Template)
	if err != nil {
		return nil, nil, err
	}
	cat, err := catalog.Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := app.OpenStore(ctx, d.storeURL())
	if err != nil {
		cat.Close()
		return nil, nil, err
	}
	b := &benchCatalog{cat: cat, d: d, acts: &activities.Activities{Catalog: cat, Bucket: bucket,
		MemoryPoolBytes: cfg.memoryPool, MemoryPool: mempool.New(cfg.memoryPool)}}
	return b, func() {
		_ = bucket.Close()
		cat.Close()
		for _, p := range b.prefixes {
			_ = os.RemoveAll(filepath.Join(d.StoreDir, p))
		}
		if !cfg.keepDatabases {
			_ = srv.drop(context.WithoutCancel(ctx), db)
		}
	}, nil
}

// compact runs one compaction of policy through the activities (no Temporal) and returns the
// policy applied ("" when there was nothing to do), the process CPU seconds it took and the
// fresh prefix it wrote.
func (b *benchCatalog) compact(ctx context.Context, cfg config, policy string) (applied string, cpu float64, err error) {
	b.runs++
	ctx = activities.WithRun(ctx, "bench-levels", fmt.Sprintf("levels-%s-%d", randomSuffix(), b.runs))
	start := cpuSeconds()
	defer func() { cpu = cpuSeconds() - start }()
	lease, err := b.acts.Lease(ctx, activities.LeaseInput{TopicID: b.d.TopicID, Policy: policy, MaxChunkSizeBytes: cfg.maxChunkSize})
	if err != nil {
		return "", 0, fmt.Errorf("lease: %w", err)
	}
	if lease.Leased { // the activities have no Runs here: a lease left by another job is never taken over
		return "", 0, fmt.Errorf("lease: topic %s is leased by run %s", lease.Locator, lease.Holder.RunID)
	}
	b.prefixes = append(b.prefixes, lease.FreshPrefix)
	rs, err := b.acts.ReadSort(ctx, activities.ReadSortInput{TopicID: b.d.TopicID, MaxChunkSizeBytes: cfg.maxChunkSize, Policy: lease.Policy})
	if err != nil {
		return "", 0, fmt.Errorf("read-sort: %w", err)
	}
	if rs.NothingToDo {
		_, err := b.acts.Release(ctx, activities.ReleaseInput{TopicID: b.d.TopicID, Reason: "nothing to do"})
		return "", 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.topicParallelism)
	for group := range rs.Groups {
		g.Go(func() error {
			_, err := b.acts.WriteChunks(gctx, activities.WriteChunksInput{TopicID: b.d.TopicID, Group: group})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return "", 0, fmt.Errorf("write-chunks: %w", err)
	}
	if _, err := b.acts.Commit(ctx, activities.CommitInput{TopicID: b.d.TopicID}); err != nil {
		return "", 0, fmt.Errorf("commit: %w", err)
	}
	return lease.Policy, 0, nil
}

// window reads the 1-second window in the middle of the topic five times.
func (b *benchCatalog) window(ctx context.Context, state string) (windowReport, error) {
	r := windowReport{State: state}
	t, err := b.cat.Topic(ctx, b.d.TopicID)
	if err != nil {
		return r, err
	}
	chunks, err := b.cat.Chunks(ctx, t.ID)
	if err != nil {
		return r, err
	}
	var lo, hi int64 = 1<<63 - 1, -1 << 63
	for _, c := range chunks {
		r.Chunks++
		if c.Level == 1 {
			r.L1++
		} else {
			r.L0++
		}
		if c.MinTimestampNs != nil {
			lo, hi = min(lo, *c.MinTimestampNs), max(hi, *c.MaxTimestampNs)
		}
	}
	from := lo + (hi-lo)/2
	var secs []float64
	for range 5 {
		st, err := topicread.Window(ctx, b.cat, b.acts.Bucket, t.Locator, from, from+int64(time.Second), nil,
			func(arrow.RecordBatch) error { return nil })
		if err != nil {
			return r, err
		}
		r.ChunksRead, r.Blocks, r.Rows, r.BytesFetched = st.Chunks, st.Blocks, st.Rows, st.BytesFetched
		secs = append(secs, st.Elapsed.Seconds())
	}
	slices.Sort(secs)
	r.Seconds = secs[len(secs)/2]
	return r, nil
}

// windowReads measures the window before optimization, after tiered, leveled and full.
func windowReads(ctx context.Context, cfg config, srv *server, d *dataset) ([]windowReport, error) {
	b, closeAll, err := openBenchCatalog(ctx, cfg, srv, d, "levels")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	var out []windowReport
	w, err := b.window(ctx, "ingested")
	if err != nil {
		return nil, err
	}
	out = append(out, w)
	for _, p := range []string{"tiered", "leveled", "full"} {
		applied, cpu, err := b.compact(ctx, cfg, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		logf("levels: %s compaction (%s) in %.1f cpu s", p, applied, cpu)
		if w, err = b.window(ctx, "after "+p); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// liveCost appends the dataset's chunks to a live copy of its topic batch chunks at a time,
// running one auto compaction after each batch (and a last one after finalization), and compares
// their CPU seconds per GB ingested with one full rewrite of the whole topic.
func liveCost(ctx context.Context, cfg config, srv *server, d *dataset, batch int) (liveReport, error) {
	var rep liveReport
	full, closeFull, err := openBenchCatalog(ctx, cfg, srv, d, "full")
	if err != nil {
		return rep, err
	}
	_, fullCPU, err := full.compact(ctx, cfg, "full")
	closeFull()
	if err != nil {
		return rep, fmt.Errorf("full rewrite: %w", err)
	}
	rep.FullCPUPerGB = fullCPU / (float64(d.InputBytes) / 1e9)

	b, closeAll, err := openBenchCatalog(ctx, cfg, srv, d, "live")
	if err != nil {
		return rep, err
	}
	defer closeAll()
	chunks, err := b.cat.Chunks(ctx, d.TopicID)
	if err != nil {
		return rep, err
	}
	// The live topic: not finalized, its chunk rows removed and appended again batch by batch.
	if _, err := b.cat.Pool.Exec(ctx, `UPDATE topics SET finalized_at = NULL WHERE id = $1`, d.TopicID); err != nil {
		return rep, err
	}
	if _, err := b.cat.Pool.Exec(ctx, `DELETE FROM chunks WHERE topic_id = $1`, d.TopicID); err != nil {
		return rep, err
	}
	for start := 0; start < len(chunks); start += batch {
		for _, c := range chunks[start:min(start+batch, len(chunks))] {
			c.ID = 0
			if _, err := b.cat.AddChunk(ctx, c); err != nil {
				return rep, err
			}
			rep.IngestedBytes += c.SizeBytes
		}
		rep.Batches++
		if err := rep.autoPass(ctx, cfg, b); err != nil {
			return rep, err
		}
	}
	if err := b.cat.FinalizeTopic(ctx, d.TopicID); err != nil {
		return rep, err
	}
	if err := rep.autoPass(ctx, cfg, b); err != nil {
		return rep, err
	}
	lv, err := b.cat.Levels(ctx)
	if err != nil {
		return rep, err
	}
	rep.FinalL1Chunks = lv[d.TopicID].L1Chunks
	if lv[d.TopicID].L0Chunks != 0 {
		return rep, fmt.Errorf("after finalization the topic still has %d L0 chunks", lv[d.TopicID].L0Chunks)
	}
	rep.CPUSecondsPerGB = rep.CPUSeconds / (float64(rep.IngestedBytes) / 1e9)
	return rep, nil
}

// autoPass runs one auto compaction (when the trigger of 2 L0 chunks holds) and counts it.
func (rep *liveReport) autoPass(ctx context.Context, cfg config, b *benchCatalog) error {
	_, need, err := b.cat.NeedsCompaction(ctx, b.d.TopicID, catalog.Trigger{Policy: "auto", MinChunks: 2, MaxChunkSizeBytes: cfg.maxChunkSize})
	if err != nil || !need {
		return err
	}
	applied, cpu, err := b.compact(ctx, cfg, "auto")
	if err != nil {
		return fmt.Errorf("auto after batch %d: %w", rep.Batches, err)
	}
	rep.CPUSeconds += cpu
	switch applied {
	case "tiered":
		rep.Tiered++
	case "leveled":
		rep.Leveled++
	default:
		rep.NothingToDo++
	}
	logf("levels: live batch %d: %s in %.2f cpu s", rep.Batches, applied, cpu)
	return nil
}

// cpuSeconds returns this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
}

func printLevels(w io.Writer, d *dataset, windows []windowReport, live liveReport) {
	fmt.Fprintf(w, "\n%s: 1-second window read (topicread.Window = starter read), median of 5\n", d.Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "state\tchunks\tL0\tL1\tchunks read\tblocks\trows\tbytes fetched\tseconds\t")
	for _, r := range windows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", r.State, r.Chunks, r.L0, r.L1, r.ChunksRead, r.Blocks, r.Rows, r.BytesFetched, r.Seconds)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%s: keeping the topic compact while live (auto, trigger 2 L0 chunks, one pass per batch of appended chunks)\n", d.Name)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "batches\ttiered\tleveled\tGB ingested\tcpu s\tcpu s/GB\tfull rewrite cpu s/GB\tfinal L1 chunks\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t%.2f\t%.2f\t%.2f\t%d\t\n", live.Batches, live.Tiered, live.Leveled,
		float64(live.IngestedBytes)/1e9, live.CPUSeconds, live.CPUSecondsPerGB, live.FullCPUPerGB, live.FinalL1Chunks)
	_ = tw.Flush()
}
