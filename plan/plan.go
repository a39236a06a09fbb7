package plan

import (
	"container/heap"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unsafe"

	"github.com/storeopt/storeopt/policy"
)

// Version is the plan format version stored with every plan. 2: the topic's schema identity is
// its footer (FooterID) instead of the raw ARROW:schema entry; 3: policies (Policy, Kind, target
// ordinals, the placement of leveled outputs). A version 2 plan is a full merge and is still read
// (MinVersion).
const Version = 3

// MinVersion is the oldest plan format this code reads.
const MinVersion = 2

// DefaultMaxChunkSizeBytes is the default soft limit of one output chunk (mosaicod's default).
const DefaultMaxChunkSizeBytes = 256_000_000

// Input describes one input chunk as the planner sees it.
type Input struct {
	ChunkID   int64  `json:"chunk_id"`
	ObjectKey string `json:"key"`
	Rows      int64  `json:"rows"`
	SizeBytes int64  `json:"size"` // object size in the store
	// FooterBytes is the size of the chunk's footer; SizeBytes-FooterBytes are the rows' bytes.
	FooterBytes int64 `json:"footer"`
	ArrowBytes  int64 `json:"arrow_size"` // uncompressed Arrow bytes
	// Sorted is true when the chunk's rows are already in key order (the usual case); an
	// unsorted chunk is sorted on its own when it is read.
	Sorted bool `json:"sorted"`
	// First and Last are the smallest and largest keys of the chunk (meaningless when Rows = 0).
	First Key `json:"first"`
	Last  Key `json:"last"`
	// Ordinal is the chunk's ordinal in the topic (catalog order within its level).
	Ordinal int `json:"ordinal,omitempty"`
	// RowGroups and FirstRow name the input's part of the chunk when the chunk has several sorted
	// runs (each run is an input of its own, its SizeBytes and ArrowBytes its share of the
	// chunk's): the run's row groups and the stored index of its first row. RowGroups nil: the
	// whole chunk.
	RowGroups []int `json:"row_groups,omitempty"`
	FirstRow  int64 `json:"first_row,omitempty"`
	// ObjectBytes is the chunk's object size when the input is a run of it (0: SizeBytes).
	ObjectBytes int64 `json:"object_bytes,omitempty"`
	// Unsorted (rollup inputs) lists the row groups whose rows are not stored in key order;
	// BlockSources the source chunk of each row group when the chunk is itself a rollup (nil:
	// the chunk is the source of all its row groups).
	Unsorted     []int    `json:"unsorted,omitempty"`
	BlockSources []string `json:"block_sources,omitempty"`
	// MaxRowBytes is the uncompressed size of the input's largest row as its footer tells it,
	// bytes: the largest of its row groups' uncompressed bytes per row (exact for a row group of
	// one row, the average of its rows otherwise; parquetio.Chunk.MaxRowBytes). 0 in plans made
	// before it was recorded.
	MaxRowBytes int64 `json:"max_row_bytes,omitempty"`
	// Storage is how the chunk stores its columns' pages (parquetio.Chunk.PageStorage), which
	// the copy path takes its copy spec from (parquetio.Layout.CopySpecOf); "" in plans made
	// before it was recorded.
	Storage string `json:"storage,omitempty"`
	// MaxRowGroupBytes is the uncompressed size of the chunk's largest row group as its footer
	// tells it, bytes (parquetio.Chunk.RowGroupBytes): what the copy path holds of the input at
	// once, its pages as stored being at most that (compaction.CopyMemory). 0 in plans made
	// before it was recorded.
	MaxRowGroupBytes int64 `json:"max_row_group_bytes,omitempty"`
	// MaxRowGroupRows is the most rows one of the chunk's row groups holds, and WindowReadable
	// says that a window read fetches no more of any of them than of a chunk storeopt writes
	// (each has a page index or is no larger than one of the copy path's pages, as far as its
	// footer tells: compaction.Scan.WindowReadable): with its size, what makes a chunk one the
	// pass-through path may keep (PassThrough). 0 and false in plans made before they were
	// recorded.
	MaxRowGroupRows int64 `json:"max_row_group_rows,omitempty"`
	WindowReadable  bool  `json:"window_readable,omitempty"`
}

// InputBytes returns the object bytes of the chunks the plan reads (each chunk once, also when
// several of its runs are inputs).
func (p *Plan) InputBytes() int64 {
	var n int64
	seen := map[string]bool{}
	for _, in := range p.Inputs {
		if !seen[in.ObjectKey] {
			seen[in.ObjectKey] = true
			n += in.Object()
		}
	}
	return n
}

// Object returns the size of the input's whole object, bytes.
func (in Input) Object() int64 {
	if in.ObjectBytes > 0 {
		return in.ObjectBytes
	}
	return in.SizeBytes
}

// Sample stands for Rows consecutive rows of one input, in that input's sorted order, the first
// of which has Key. Samples of one input cover all its rows. With one row per sample the plan is
// exact; coarser samples bound the planner's memory for huge topics at the price of output
// sizes that are estimates within one sample's rows per overlapping input.
type Sample struct {
	Key  Key
	Rows int64
	// Bytes are the stored (compressed) bytes of those rows when known from the footer (the
	// rows' share of their row group's bytes), so that a chunk whose row groups differ in row
	// size is weighed row group by row group; 0: the input's average bytes per row.
	Bytes int64
}

// SampleBytes is the memory one Sample takes: what bounds a planner's samples by bytes counts.
const SampleBytes = int64(unsafe.Sizeof(Sample{}))

// Output is one output chunk: every row whose key lies in [Lo, Hi) (nil = unbounded).
type Output struct {
	Ordinal  int   `json:"ordinal"`
	Lo       *Key  `json:"lo,omitempty"`
	Hi       *Key  `json:"hi,omitempty"`
	Inputs   []int `json:"inputs"`    // positions in Plan.Inputs that hold rows of this output
	EstRows  int64 `json:"est_rows"`  // estimated rows (exact when samples are single rows)
	EstBytes int64 `json:"est_bytes"` // estimated object bytes, from the inputs' bytes per row
	// MaxOpen is the largest number of this output's inputs whose key ranges overlap at one
	// point: the most inputs the merge holds open at once.
	MaxOpen int `json:"max_open"`
	// TargetOrdinal is the ordinal the output takes in the topic at commit (in the sorted run for
	// merge plans, the first input's for concatenate plans); version 2 plans: Ordinal.
	TargetOrdinal int `json:"target_ordinal,omitempty"`
	// PassThrough says the output is its one input chunk as it is stored, which the writer
	// keeps (copies whole) instead of rewriting it when the chunk's pages allow it
	// (docs/design.md#the-pass-through-path; see PassThrough).
	PassThrough bool `json:"pass_through,omitempty"`
}

// Totals are the facts of all input rows that verification checks the output against.
type Totals struct {
	Rows           int64  `json:"rows"`
	TimestampNulls int64  `json:"timestamp_nulls"`
	MinTs          *int64 `json:"min_ts,omitempty"`
	MaxTs          *int64 `json:"max_ts,omitempty"`
}

// Plan is the description of an optimization's output (docs/design.md#vocabulary).
type Plan struct {
	Version int `json:"version"`
	// Policy is the policy the plan applies ("" in version 2 plans: full) and Kind how outputs
	// are made ("" = merge).
	Policy policy.Policy `json:"policy,omitempty"`
	Kind   Kind          `json:"kind,omitempty"`
	// Placement of a merge plan's outputs in the topic's sorted run (see Selection).
	Placement Placement `json:"placement"`

	MaxChunkSizeBytes int64 `json:"max_chunk_size_bytes"`
	// FooterID identifies the footer every input shares and every output must repeat:
	// parquetio.Footer.ID (Parquet schema elements and key/value pairs, ARROW:schema included).
	FooterID         string   `json:"footer_id"`
	Inputs           []Input  `json:"inputs"`
	Outputs          []Output `json:"outputs"`
	GroupSize        int      `json:"group_size"` // outputs per WriteChunks activity
	BatchRows        int64    `json:"batch_rows"` // rows per record batch read or written
	RowGroupRows     int64    `json:"row_group_rows"`
	ArrowBytesPerRow int64    `json:"arrow_bytes_per_row"` // average over the inputs
	// BatchBytes and RowGroupBytes bound record batches and output row groups in bytes of
	// data besides BatchRows and RowGroupRows, whatever the rows' sizes (a row larger than
	// BatchBytes is a batch of its own; see Limits). 0 in plans made before they were recorded.
	BatchBytes    int64  `json:"batch_bytes,omitempty"`
	RowGroupBytes int64  `json:"row_group_bytes,omitempty"`
	Totals        Totals `json:"totals"`
}

// Byte bounds of record batches and row groups without a memory pool: about 8 MiB of data per
// batch, 64 MiB per row group (16 MiB when rows are wide; see batchSizes).
const (
	DefaultBatchBytes    = 8 << 20
	DefaultRowGroupBytes = 64 << 20
	WideRowGroupBytes    = 16 << 20
)

// Limits returns the plan's bounds of one record batch and of one output row group, in bytes
// of data. Plans made before the bounds were recorded get the defaults (batches) and
// RowGroupRows rows of the average row (row groups).
func (p *Plan) Limits() (batchBytes, rowGroupBytes int64) {
	batchBytes, rowGroupBytes = p.BatchBytes, p.RowGroupBytes
	if batchBytes <= 0 {
		batchBytes = DefaultBatchBytes
	}
	if rowGroupBytes <= 0 {
		rowGroupBytes = max(p.RowGroupRows*p.ArrowBytesPerRow, DefaultBatchBytes)
	}
	return batchBytes, rowGroupBytes
}

// MaxRowBytes returns the largest MaxRowBytes of the inputs of output o, bytes.
func (p *Plan) MaxRowBytes(o Output) int64 {
	var n int64
	for _, i := range o.Inputs {
		n = max(n, p.Inputs[i].MaxRowBytes)
	}
	return n
}

// Placement says where a merge plan's outputs go in the topic's sorted run and what bounds them:
// the outputs take L1 ordinals From, From+1…; the kept L1 chunks from ordinal ShiftFrom on move by
// ShiftBy (ShiftBy 0: none move). Before/After and the flags are Selection's bounds, checked at
// commit.
type Placement struct {
	From            int    `json:"from"`
	ShiftFrom       int    `json:"shift_from"`
	ShiftBy         int    `json:"shift_by"`
	Before          *int64 `json:"before,omitempty"`
	After           *int64 `json:"after,omitempty"`
	AfterRows       bool   `json:"after_rows,omitempty"`
	AfterHasNonNull bool   `json:"after_has_non_null,omitempty"`
}

// EffectivePolicy is the plan's policy, full for version 2 plans.
func (p *Plan) EffectivePolicy() policy.Policy {
	if p.Policy == "" {
		return policy.Full
	}
	return p.Policy
}

// EffectiveKind is the plan's kind, merge for version 2 plans.
func (p *Plan) EffectiveKind() Kind {
	if p.Kind == "" {
		return KindMerge
	}
	return p.Kind
}

// Target returns the ordinal output o takes in the topic.
func (p *Plan) Target(o Output) int {
	if p.Version < 3 {
		return o.Ordinal
	}
	return o.TargetOrdinal
}

// Place sets the plan's policy and placement from the selection it was computed for: outputs of
// a merge take L1 ordinals from s.L1From on, and the kept chunks after them move behind them.
func (p *Plan) Place(s Selection) {
	p.Policy, p.Kind = s.Policy, s.Kind
	if s.Kind != KindMerge {
		return
	}
	p.Placement = Placement{From: s.L1From, Before: s.Before, After: s.After,
		AfterRows: s.AfterRows, AfterHasNonNull: s.AfterHasNonNull}
	for i := range p.Outputs {
		p.Outputs[i].TargetOrdinal = s.L1From + i
	}
	if s.L1FirstKept >= 0 {
		p.Placement.ShiftFrom = s.L1FirstKept
		p.Placement.ShiftBy = s.L1From + len(p.Outputs) - s.L1FirstKept
	}
}

// MaxGroups bounds the number of WriteChunks activities of one optimization when the group size
// is automatic: with about four history events per activity, a topic of any size keeps its
// workflow history near 2 000 events (a 1 TiB topic in 256 MB chunks has 4 096 outputs, 8 per
// group).
const MaxGroups = 512

// Options of Compute.
type Options struct {
	MaxChunkSizeBytes int64 // soft limit per output chunk, bytes; 0 = DefaultMaxChunkSizeBytes
	// GroupSize is the number of outputs per WriteChunks activity; 0 = automatic: one output per
	// activity (so outputs are encoded in parallel) up to MaxGroups groups, more per group beyond.
	GroupSize int
	// MemoryBudgetBytes is the worker's memory pool (0 = unlimited). Batches and row groups are
	// made small enough that one output's merge fits in a quarter of it.
	MemoryBudgetBytes int64
}

// ErrNoRows is returned by Compute and Rollup when no input has a row.
var ErrNoRows = errors.New("topic has no rows")

// Compute cuts the global row order into output chunks of at most about MaxChunkSizeBytes,
// estimating each row's bytes as its input's (SizeBytes-FooterBytes)/Rows: the per-file overhead
// of many tiny inputs is paid once per output, not once per input, and room for one footer (the
// largest input footer) is kept free in every output. samples[i] are the samples of
// inputs[i] in ascending key order. A cut is placed before the sample that would take an output
// over the limit, so an output exceeds the limit only when a single sample (one row, for exact
// samples) is larger than the limit.
//
// Cuts fall at clean input boundaries where they can: when that sample belongs to a separate
// input (one whose [First, Last] meets no other input's, see separateInputs) that fits the limit
// on its own and that already gave the output earlier rows, the cut moves back to the input's
// First, so the input goes whole to the next output (whose writer may then copy its pages
// instead of re-encoding them) and the output stays under the limit by less than that input's
// bytes. An input larger than the limit is split wherever the limit falls: moving the cut back
// would leave a smaller output without making the input whole. Overlapping inputs are cut as
// above. Returns ErrNoRows when the inputs hold no row.
func Compute(inputs []Input, samples [][]Sample, totals Totals, opts Options) (*Plan, error) {
	if opts.MaxChunkSizeBytes <= 0 {
		opts.MaxChunkSizeBytes = DefaultMaxChunkSizeBytes
	}
	if len(samples) != len(inputs) {
		return nil, fmt.Errorf("plan: %d sample lists for %d inputs", len(samples), len(inputs))
	}
	inputBytes := make([]int64, len(inputs)) // the weight of all samples of each input
	var rows, footer int64
	for i, in := range inputs {
		footer = max(footer, in.FooterBytes)
		if in.Rows == 0 {
			continue
		}
		rows += in.Rows
		for _, s := range samples[i] {
			inputBytes[i] += sampleBytes(in, s)
		}
	}
	if rows == 0 {
		return nil, ErrNoRows
	}
	p := newPlan(inputs, totals, opts)
	p.Policy, p.Kind = policy.Full, KindMerge
	// Room for the output's own footer: about the largest input footer (same schema).
	budget := max(opts.MaxChunkSizeBytes-footer, 1)
	separate := separateInputs(inputs)
	cur := Output{}
	// The samples of a separate input are consecutive in all. When the current output holds
	// the start of one, run is its position in inputs and runRows, runBytes what the output
	// holds of it; run is -1 otherwise.
	run, runRows, runBytes := -1, int64(0), int64(0)
	// last is the previous sample's key (seen: there was one): sample lists not each in key
	// order would merge out of order.
	var last Key
	seen := false
	for s := range inKeyOrder(inputs, samples) {
		if seen && s.Key.Compare(last) <= 0 {
			return nil, fmt.Errorf("plan: the samples of input %d are not in ascending key order (%s after %s)", s.input, s.Key, last)
		}
		last, seen = s.Key, true
		if s.input != run {
			run, runRows, runBytes = -1, 0, 0
			if separate[s.input] && s.Key.Compare(inputs[s.input].First) <= 0 {
				run = s.input
			}
		}
		if cur.EstRows > 0 && cur.EstBytes+s.bytes > budget {
			k := s.Key
			// Move the cut back to the start of a separate input that fits an output whole, if
			// the output keeps a row.
			moved := run >= 0 && runRows > 0 && cur.EstRows > runRows && inputBytes[run] <= budget
			if moved {
				k = inputs[run].First
				cur.EstRows -= runRows
				cur.EstBytes -= runBytes
			}
			cur.Hi = &k
			p.Outputs = append(p.Outputs, cur)
			cur = Output{Ordinal: len(p.Outputs), Lo: &k}
			if moved {
				cur.EstRows, cur.EstBytes = runRows, runBytes
			}
		}
		cur.EstRows += s.Rows
		cur.EstBytes += s.bytes
		if run >= 0 {
			runRows += s.Rows
			runBytes += s.bytes
		}
	}
	p.Outputs = append(p.Outputs, cur)
	p.setGroupSize()
	for i := range p.Outputs {
		o := &p.Outputs[i]
		o.TargetOrdinal = o.Ordinal
		for j, in := range inputs {
			if in.Rows > 0 && overlaps(in, o.Lo, o.Hi) {
				o.Inputs = append(o.Inputs, j)
			}
		}
		o.MaxOpen = overlapDepth(inputs, o.Inputs)
		o.PassThrough = p.PassThrough(*o)
	}
	return p, nil
}

// newPlan returns a plan of inputs with the batch and row group sizes of opts.
func newPlan(inputs []Input, totals Totals, opts Options) *Plan {
	p := &Plan{
		Version:           Version,
		MaxChunkSizeBytes: opts.MaxChunkSizeBytes,
		Inputs:            inputs,
		GroupSize:         opts.GroupSize,
		Totals:            totals,
	}
	p.BatchRows, p.RowGroupRows = batchSizes(inputs)
	p.ArrowBytesPerRow = arrowBytesPerRow(inputs)
	p.BatchBytes, p.RowGroupBytes = DefaultBatchBytes, DefaultRowGroupBytes
	if p.ArrowBytesPerRow > wideRowBytes {
		p.RowGroupBytes = WideRowGroupBytes
	}
	if opts.MemoryBudgetBytes > 0 {
		// batch: 1/128 of the pool (several are held at once); row group: 1/32, or 1/64 for wide
		// rows (a quarter of the narrow rows' row group without a pool, see batchSizes). The
		// rows are those of the average row; the bytes bound every batch and row group however
		// the rows' sizes are skewed.
		rgShare := int64(32)
		if p.ArrowBytesPerRow > wideRowBytes {
			rgShare = 64
		}
		p.BatchRows = max(min(p.BatchRows, opts.MemoryBudgetBytes/128/p.ArrowBytesPerRow), 1)
		p.RowGroupRows = max(min(p.RowGroupRows, opts.MemoryBudgetBytes/rgShare/p.ArrowBytesPerRow), 1)
		p.BatchBytes = max(min(p.BatchBytes, opts.MemoryBudgetBytes/128), 1)
		p.RowGroupBytes = max(min(p.RowGroupBytes, opts.MemoryBudgetBytes/rgShare), 1)
	}
	return p
}

// setGroupSize sets an automatic group size: one output per WriteChunks activity (so outputs are
// encoded in parallel), more per activity beyond MaxGroups outputs.
func (p *Plan) setGroupSize() {
	if p.GroupSize <= 0 {
		p.GroupSize = (len(p.Outputs) + MaxGroups - 1) / MaxGroups
	}
}

// Rollup plans a tiered compaction (Qbeast rollup): one output per group, joining the group's
// inputs (positions in inputs, neighbours in ingestion order) in order, each input's rows sorted
// into block(s) of their own; the output takes the ordinal of its group's first input. Estimated
// bytes are the inputs' object bytes less all but one footer. Returns ErrNoRows when no group has
// a row; groups without rows are left out.
func Rollup(inputs []Input, groups [][]int, totals Totals, opts Options) (*Plan, error) {
	if opts.MaxChunkSizeBytes <= 0 {
		opts.MaxChunkSizeBytes = DefaultMaxChunkSizeBytes
	}
	p := newPlan(inputs, totals, opts)
	p.Policy, p.Kind = policy.Tiered, KindConcatenate
	for _, g := range groups {
		o := Output{Ordinal: len(p.Outputs), MaxOpen: 1}
		var footer int64
		for _, j := range g {
			if j < 0 || j >= len(inputs) {
				return nil, fmt.Errorf("plan: rollup group names input %d of %d", j, len(inputs))
			}
			in := inputs[j]
			o.Inputs = append(o.Inputs, j)
			o.EstRows += in.Rows
			o.EstBytes += in.SizeBytes - in.FooterBytes
			footer = max(footer, in.FooterBytes)
		}
		if o.EstRows == 0 {
			continue
		}
		o.EstBytes += footer
		o.TargetOrdinal = inputs[g[0]].Ordinal
		p.Outputs = append(p.Outputs, o)
	}
	if len(p.Outputs) == 0 {
		return nil, ErrNoRows
	}
	p.setGroupSize()
	return p, nil
}

func bytesOf(in Input, rows int64) int64 {
	if in.Rows == 0 {
		return 0
	}
	data := max(in.SizeBytes-in.FooterBytes, 0)
	return (data*rows + in.Rows - 1) / in.Rows
}

// sampleBytes is the weight of sample s of input in: its stored bytes when known, else its rows'
// share of the input's.
func sampleBytes(in Input, s Sample) int64 {
	if s.Bytes > 0 {
		return s.Bytes
	}
	return bytesOf(in, s.Rows)
}

// weighted is a sample in the walk of Compute: its weight and its input's position.
type weighted struct {
	Sample
	bytes int64
	input int
}

// inKeyOrder yields the samples of the inputs with rows in ascending key order, merging the
// inputs' lists (each in key order) with a heap of one cursor per input: the planner holds the
// samples once, as the scans gave them, not a sorted copy of them all.
func inKeyOrder(inputs []Input, samples [][]Sample) iter.Seq[weighted] {
	return func(yield func(weighted) bool) {
		h := &cursors{samples: samples}
		for i, in := range inputs {
			if in.Rows > 0 && len(samples[i]) > 0 {
				h.at = append(h.at, cursor{input: i})
			}
		}
		heap.Init(h)
		for h.Len() > 0 {
			c := &h.at[0]
			s := samples[c.input][c.next]
			if !yield(weighted{Sample: s, bytes: sampleBytes(inputs[c.input], s), input: c.input}) {
				return
			}
			if c.next++; c.next == len(samples[c.input]) {
				heap.Pop(h)
			} else {
				heap.Fix(h, 0)
			}
		}
	}
}

// cursor is the next sample of one input in inKeyOrder.
type cursor struct{ input, next int }

// cursors is a heap of cursors by their next sample's key (keys are unique: each names its
// input and row).
type cursors struct {
	at      []cursor
	samples [][]Sample
}

func (h *cursors) key(i int) Key      { return h.samples[h.at[i].input][h.at[i].next].Key }
func (h *cursors) Len() int           { return len(h.at) }
func (h *cursors) Less(i, j int) bool { return h.key(i).Compare(h.key(j)) < 0 }
func (h *cursors) Swap(i, j int)      { h.at[i], h.at[j] = h.at[j], h.at[i] }
func (h *cursors) Push(x any)         { h.at = append(h.at, x.(cursor)) }
func (h *cursors) Pop() any {
	last := h.at[len(h.at)-1]
	h.at = h.at[:len(h.at)-1]
	return last
}

// separateInputs reports, per position in inputs, whether the input has rows and its [First,
// Last] meets no other input's with rows: then its rows are consecutive in the global order and
// no other input's row lies between them. Inputs are compared in ascending First (ties by
// position, so the answer does not depend on the order of equal keys).
func separateInputs(inputs []Input) []bool {
	order := make([]int, 0, len(inputs))
	for j, in := range inputs {
		if in.Rows > 0 {
			order = append(order, j)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return inputs[a].First.Compare(inputs[b].First) })
	separate := make([]bool, len(inputs))
	var reach *Key // the largest Last of the inputs before the current one in First order
	for n, j := range order {
		in := inputs[j]
		separate[j] = (reach == nil || reach.Compare(in.First) < 0) &&
			(n+1 == len(order) || in.Last.Compare(inputs[order[n+1]].First) < 0)
		if reach == nil || in.Last.Compare(*reach) > 0 {
			reach = &in.Last
		}
	}
	return separate
}

// overlaps reports whether any key of in may lie in [lo, hi).
func overlaps(in Input, lo, hi *Key) bool {
	return (hi == nil || in.First.Compare(*hi) < 0) && (lo == nil || in.Last.Compare(*lo) >= 0)
}

// batchSizes picks the rows per record batch (about 8 MiB of Arrow data) and per row group
// (about 64 MiB, 16 MiB when rows are wider than 4 KiB, as for camera payloads: readers of
// binary columns decode a whole column chunk at once) from the inputs'
// Arrow bytes per row. Both are deterministic functions of the inputs, so a retried write gives
// the same bytes.
// wideRowBytes is the Arrow bytes per row above which rows count as wide (camera frames): their
// row groups are a quarter of the narrow rows' in bytes, still hundreds of rows.
const wideRowBytes = 4096

func batchSizes(inputs []Input) (batchRows, rowGroupRows int64) {
	bpr := arrowBytesPerRow(inputs)
	rgBytes := int64(64 << 20)
	if bpr > wideRowBytes {
		rgBytes = 16 << 20
	}
	batchRows = min(max((8<<20)/bpr, 16), 64<<10)
	rowGroupRows = min(max(rgBytes/bpr, 16), 1<<20)
	return batchRows, rowGroupRows
}

// Groups returns the number of WriteChunks groups.
func (p *Plan) Groups() int { return (len(p.Outputs) + p.GroupSize - 1) / p.GroupSize }

// Group returns the outputs of group g (0-based); nil when g is out of range.
func (p *Plan) Group(g int) []Output {
	lo := g * p.GroupSize
	if g < 0 || lo >= len(p.Outputs) {
		return nil
	}
	return p.Outputs[lo:min(lo+p.GroupSize, len(p.Outputs))]
}

// Picture draws the plan for tests and logs: one line per input with its sortedness (s/u), its key
// range [First .. Last] and a bar over the outputs, "#" where the output reads the input, then one
// line per output with its key range [Lo, Hi) ("-inf"/"+inf" when unbounded), estimated rows and
// bytes, the inputs it reads and "pass-through" when it is to pass through.
func (p *Plan) Picture() string {
	var b strings.Builder
	ranges := make([]string, len(p.Inputs))
	width := 0
	for j, in := range p.Inputs {
		ranges[j] = "(no rows)"
		if in.Rows > 0 {
			ranges[j] = "[" + in.First.String() + " .. " + in.Last.String() + "]"
		}
		width = max(width, len(ranges[j]))
	}
	for j, in := range p.Inputs {
		fmt.Fprintf(&b, "in%-3d %s %-*s |", j, sortedMark(in), width, ranges[j])
		for _, o := range p.Outputs {
			if slices.Contains(o.Inputs, j) {
				b.WriteString("#")
			} else {
				b.WriteString(".")
			}
		}
		fmt.Fprintf(&b, "| rows=%d\n", in.Rows)
	}
	for _, o := range p.Outputs {
		pass := ""
		if o.PassThrough {
			pass = " pass-through"
		}
		fmt.Fprintf(&b, "out%-3d [%s, %s) rows=%d bytes=%d inputs=%v%s\n",
			o.Ordinal, bound(o.Lo, "-inf"), bound(o.Hi, "+inf"), o.EstRows, o.EstBytes, o.Inputs, pass)
	}
	return b.String()
}

func bound(k *Key, unbounded string) string {
	if k == nil {
		return unbounded
	}
	return k.String()
}

func sortedMark(in Input) string {
	if in.Sorted {
		return "s"
	}
	return "u"
}

// arrowBytesPerRow is the inputs' average uncompressed Arrow bytes per row (at least 1).
func arrowBytesPerRow(inputs []Input) int64 {
	var rows, arrow int64
	for _, in := range inputs {
		rows += in.Rows
		arrow += in.ArrowBytes
	}
	return max(int64(1), arrow/max(rows, 1))
}

// overlapDepth returns the largest number of the given inputs whose [First, Last] key ranges
// contain one common key.
func overlapDepth(inputs []Input, which []int) int {
	type edge struct {
		k     Key
		start bool
	}
	edges := make([]edge, 0, 2*len(which))
	for _, j := range which {
		edges = append(edges, edge{inputs[j].First, true}, edge{inputs[j].Last, false})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.k.Compare(b.k); c != 0 {
			return c
		}
		if a.start == b.start {
			return 0
		}
		if a.start { // a range that starts where another ends overlaps it (closed ranges)
			return -1
		}
		return 1
	})
	depth, best := 0, 0
	for _, e := range edges {
		if e.start {
			depth++
			best = max(best, depth)
		} else {
			depth--
		}
	}
	return best
}
