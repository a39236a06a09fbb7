package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/store"
)

// maxPlanSamples bounds the number of timestamp samples the planner holds for one topic (about
// 12 MB); topics with more rows are planned from every n-th row of each chunk's sorted order.
// With a memory pool, the samples take at most 1/planSampleShare of it (at least minPlanSamples
// of them): they are the planner's memory, held until the plan is computed, outside the pool's
// reservations. A sample per n rows places a cut within n rows of the size limit; at 64 MiB
// 21 845 samples place the cuts of an 11 M-row topic within 504 rows of a 256 MB output.
const (
	maxPlanSamples  = 256 << 10
	minPlanSamples  = 16 << 10
	planSampleShare = 64
)

// planSamples returns how many timestamp samples a topic is planned from with a pool of pool
// bytes (0: unlimited).
func planSamples(pool int64) int64 {
	if pool <= 0 {
		return maxPlanSamples
	}
	return min(max(pool/planSampleShare/plan.SampleBytes, minPlanSamples), maxPlanSamples)
}

// scanParallelism is the number of input chunks scanned at once (2 cores: decoding two files at
// once doubles throughput on tiny chunks, docs/design.md#arrow-go-facts).
const scanParallelism = 2

// ReadSortProgress is the heartbeat detail of ReadSort: selected chunks scanned so far, of all.
type ReadSortProgress struct {
	ChunksScanned int
	Chunks        int
}

// ReadSort selects the chunks the lease's policy reads (plan.Select, on catalog facts only),
// reads the footer and the timestamp_ns column of each selected chunk (never the other columns),
// checks that they share one footer (Parquet schema elements and key/value pairs, ARROW:schema
// included: parquetio.Footer) and agree with their catalog rows,
// computes the plan (a merge into the sorted run, or a rollup of neighbouring chunks) and stores
// it in the catalog under the calling run's lease. When the policy selects nothing, no plan is
// stored and the result says NothingToDo. Heartbeats report the chunks scanned (ReadSortProgress).
// With DryRun the write is switched off: the same plan is computed from the topic as it is,
// without a lease, and returned without being stored (the dry run, PlanTopics).
// Errors: ErrTypeInput for bad chunks (naming the chunk's object key and the cause), no chunks,
// no rows, or a missing metadata.json; ErrTypeLeaseLost when the run no longer holds the lease.
func (a *Activities) ReadSort(ctx context.Context, in ReadSortInput) (ReadSortResult, error) {
	if err := faults.Hit(ctx, faults.ReadSortStart); err != nil {
		return ReadSortResult{}, err
	}
	var topic catalog.Topic
	var lease catalog.Lease
	var token string
	var err error
	if in.DryRun {
		topic, err = a.Catalog.Topic(ctx, in.TopicID)
		err = a.classify(fmt.Sprintf("#%d", in.TopicID), err)
	} else {
		topic, lease, token, err = a.leased(ctx, in.TopicID)
	}
	if err != nil {
		return ReadSortResult{}, err
	}
	p, inputIDs, kept, err := a.planTopic(ctx, topic, in)
	if errors.Is(err, errNothingToDo) {
		logger(ctx).Info("Nothing to do", "topic", topic.Locator, "policy", in.Policy, "dryRun", in.DryRun)
		return ReadSortResult{NothingToDo: true}, nil
	}
	if err != nil {
		logPanic(ctx, topic.Locator, err)
		return ReadSortResult{}, a.classify(topic.Locator, err)
	}
	res := ReadSortResult{InputChunks: len(inputIDs), InputRows: p.Totals.Rows,
		OutputChunks: len(p.Outputs), Groups: p.Groups(), InputBytes: p.InputBytes(), FooterValuesKept: kept}
	for _, in := range p.Inputs {
		res.InputArrowBytes += in.ArrowBytes
	}
	for _, o := range p.Outputs {
		res.OutputBytes += o.EstBytes
		if o.PassThrough {
			res.PassThroughChunks++
		}
	}
	if in.DryRun {
		return res, nil
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
	for _, k := range kept {
		logger(ctx).Warn("Per-file footer values differ: the outputs keep the first chunk's", "topic", topic.Locator, "detail", k)
	}
	logger(ctx).Info("Plan stored", "topic", topic.Locator, "policy", p.EffectivePolicy(), "inputs", res.InputChunks,
		"rows", res.InputRows, "outputs", res.OutputChunks, "passThrough", res.PassThroughChunks, "groups", res.Groups)
	return res, nil
}

// errNothingToDo is returned by planTopic when the policy selects no chunk.
var errNothingToDo = errors.New("nothing to do")

// planTopic selects the chunks of the policy, scans them and computes the plan; it also returns
// the IDs of the chunks the plan reads, in catalog order, and the per-file footer values the
// outputs do not keep (see scanChunks).
func (a *Activities) planTopic(ctx context.Context, topic catalog.Topic, in ReadSortInput) (*plan.Plan, []int64, []string, error) {
	// A hostile data prefix ("../x", "/etc") is refused before any object under it is read.
	if err := store.CheckPrefix(topic.DataPrefix); err != nil {
		return nil, nil, nil, &parquetio.InputError{Err: err}
	}
	pol, err := policy.Parse(in.Policy)
	if err != nil {
		return nil, nil, nil, &parquetio.InputError{Err: err}
	}
	all, err := a.Catalog.Chunks(ctx, topic.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(all) == 0 {
		if err := a.checkMetadata(ctx, topic.DataPrefix, all); err != nil {
			return nil, nil, nil, err
		}
		return nil, nil, nil, &parquetio.InputError{Err: fmt.Errorf("topic has no chunks")}
	}
	selOpts := plan.SelectOptions{MaxChunkSizeBytes: in.MaxChunkSizeBytes, Live: topic.FinalizedAt == nil}
	sel, err := plan.Select(pol, chunkFacts(all), selOpts)
	if err != nil {
		return nil, nil, nil, &parquetio.InputError{Err: err}
	}
	if sel.Empty() {
		return nil, nil, nil, errNothingToDo
	}
	chunks := make([]catalog.Chunk, len(sel.Inputs))
	for i, pos := range sel.Inputs {
		chunks[i] = all[pos]
	}
	if err := a.checkMetadata(ctx, topic.DataPrefix, chunks); err != nil {
		return nil, nil, nil, err
	}
	if err := a.checkKeys(ctx, topic, chunks); err != nil {
		return nil, nil, nil, err
	}
	scans, kept, err := a.scanChunks(ctx, chunks)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := make([]int64, len(chunks))
	for i, c := range chunks {
		ids[i] = c.ID
	}
	opts := plan.Options{MaxChunkSizeBytes: in.MaxChunkSizeBytes, GroupSize: in.GroupTargetChunks,
		MemoryBudgetBytes: a.pool().Limit()}
	if selOpts.Live && sel.Policy == policy.Leveled {
		var l0Bytes int64
		for _, c := range chunks {
			if c.Level == policy.L0 {
				l0Bytes += c.SizeBytes
			}
		}
		opts.MaxChunkSizeBytes = policy.LiveOutputBytes(l0Bytes, selOpts)
	}
	var p *plan.Plan
	if sel.Kind == plan.KindConcatenate {
		p, err = rollupPlan(chunks, scans, sel, opts)
	} else {
		p, err = mergePlan(dropInputFault(chunks, scans, opts))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	p.Place(sel)
	p.FooterID = scans[0].Footer.ID
	if err := compaction.CheckRows(p, a.pool().Limit()); err != nil {
		return nil, nil, nil, err
	}
	return p, ids, kept, nil
}

// chunkFacts returns the catalog facts selection works on.
func chunkFacts(chunks []catalog.Chunk) []plan.ChunkFacts {
	facts := make([]plan.ChunkFacts, len(chunks))
	for i, c := range chunks {
		facts[i] = plan.ChunkFacts{ChunkID: c.ID, Level: c.Level, Ordinal: c.Ordinal, SizeBytes: c.SizeBytes,
			Rows: c.RowCount, MinTs: c.MinTimestampNs, MaxTs: c.MaxTimestampNs, Nulls: c.TimestampNullCount,
			Rollup: len(c.Blocks) > 0 && c.Blocks[0].Source != ""}
	}
	return facts
}

// checkKeys refuses chunk keys outside the topic's data prefixes (its own, and the fresh
// prefixes of its committed optimizations) before any of them is read.
func (a *Activities) checkKeys(ctx context.Context, topic catalog.Topic, chunks []catalog.Chunk) error {
	prefixes, err := a.Catalog.TopicPrefixes(ctx, topic.ID)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		err := store.CheckKey(topic.DataPrefix, c.ObjectKey)
		for _, p := range prefixes {
			if err == nil {
				break
			}
			if store.CheckPrefix(p) == nil && strings.HasPrefix(c.ObjectKey, p+"/") {
				err = store.CheckKey(p, c.ObjectKey)
			}
		}
		if err != nil {
			return &compaction.ChunkError{Key: c.ObjectKey, Err: err}
		}
	}
	return nil
}

// scanChunks scans the chunks (two at a time) and checks that each agrees with its catalog row
// and has chunks[0]'s footer; it returns the scans and the per-file footer values the outputs do
// not keep.
func (a *Activities) scanChunks(ctx context.Context, chunks []catalog.Chunk) ([]compaction.Scan, []string, error) {
	var catalogRows int64
	for _, c := range chunks {
		catalogRows += c.RowCount
	}
	samples := planSamples(a.pool().Limit())
	step := max(int64(1), (catalogRows+samples-1)/samples)

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
		heartbeat(ctx, ReadSortProgress{ChunksScanned: int(done.Add(1)), Chunks: len(chunks)})
		return nil
	}
	if err := scan(ctx, 0); err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	return scans, kept.report(), nil
}

// totalsOf sums the facts of the scanned chunks that verification checks the output against.
func totalsOf(scans []compaction.Scan) plan.Totals {
	var totals plan.Totals
	for _, s := range scans {
		totals.Rows += s.Rows
		totals.TimestampNulls += s.Nulls
		if s.MinTs != nil && (totals.MinTs == nil || *s.MinTs < *totals.MinTs) {
			totals.MinTs = s.MinTs
		}
		if s.MaxTs != nil && (totals.MaxTs == nil || *s.MaxTs > *totals.MaxTs) {
			totals.MaxTs = s.MaxTs
		}
	}
	return totals
}

// chunkRef is what the planner needs of a chunk's catalog row.
func chunkRef(c catalog.Chunk) compaction.ChunkRef {
	return compaction.ChunkRef{ID: c.ID, Key: c.ObjectKey, SizeBytes: c.SizeBytes, ArrowBytes: c.ArrowSizeBytes, Ordinal: c.Ordinal,
		MaxRowBytes: chunkstats.MaxRowBytes(c.ColumnStats)}
}

// mergePlan plans the k-way merge of the chunks (compaction.MergeInputs: one input per sorted run).
func mergePlan(chunks []catalog.Chunk, scans []compaction.Scan, opts plan.Options) (*plan.Plan, error) {
	refs := make([]compaction.ChunkRef, len(chunks))
	for i, c := range chunks {
		refs[i] = chunkRef(c)
	}
	inputs, samples := compaction.MergeInputs(refs, scans)
	return plan.Compute(inputs, samples, totalsOf(scans), opts)
}

// rollupPlan plans a tiered compaction: one input per chunk (the writer reads its row groups one
// by one), one output per selected group.
func rollupPlan(chunks []catalog.Chunk, scans []compaction.Scan, sel plan.Selection, opts plan.Options) (*plan.Plan, error) {
	inputs := make([]plan.Input, len(chunks))
	at := map[int]int{} // position in all -> position in inputs
	for i, c := range chunks {
		s := scans[i]
		inputs[i] = plan.Input{ChunkID: c.ID, ObjectKey: c.ObjectKey, Rows: s.Rows, SizeBytes: c.SizeBytes,
			FooterBytes: s.FooterBytes, ArrowBytes: c.ArrowSizeBytes, Ordinal: c.Ordinal, Storage: s.Storage,
			MaxRowGroupBytes: s.MaxRowGroupBytes, Sorted: len(s.Runs) <= 1 && (len(s.Runs) == 0 || s.Runs[0].Sorted)}
		for _, r := range s.Runs {
			inputs[i].MaxRowBytes = max(inputs[i].MaxRowBytes, r.MaxRowBytes)
		}
		if rec := compaction.RecordedMaxRow(chunkRef(c), s); rec > 0 {
			inputs[i].MaxRowBytes = rec
		}
		for _, r := range s.Runs {
			if !r.Sorted { // an unsorted run is one row group
				rg := 0
				if r.RowGroups != nil {
					rg = r.RowGroups[0]
				}
				inputs[i].Unsorted = append(inputs[i].Unsorted, rg)
			}
		}
		for _, b := range c.Blocks {
			if b.Source != "" {
				inputs[i].BlockSources = make([]string, len(c.Blocks))
				for k, b := range c.Blocks {
					inputs[i].BlockSources[k] = b.Source
				}
				break
			}
		}
		at[sel.Inputs[i]] = i
	}
	groups := make([][]int, len(sel.Groups))
	for g, members := range sel.Groups {
		for _, pos := range members {
			groups[g] = append(groups[g], at[pos])
		}
	}
	return plan.Rollup(inputs, groups, totalsOf(scans), opts)
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

// dropInputFault leaves the middle chunk out of the chunks and scans the plan is computed from
// when a test enables faults.PlanDropInput (builds with the storeopt_faults tag only), so that
// tests can prove the commit checks the rows of every chunk it replaces, not only of those the
// plan names.
func dropInputFault(chunks []catalog.Chunk, scans []compaction.Scan, opts plan.Options) ([]catalog.Chunk, []compaction.Scan, plan.Options) {
	if !faults.Enabled || len(chunks) < 2 {
		return chunks, scans, opts
	}
	i := len(chunks) / 2
	if !faults.TriggeredOn(faults.PlanDropInput, strconv.FormatInt(chunks[i].ID, 10)) {
		return chunks, scans, opts
	}
	return slices.Delete(slices.Clone(chunks), i, i+1), slices.Delete(slices.Clone(scans), i, i+1), opts
}
