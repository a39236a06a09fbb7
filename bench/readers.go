package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/topicread"
)

// The readers bench (-readers): on each dataset, a 1-second and a 1-minute window in the middle
// of the topic and a scan of the whole topic, each read by topicread.Window (what `starter read`
// runs, through the catalog and range reads of the file store) and by DuckDB (read_parquet with
// the window as a filter, every column aggregated so that none is pruned), on three layouts of
// the same rows: the ingested chunks, storeopt's output of a full compaction (in this process,
// with -memory-pool) and DuckDB's own sorted output (the duckdb job's COPY … ORDER BY
// timestamp_ns). Bytes fetched are topicread's range reads (Stats.BytesFetched) and, for DuckDB,
// what the process read from files meanwhile (rchar of /proc/self/io).

// readReport is one read of one layout by one reader.
type readReport struct {
	Dataset      string  `json:"dataset"`
	Layout       string  `json:"layout"`
	Files        int     `json:"files"`
	LayoutBytes  int64   `json:"layout_bytes"`
	Reader       string  `json:"reader"`
	Read         string  `json:"read"`
	Rows         int64   `json:"rows"`
	BytesFetched int64   `json:"bytes_fetched"`
	Requests     int     `json:"requests,omitempty"` // topicread's range reads
	Seconds      float64 `json:"seconds"`            // median of readRuns
}

// readRuns is how many times each read is repeated (the median is reported).
const readRuns = 3

// readerLayout is one layout of the topic's rows: its files and a catalog whose chunk rows are
// those files.
type readerLayout struct {
	name  string
	files []string
	bytes int64
}

// readersBench runs the readers bench on every dataset of cfg and prints its tables.
func readersBench(ctx context.Context, cfg config) error {
	return forEachDataset(ctx, cfg, func(srv *server, d *dataset) error {
		reports, err := readerReads(ctx, cfg, srv, d)
		if err != nil {
			return fmt.Errorf("dataset %s: %w", d.Name, err)
		}
		if !cfg.jsonOut {
			printReaders(os.Stdout, d, cfg, reports)
			return nil
		}
		enc := json.NewEncoder(os.Stdout)
		for _, r := range reports {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// readerReads measures every read on the three layouts of d.
func readerReads(ctx context.Context, cfg config, srv *server, d *dataset) ([]readReport, error) {
	b, closeAll, err := openBenchCatalog(ctx, cfg, srv, d, "readers")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	var out []readReport
	measure := func(name string) error {
		l, err := b.layout(ctx, name)
		if err != nil {
			return err
		}
		reps, err := b.reads(ctx, l)
		out = append(out, reps...)
		return err
	}
	if err := measure("ingested chunks"); err != nil {
		return out, err
	}
	applied, cpu, err := b.compact(ctx, cfg, "full")
	if err != nil {
		return out, fmt.Errorf("full compaction: %w", err)
	}
	logf("readers: %s compaction in %.1f cpu s", applied, cpu)
	if err := measure("storeopt"); err != nil {
		return out, err
	}
	if !hasDuckDB {
		return out, nil
	}
	if err := b.duckdbSorted(ctx); err != nil {
		return out, fmt.Errorf("duckdb sort: %w", err)
	}
	return out, measure("duckdb sorted")
}

// layout returns the topic's current chunk files.
func (b *benchCatalog) layout(ctx context.Context, name string) (readerLayout, error) {
	l := readerLayout{name: name}
	chunks, err := b.cat.Chunks(ctx, b.d.TopicID)
	if err != nil {
		return l, err
	}
	for _, c := range chunks {
		l.files = append(l.files, filepath.Join(b.d.StoreDir, c.ObjectKey))
		l.bytes += c.SizeBytes
	}
	return l, nil
}

// duckdbSorted sorts the topic's current chunks with DuckDB into one file under a fresh prefix
// of the store and makes that file the topic's only chunk.
func (b *benchCatalog) duckdbSorted(ctx context.Context) error {
	l, err := b.layout(ctx, "")
	if err != nil {
		return err
	}
	prefix := "tp_duckdb_" + randomSuffix()
	b.prefixes = append(b.prefixes, prefix)
	key := prefix + "/data/00000.parquet"
	out := filepath.Join(b.d.StoreDir, key)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	start := time.Now()
	rows, lo, hi, err := duckdbSort(ctx, l.files, out)
	if err != nil {
		return err
	}
	logf("readers: duckdb sorted %d rows in %.1f s", rows, time.Since(start).Seconds())
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	// The file replaces the topic's chunks: an append needs the topic live, so it is live
	// while the chunk rows change.
	for _, q := range []string{`UPDATE topics SET finalized_at = NULL WHERE id = $1`, `DELETE FROM chunks WHERE topic_id = $1`} {
		if _, err := b.cat.Pool.Exec(ctx, q, b.d.TopicID); err != nil {
			return err
		}
	}
	if _, err = b.cat.AddChunk(ctx, catalog.Chunk{TopicID: b.d.TopicID, ObjectKey: key, SizeBytes: st.Size(),
		RowCount: rows, ArrowSizeBytes: b.d.ArrowBytes, MinTimestampNs: &lo, MaxTimestampNs: &hi}); err != nil {
		return err
	}
	return b.cat.FinalizeTopic(ctx, b.d.TopicID)
}

// readWindow is one read: a window [from, to) or the whole topic.
type readWindow struct {
	name     string
	from, to int64
}

// windows returns the reads of the bench: 1 s and 1 min from the middle of the topic, and a scan.
func (b *benchCatalog) windows(ctx context.Context) ([]readWindow, error) {
	chunks, err := b.cat.Chunks(ctx, b.d.TopicID)
	if err != nil {
		return nil, err
	}
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	for _, c := range chunks {
		if c.MinTimestampNs != nil {
			lo, hi = min(lo, *c.MinTimestampNs), max(hi, *c.MaxTimestampNs)
		}
	}
	mid := lo + (hi-lo)/2
	return []readWindow{{"1 s", mid, mid + int64(time.Second)}, {"1 min", mid, mid + int64(time.Minute)},
		{"scan", math.MinInt64, math.MaxInt64}}, nil
}

// reads measures every read of l with both readers.
func (b *benchCatalog) reads(ctx context.Context, l readerLayout) ([]readReport, error) {
	ws, err := b.windows(ctx)
	if err != nil {
		return nil, err
	}
	t, err := b.cat.Topic(ctx, b.d.TopicID)
	if err != nil {
		return nil, err
	}
	var out []readReport
	for _, w := range ws {
		r := readReport{Dataset: b.d.Name, Layout: l.name, Files: len(l.files), LayoutBytes: l.bytes, Reader: "topicread", Read: w.name}
		var secs []float64
		for range readRuns {
			st, err := topicread.Window(ctx, b.cat, b.acts.Bucket, t.Locator, w.from, w.to, nil,
				func(arrow.RecordBatch) error { return nil })
			if err != nil {
				return out, fmt.Errorf("%s: topicread %s: %w", l.name, w.name, err)
			}
			r.Rows, r.BytesFetched, r.Requests = st.Rows, st.BytesFetched, st.Requests
			secs = append(secs, st.Elapsed.Seconds())
		}
		r.Seconds = medianOf(secs)
		out = append(out, r)
		logf("readers: %s, topicread %s: %d rows, %d bytes in %.3f s", l.name, w.name, r.Rows, r.BytesFetched, r.Seconds)
		if !hasDuckDB {
			continue
		}
		d := readReport{Dataset: b.d.Name, Layout: l.name, Files: len(l.files), LayoutBytes: l.bytes, Reader: "duckdb", Read: w.name}
		secs = secs[:0]
		for range readRuns {
			before := readBytes()
			start := time.Now()
			rows, err := duckdbWindow(ctx, l.files, w.from, w.to)
			if err != nil {
				return out, fmt.Errorf("%s: duckdb %s: %w", l.name, w.name, err)
			}
			secs = append(secs, time.Since(start).Seconds())
			d.Rows, d.BytesFetched = rows, readBytes()-before
		}
		d.Seconds = medianOf(secs)
		out = append(out, d)
		logf("readers: %s, duckdb %s: %d rows, %d bytes in %.3f s", l.name, w.name, d.Rows, d.BytesFetched, d.Seconds)
		if d.Rows != r.Rows {
			return out, fmt.Errorf("%s %s: duckdb counts %d rows, topicread %d", l.name, w.name, d.Rows, r.Rows)
		}
	}
	return out, nil
}

// readBytes returns the bytes this process has read with read(2) and pread(2) so far (rchar of
// /proc/self/io; 0 where there is none).
func readBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func printReaders(w io.Writer, d *dataset, cfg config, reports []readReport) {
	pool := "no memory pool"
	if cfg.memoryPool > 0 {
		pool = fmt.Sprintf("memory pool %d", cfg.memoryPool)
	}
	fmt.Fprintf(w, "\n%s (%d rows): window reads and scans, median of %d (storeopt output written with %s)\n", d.Name, d.Rows, readRuns, pool)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "layout\tfiles\tMB\treader\tread\trows\tbytes fetched\tof layout\tseconds\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%d\t%d\t%.3f %%\t%.3f\t\n", r.Layout, r.Files, float64(r.LayoutBytes)/1e6,
			r.Reader, r.Read, r.Rows, r.BytesFetched, 100*float64(r.BytesFetched)/float64(max(r.LayoutBytes, 1)), r.Seconds)
	}
	tw.Flush()
}
