package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/policy"
)

// TopicReport is one topic as the catalog sees it now.
type TopicReport struct {
	Locator     string     `json:"locator"`
	DataPrefix  string     `json:"data_prefix"` // "tp_<ULID>"
	Finalized   bool       `json:"finalized"`
	Chunks      int        `json:"chunks"`
	Bytes       int64      `json:"bytes"` // sum of the chunks' object sizes
	Rows        int64      `json:"rows"`
	OptimizedAt *time.Time `json:"optimized_at,omitempty"`
	// ChunkKeys are the object keys of the chunks, in catalog order.
	ChunkKeys []string `json:"chunk_keys"`
	// Chunks and bytes per level: L0 as ingested or joined by tiered compactions, L1 the sorted
	// run written by leveled and full compactions.
	L0Chunks int   `json:"l0_chunks"`
	L0Bytes  int64 `json:"l0_bytes"`
	L1Chunks int   `json:"l1_chunks"`
	L1Bytes  int64 `json:"l1_bytes"`
	// FirstTimestampNs and LastTimestampNs are the smallest and largest timestamp_ns over the
	// chunks' stats (nil when no chunk has a non-null timestamp): the range `starter read` takes.
	FirstTimestampNs *int64 `json:"first_timestamp_ns,omitempty"`
	LastTimestampNs  *int64 `json:"last_timestamp_ns,omitempty"`
}

// Report lists every topic of the catalog, ordered by topic ID, with its chunk count, bytes and
// rows summed over its chunk rows.
func Report(ctx context.Context, cat *catalog.Catalog) ([]TopicReport, error) {
	topics, err := cat.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TopicReport, 0, len(topics))
	for _, t := range topics {
		chunks, err := cat.Chunks(ctx, t.ID)
		if err != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Locator, err)
		}
		r := TopicReport{
			Locator:     t.Locator,
			DataPrefix:  t.DataPrefix,
			Finalized:   t.FinalizedAt != nil,
			Chunks:      len(chunks),
			OptimizedAt: t.OptimizedAt,
			ChunkKeys:   make([]string, len(chunks)),
		}
		for i, ch := range chunks {
			r.Bytes += ch.SizeBytes
			r.Rows += ch.RowCount
			r.ChunkKeys[i] = ch.ObjectKey
			if ch.MinTimestampNs != nil && (r.FirstTimestampNs == nil || *ch.MinTimestampNs < *r.FirstTimestampNs) {
				r.FirstTimestampNs = ch.MinTimestampNs
			}
			if ch.MaxTimestampNs != nil && (r.LastTimestampNs == nil || *ch.MaxTimestampNs > *r.LastTimestampNs) {
				r.LastTimestampNs = ch.MaxTimestampNs
			}
			if ch.Level == policy.L1 {
				r.L1Chunks++
				r.L1Bytes += ch.SizeBytes
			} else {
				r.L0Chunks++
				r.L0Bytes += ch.SizeBytes
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// InSequence returns the reports of the topics of sequence (locator "<sequence>/…"), in order.
func InSequence(reports []TopicReport, sequence string) []TopicReport {
	var out []TopicReport
	for _, r := range reports {
		if inSequence(r.Locator, sequence) {
			out = append(out, r)
		}
	}
	return out
}

func inSequence(locator, sequence string) bool { return strings.HasPrefix(locator, sequence+"/") }

// CheckScope returns an error naming the first sequence of the scope without a topic among
// locators (the catalog's topics), or else the first topic of the scope not among them; nil when
// the scope names only what exists (or is every topic).
func CheckScope(locators []string, s policy.Scope) error {
	for _, q := range s.Sequences {
		if !slices.ContainsFunc(locators, func(l string) bool { return inSequence(l, q) }) {
			return fmt.Errorf("no topic of sequence %q in the catalog", q)
		}
	}
	for _, t := range s.Topics {
		if !slices.Contains(locators, t) {
			return fmt.Errorf("no topic %q in the catalog", t)
		}
	}
	return nil
}

// WriteReportJSON writes reports as indented JSON (the snapshot format ReadReportJSON reads).
func WriteReportJSON(w io.Writer, reports []TopicReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reports)
}

// ReadReportJSON reads a snapshot written by WriteReportJSON from path.
func ReadReportJSON(path string) ([]TopicReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report snapshot: %w", err)
	}
	var reports []TopicReport
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("report snapshot %s: not a storeopt report: %w", path, err)
	}
	return reports, nil
}

// WriteReportTable writes one line per topic: locator, prefix, chunks, bytes, rows, optimized_at,
// first and last timestamp_ns ("-" when none).
// With bench non-nil it adds the seconds to read each topic's chunks (ReadObjects), running the
// reads as it goes; a failed read is reported in the table, not as an error.
func WriteReportTable(ctx context.Context, w io.Writer, reports []TopicReport, bench *blob.Bucket) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := "locator\tprefix\tchunks\tbytes\trows\toptimized_at\tfirst_ns\tlast_ns\t"
	if bench != nil {
		header += "read_s\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		opt := "-"
		if r.OptimizedAt != nil {
			opt = r.OptimizedAt.UTC().Format(time.RFC3339)
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t", r.Locator, r.DataPrefix, r.Chunks, r.Bytes, r.Rows, opt,
			nsCell(r.FirstTimestampNs), nsCell(r.LastTimestampNs))
		if bench != nil {
			line += readCell(ReadObjects(ctx, bench, r.ChunkKeys, DefaultReadParallelism)) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// WriteLevelsTable writes one line per topic: locator, whether it is finalized, and its L0 and
// L1 chunks and bytes.
func WriteLevelsTable(w io.Writer, reports []TopicReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "locator\tfinalized\tL0 chunks\tL0 bytes\tL1 chunks\tL1 bytes\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t\n", r.Locator, r.Finalized, r.L0Chunks, r.L0Bytes, r.L1Chunks, r.L1Bytes)
	}
	return tw.Flush()
}

// WriteComparison writes the before/after table of the topics present in both snapshots:
// chunks, bytes and the seconds to read every chunk (before = the objects listed in before,
// which optimization leaves in place; after = the current ones). A topic whose chunk set did not
// change shows the same numbers twice and is read once.
func WriteComparison(ctx context.Context, w io.Writer, before, after []TopicReport, bucket *blob.Bucket) error {
	prev := make(map[string]TopicReport, len(before))
	for _, r := range before {
		prev[r.Locator] = r
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "topic\tchunks before\tchunks after\tbytes before\tbytes after\tread s before\tread s after\t")
	for _, a := range after {
		b, ok := prev[a.Locator]
		if !ok {
			continue
		}
		readBefore := readCell(ReadObjects(ctx, bucket, b.ChunkKeys, DefaultReadParallelism))
		readAfter := readBefore
		if a.DataPrefix != b.DataPrefix || a.Chunks != b.Chunks {
			readAfter = readCell(ReadObjects(ctx, bucket, a.ChunkKeys, DefaultReadParallelism))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", a.Locator, b.Chunks, a.Chunks, b.Bytes, a.Bytes, readBefore, readAfter)
	}
	return tw.Flush()
}

func nsCell(ns *int64) string {
	if ns == nil {
		return "-"
	}
	return fmt.Sprint(*ns)
}

func readCell(st ReadStats, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%.4f", st.Elapsed.Seconds())
}

// WriteDebtReport writes the catalog's compaction debt (docs/operations.md#compaction-debt): the
// totals, then the top topics with the most debt first (catalog.WorstTopics' order, the order a
// run under auto takes them in).
func WriteDebtReport(ctx context.Context, w io.Writer, cat *catalog.Catalog, top int) error {
	d, err := cat.DebtTotals(ctx)
	if err != nil {
		return err
	}
	th, err := cat.WriteThresholds(ctx)
	if err != nil {
		return err
	}
	worst, err := cat.WorstTopics(ctx, max(top, 1))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "topics\t%d\n", d.Topics)
	fmt.Fprintf(tw, "L0 chunks\t%d (%d bytes), %d uncompacted\n", d.L0Chunks, d.L0Bytes, d.UncompactedChunks)
	fmt.Fprintf(tw, "oldest uncompacted\t%.1f s\n", d.OldestUncompactedAge.Seconds())
	fmt.Fprintf(tw, "over the trigger\t%d topics (at least %d L0 chunks, the latest run's)\n", d.TopicsOverTrigger, d.TriggerMinChunks)
	fmt.Fprintf(tw, "most in one topic\t%d L0 chunks\n", d.MaxTopicL0Chunks)
	fmt.Fprintf(tw, "write signal\t%d ok, %d delay (from %d L0 chunks), %d stop (from %d)\n",
		d.TopicsByState[catalog.WriteOK], d.TopicsByState[catalog.WriteDelay], th.DelayL0Chunks,
		d.TopicsByState[catalog.WriteStop], th.StopL0Chunks)
	fmt.Fprintf(tw, "write amplification\t%.2f (%d bytes written by compactions, %d ingested)\n",
		d.WriteAmplification(), d.CompactionWrittenBytes, d.IngestedBytes)
	if err := tw.Flush(); err != nil {
		return err
	}
	if top <= 0 || len(worst) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nworst %d topics:\n", len(worst))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "topic\tfinalized\tL0 chunks\tL0 bytes\tuncompacted\toldest s\twrite\t")
	for _, t := range worst {
		fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%.1f\t%s\t\n", t.Locator, t.Finalized, t.L0Chunks, t.L0Bytes,
			t.UncompactedChunks, t.OldestUncompactedAge.Seconds(), t.WriteState)
	}
	return tw.Flush()
}
