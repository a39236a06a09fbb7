package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
)

// maxPlanSamples bounds the number of timestamp samples the planner holds for one topic (about
// 12 MB); topics with more rows are planned from every n-th row of each chunk's sorted order.
const maxPlanSamples = 256 << 10

// scanParallelism is the number of input chunks scanned at once (2 cores: decoding two files at
// once doubles throughput on tiny chunks, DESIGN.md).
const scanParallelism = 2

// ReadSort reads the footer and the timestamp_ns column of every input chunk (never the other
// columns), checks that all chunks share one footer (Parquet schema elements and key/value pairs,
// ARROW:schema included: parquetio.Footer) and agree with their catalog rows, computes the plan and stores it in the catalog under the calling run's lease.
// Heartbeats report the number of chunks scanned. Errors: ErrTypeInput for bad chunks (naming
// the chunk's object key and the cause), no chunks, no rows, or a missing metadata.json;
// ErrTypeLeaseLost when the run no longer holds the lease.
func (a *Activities) ReadSort(ctx context.Context, in ReadSortInput) (ReadSortResult, error) {
	if err := faults.Hit(ctx, faults.ReadSortStart); err != nil {
		return ReadSortResult{}, err
	}
	topic, lease, token, err := a.leased(ctx, in.TopicID)
	if err != nil {
		return ReadSortResult{}, err
	}
	p, inputIDs, kept, err := a.planTopic(ctx, topic, in)
	if err != nil {
		logPanic(ctx, topic.Locator, err)
		return ReadSortResult{}, a.classify(topic.Locator, err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return ReadSortResult{}, err
	}
	if err := faults.Hit(ctx, faults.ReadSortBeforeSave); err != nil {
		return ReadSortResult{}, err
	}
	err = a.Catalog.SavePlan(ctx, catalog.PlanRecord{
		TopicID: topic.ID, FencingToken: token, FreshPrefix: lease.FreshPrefix,
		ChunkSetVersion: topic.ChunkSetVersion, InputChunkIDs: inputIDs, Body: body,
	})
	if err != nil {
		return ReadSortResult{}, a.classify(topic.Locator, err)
	}
	res := ReadSortResult{InputChunks: len(p.Inputs), InputRows: p.Totals.Rows,
		OutputChunks: len(p.Outputs), Groups: p.Groups(), FooterValuesKept: kept}
	for _, k := range kept {
		logger(ctx).Warn("Per-file footer values differ: the outputs keep the first chunk's", "topic", topic.Locator, "detail", k)
	}
	for _, i := range p.Inputs {
		res.InputBytes += i.SizeBytes
	}
	logger(ctx).Info("Plan stored", "topic", topic.Locator, "inputs", res.InputChunks,
		"rows", res.InputRows, "outputs", res.OutputChunks, "groups", res.Groups)
	return res, nil
}

// planTopic scans the topic's chunks and computes its plan.
func (a *Activities) planTopic(ctx context.Context, topic catalog.Topic, in ReadSortInput) (*plan.Plan, []int64, []string, error) {
	// A hostile data prefix ("../x", "/etc") is refused before any object under it is read.
	if err := store.CheckPrefix(topic.DataPrefix); err != nil {
		return nil, nil, nil, &parquetio.InputError{Err: err}
	}
	chunks, err := a.Catalog.Chunks(ctx, topic.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := a.checkMetadata(ctx, topic.DataPrefix, chunks); err != nil {
		return nil, nil, nil, err
	}
	if len(chunks) == 0 {
		return nil, nil, nil, &parquetio.InputError{Err: fmt.Errorf("topic has no chunks")}
	}
	var catalogRows int64
	for _, c := range chunks {
		if err := store.CheckKey(topic.DataPrefix, c.ObjectKey); err != nil {
			return nil, nil, nil, &compaction.ChunkError{Key: c.ObjectKey, Err: err}
		}
		catalogRows += c.RowCount
	}
	step := max(int64(1), (catalogRows+maxPlanSamples-1)/maxPlanSamples)

	// Chunk 0 is scanned first: every other chunk's footer is compared with it as soon as it is
	// read, and only chunk 0 keeps its footer (thousands of footers were most of ReadSort's
	// memory for large topics). Schema elements, footer keys and ARROW:schema fields must be
	// equal (else the chunk is refused: schema drift); a pair whose value differs between chunks
	// (a pandas index range, a GeoParquet bounding box) is per-file: the outputs keep chunk 0's
	// value and the others are reported (ReadSortResult.FooterValuesKept, the worker log).
	scans := make([]compaction.Scan, len(chunks))
	kept := &keptValues{first: chunks[0].ObjectKey, chunks: len(chunks)}
	var done atomic.Int64
	scan := func(ctx context.Context, i int) error {
		c := chunks[i]
		r, err := a.reserve(ctx, compaction.ScanMemory(c.SizeBytes, c.RowCount))
		if err != nil {
			return err
		}
		defer r.Release()
		s, err := compaction.ScanChunk(ctx, a.Bucket, c.ObjectKey, i, step, a.mem())
		if err != nil {
			return err
		}
		if s.Rows != c.RowCount {
			return &compaction.ChunkError{Key: c.ObjectKey,
				Err: fmt.Errorf("file has %d rows, catalog says %d", s.Rows, c.RowCount)}
		}
		if i > 0 {
			keys, drift := parquetio.PerFileDifferences(scans[0].Footer, s.Footer)
			if drift != "" {
				return &compaction.ChunkError{Key: c.ObjectKey, Err: fmt.Errorf(
					"footer differs from chunk %s: %s", chunks[0].ObjectKey, drift)}
			}
			kept.add(keys, c.ObjectKey)
			s.Footer = nil
		}
		scans[i] = s
		heartbeat(ctx, done.Add(1))
		return nil
	}
	if err := scan(ctx, 0); err != nil {
		return nil, nil, nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(scanParallelism)
	for i := 1; i < len(chunks); i++ {
		panics.Go(g, "read-sort scan", func() error {
			if err := faults.Hit(gctx, faults.ReadSortScan); err != nil {
				return err
			}
			return scan(gctx, i)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}

	inputs := make([]plan.Input, len(chunks))
	samples := make([][]plan.Sample, len(chunks))
	ids := make([]int64, len(chunks))
	var totals plan.Totals
	for i, c := range chunks {
		s := scans[i]
		inputs[i] = plan.Input{ChunkID: c.ID, ObjectKey: c.ObjectKey, Rows: s.Rows, SizeBytes: c.SizeBytes, FooterBytes: s.FooterBytes,
			ArrowBytes: c.ArrowSizeBytes, Sorted: s.Sorted, First: s.First, Last: s.Last}
		samples[i] = s.Samples
		ids[i] = c.ID
		totals.Rows += s.Rows
		totals.TimestampNulls += s.Nulls
		if s.MinTs != nil && (totals.MinTs == nil || *s.MinTs < *totals.MinTs) {
			totals.MinTs = s.MinTs
		}
		if s.MaxTs != nil && (totals.MaxTs == nil || *s.MaxTs > *totals.MaxTs) {
			totals.MaxTs = s.MaxTs
		}
	}
	p, err := plan.Compute(inputs, samples, totals, plan.Options{
		MaxChunkSizeBytes: in.MaxChunkSizeBytes, GroupSize: in.GroupTargetChunks,
		MemoryBudgetBytes: a.pool().Limit()})
	if err != nil {
		return nil, nil, nil, err
	}
	p.FooterID = scans[0].Footer.ID
	return p, ids, kept.report(), nil
}

// checkMetadata fails with an input fault when the topic's metadata.json is missing or empty, and
// with errTopicNotInStore (a store fault) when its first chunk is missing too.
func (a *Activities) checkMetadata(ctx context.Context, prefix string, chunks []catalog.Chunk) error {
	key := store.MetadataKey(prefix)
	attrs, err := a.Bucket.Attributes(ctx, key)
	if err != nil {
		// Only a store that answers "no such object" makes this an input fault; any other error
		// (the store unreachable) is retried.
		if ok, existsErr := a.Bucket.Exists(ctx, key); existsErr == nil && !ok {
			if len(chunks) > 0 {
				if ok, err := a.Bucket.Exists(ctx, chunks[0].ObjectKey); err == nil && !ok {
					return fmt.Errorf("%s: %w", prefix, errTopicNotInStore)
				}
			}
			return &parquetio.InputError{Err: fmt.Errorf("%s: topic metadata is missing", key)}
		}
		return err
	}
	if attrs.Size == 0 {
		return &parquetio.InputError{Err: fmt.Errorf("%s: topic metadata is empty", key)}
	}
	return nil
}

// keptValues records the footer pairs whose values differ between a topic's chunks (per-file
// values, parquetio.PerFileDifferences): per key, how many chunks differ from the first and one
// of them. Safe for concurrent use.
type keptValues struct {
	mu      sync.Mutex
	first   string
	chunks  int
	order   []string
	counts  map[string]int
	example map[string]string
}

// maxKeptKeys bounds the keys reported (the result travels through Temporal).
const maxKeptKeys = 16

func (k *keptValues) add(keys []string, chunk string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		if k.counts == nil {
			k.counts, k.example = map[string]int{}, map[string]string{}
		}
		if _, seen := k.counts[key]; !seen {
			if len(k.order) == maxKeptKeys {
				continue
			}
			k.order = append(k.order, key)
			k.example[key] = chunk
		}
		k.counts[key]++
	}
}

// report describes every key, in the order first met.
func (k *keptValues) report() []string {
	var out []string
	for _, key := range k.order {
		out = append(out, fmt.Sprintf("footer value of %q differs from chunk %s's in %d of %d chunks (e.g. %s); every output keeps chunk %s's",
			key, k.first, k.counts[key], k.chunks, k.example[key], k.first))
	}
	return out
}
