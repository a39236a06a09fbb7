package compaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/merge"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// OutputResult describes one written output chunk.
type OutputResult struct {
	Key       string
	SizeBytes int64
	Stats     chunkstats.Stats
	// Read is the digest of the input rows merged into the chunk, as decoded from the inputs;
	// Written the digest of the rows decoded from the chunk's bytes as the store holds them,
	// read back after the upload (docs/design.md#verification):
	// an encoder fault, a short or damaged upload shows as a difference.
	Read, Written verify.Digest
	// Taken is which stored rows of which input chunks the merge emitted into the chunk.
	Taken verify.Taken
	// Footer identifies the footer read back from the written chunk (parquetio.Footer.Digest).
	Footer []byte
	// Blocks is the written chunk's block index, read back from its footer; Sources names, for a
	// rollup output, the source chunk of each block (nil for merge outputs).
	Blocks  []parquetio.Block
	Sources []string
	// FooterBytes is the length of the written chunk's footer: its serialized file metadata and
	// the 8-byte trailer (the last FooterBytes bytes of the object).
	FooterBytes int64
	// Copied says the chunk was assembled from its inputs' pages (docs/design.md#the-copy-path):
	// the pages of its copyable columns copied as stored, the other columns re-encoded. False:
	// the chunk was rewritten (every row decoded, merged and encoded).
	Copied bool
	// NotCopied, for an output whose inputs follow each other but whose pages could not be
	// copied, says why (parquetio.ErrNotCopyable's cause); "" otherwise.
	NotCopied string
	// PassedThrough says the chunk is a copy of its one input chunk, kept as stored
	// (docs/design.md#the-pass-through-path); NotPassed, for an output the plan marks
	// PassThrough that was written otherwise, says why.
	PassedThrough bool
	NotPassed     string
}

// Inputs resolves plan inputs to object keys for WriteOutput.
type Inputs struct {
	Bucket *blob.Bucket
	Plan   *plan.Plan
	Mem    memory.Allocator
	// ColumnStats returns the catalog's column statistics of input chunks by chunk ID; an output
	// written by the copy path (whose values are not all decoded) takes its inputs' merged. Nil:
	// such outputs have no column statistics.
	ColumnStats func(ctx context.Context, chunkIDs []int64) (map[int64]map[string]catalog.ColumnStats, error)
	// Reserve grows the output's reservation of the memory pool to n bytes before an output
	// the copy path could not write after all (parquetio.ErrNotCopyable) is rewritten: the
	// reservation was made for OutputMemory, which is the copy path's need (CopyMemory), and n
	// is the rewrite's (RewriteMemory). An error fails the output. Nil: nothing to grow.
	Reserve func(ctx context.Context, n int64) error
	footer  *parquetio.Footer // the topic's, set by WriteOutput and WriteRollup from their layout
	// shared holds the chunks opened for several runs at once (a rollup chunk has one run per
	// block), so that each is opened and its footer decoded once, not once per run.
	shared map[string]*sharedChunk
}

// sharedChunk is a chunk opened once for the runs of it being merged; the last run to close it
// closes it.
type sharedChunk struct {
	c    *openedChunk
	refs int
}

// open opens input i for the merge (merge.OpenFunc; called from the merging goroutine only).
func (in Inputs) open(ctx context.Context, i int) (merge.Source, error) {
	pi := in.Plan.Inputs[i]
	run := RunSpec{RowGroups: pi.RowGroups, FirstRow: pi.FirstRow, Sorted: pi.Sorted}
	if pi.RowGroups == nil || in.shared == nil { // the whole chunk: nothing to share
		return OpenRun(ctx, in.Bucket, pi.ObjectKey, run, in.footer, in.limits(), in.Mem)
	}
	sc, ok := in.shared[pi.ObjectKey]
	if !ok {
		c, err := openChunk(ctx, in.Bucket, pi.ObjectKey, in.Mem)
		if err != nil {
			return nil, err
		}
		if _, drift := parquetio.PerFileDifferences(in.footer, c.Footer); drift != "" {
			c.Close()
			return nil, &ChunkError{Key: pi.ObjectKey, Err: fmt.Errorf("footer changed since planning: %s", drift)}
		}
		sc = &sharedChunk{c: c}
		in.shared[pi.ObjectKey] = sc
	}
	sc.refs++
	return RunSource(ctx, sc.c.Chunk, pi.ObjectKey, run, in.limits(), in.Mem, func() {
		if sc.refs--; sc.refs == 0 {
			sc.c.Close()
			delete(in.shared, pi.ObjectKey)
		}
	})
}

// limits are the bounds of the record batches read from the plan's inputs.
func (in Inputs) limits() parquetio.Limits {
	b, _ := in.Plan.Limits()
	return parquetio.Limits{Rows: in.Plan.BatchRows, Bytes: b}
}

// WriteOutput writes output chunk o of a merge plan to key in the bucket: the merge of its
// inputs restricted to o's key range, read in record batches of at most plan.BatchRows rows and
// about plan.BatchBytes bytes (per input row group, from its footer: a row larger than that is a
// batch of its own), written in row groups of at most plan.RowGroupRows rows and about
// plan.RowGroupBytes bytes (plan.Limits), so that the same inputs always give the same bytes
// and a skewed topic's large rows never pile up in one batch or row group. Reading and merging run in one goroutine, encoding in another. The object is
// overwritten if it exists; on error the upload is aborted. The chunk is written in layout (the
// Parquet schema and footer pairs of the topic's chunks, parquetio.Layout); after closing, its
// footer is read back and must equal the layout's (verify.MismatchError otherwise), its digest is
// returned for the commit's verification and its row groups are the chunk's blocks; every row is
// decoded back from the stored object and digested (OutputResult.Written). An output without
// rows is an error. An output whose inputs allow it is written by the copy path instead
// (copyOrder, writeCopy): the same rows in the same order, its pages copied where they can be.
func WriteOutput(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64)) (OutputResult, error) {
	in.footer = layout.Footer
	notPassed := ""
	if passes(in.Plan, o) {
		res, err := passThrough(ctx, in, o, key, layout, progress)
		var np *errNotPassed
		if !errors.As(err, &np) {
			return res, err
		}
		notPassed = np.why
		if err := in.reserve(ctx, writeMemory(in.Plan, o)); err != nil {
			return OutputResult{Key: key}, err
		}
	}
	res, err := writeMerged(ctx, in, o, key, layout, progress)
	res.NotPassed = notPassed
	return res, err
}

// writeMerged writes output o of a merge plan by the copy path when its inputs allow it, else
// (or when the copy path cannot write it after all) by the rewrite.
func writeMerged(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64)) (OutputResult, error) {
	if order, ok := copyOrder(in.Plan, o); ok && CopyPages {
		res, err := writeCopy(ctx, in, order, false, key, layout, progress)
		if !errors.Is(err, parquetio.ErrNotCopyable) {
			return res, err
		}
		if err := in.reserveRewrite(ctx, o); err != nil {
			return OutputResult{Key: key}, err
		}
		return rewriteOutput(ctx, in, o, key, layout, progress, err.Error())
	}
	return rewriteOutput(ctx, in, o, key, layout, progress, "")
}

// rewriteOutput writes output o by the rewrite path (see WriteOutput); notCopied is why the copy
// path was not taken, when it was tried.
func rewriteOutput(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64), notCopied string) (OutputResult, error) {
	in.shared = map[string]*sharedChunk{}
	res, err := writeChunk(ctx, in, key, layout, progress, func(ctx context.Context, out *sink) error {
		col := newCollector(layout.Schema, in.Plan.BatchRows, in.Plan.ArrowBytesPerRow, out.mem, out.send)
		defer col.release()
		r := merge.Range{Lo: o.Lo, Hi: o.Hi, Inputs: o.Inputs}
		for _, i := range o.Inputs {
			r.First = append(r.First, in.Plan.Inputs[i].First)
			r.ChunkIDs = append(r.ChunkIDs, in.Plan.Inputs[i].ChunkID)
		}
		if err := merge.Merge(ctx, r, in.open, col.add, &out.res.Read, out.res.Taken); err != nil {
			return err
		}
		return col.flush()
	})
	res.NotCopied = notCopied
	return res, err
}

// reserveRewrite grows the reservation of output o, which the copy path could not write after
// all, to what its rewrite needs (Inputs.Reserve).
func (in Inputs) reserveRewrite(ctx context.Context, o plan.Output) error {
	return in.reserve(ctx, RewriteMemory(in.Plan, o))
}

// reserve grows the output's reservation to n bytes (Inputs.Reserve), when there is one to grow.
func (in Inputs) reserve(ctx context.Context, n int64) error {
	if in.Reserve == nil {
		return nil
	}
	return in.Reserve(ctx, n)
}

// WriteRollup writes output chunk o of a concatenate plan (tiered compaction, Qbeast rollup) to
// key: the rows of each of o's inputs in input order, each row group of each input a block of its
// own (its rows sorted when they are not stored in key order), so every block keeps the range of
// the small write it came from. Deterministic, checked and read back like WriteOutput; the
// result's Sources name each block's source chunk. When every input row group is stored in key
// order the output is written by the copy path (writeCopy) where the inputs' columns allow it.
func WriteRollup(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64)) (OutputResult, error) {
	in.footer = layout.Footer
	notCopied := ""
	if copyPath(in.Plan, o) {
		res, err := writeCopy(ctx, in, o.Inputs, true, key, layout, progress)
		if !errors.Is(err, parquetio.ErrNotCopyable) {
			return res, err
		}
		notCopied = err.Error()
		if err := in.reserveRewrite(ctx, o); err != nil {
			return OutputResult{Key: key}, err
		}
	}
	res, err := writeChunk(ctx, in, key, layout, progress, func(ctx context.Context, out *sink) error {
		var h verify.Hasher
		for _, i := range o.Inputs {
			pi := in.Plan.Inputs[i]
			taken := verify.NewChunkPositions(pi.ChunkID)
			err := readBlocks(ctx, in, pi, out.mem, &taken, func(rec arrow.RecordBatch) error {
				h.AddRows(&out.res.Read, rec, 0, rec.NumRows())
				rec.Retain()
				return out.send(rec)
			}, out.endBlock)
			if err != nil {
				return err
			}
			out.res.Taken.Add(taken)
		}
		return nil
	})
	res.NotCopied = notCopied
	return res, err
}

// readBlocks reads the row groups of input pi one after the other, handing each one's rows in key
// order to emit (valid during the call) and then calling endBlock with the block's source chunk;
// the stored positions of the rows emitted go to taken.
func readBlocks(ctx context.Context, in Inputs, pi plan.Input, mem memory.Allocator, taken *verify.ChunkPositions,
	emit func(arrow.RecordBatch) error, endBlock func(source string) error) error {
	c, err := openChunk(ctx, in.Bucket, pi.ObjectKey, mem)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, drift := parquetio.PerFileDifferences(in.footer, c.Footer); drift != "" {
		return &ChunkError{Key: pi.ObjectKey, Err: fmt.Errorf("footer changed since planning: %s", drift)}
	}
	unsorted := map[int]bool{}
	for _, rg := range pi.Unsorted {
		unsorted[rg] = true
	}
	var first int64 // stored index of the row group's first row
	for rg := range c.NumRowGroups() {
		n := c.RowGroupRows(rg)
		if n == 0 {
			continue
		}
		src := pi.ObjectKey
		if rg < len(pi.BlockSources) && pi.BlockSources[rg] != "" {
			src = pi.BlockSources[rg]
		}
		err := func() error {
			br, err := c.BatchesWithin(ctx, in.limits(), []int{rg})
			if err != nil {
				return &ChunkError{Key: pi.ObjectKey, Err: err}
			}
			defer br.Release()
			if unsorted[rg] {
				rec, order, err := sortedRecord(ctx, pi.ObjectKey, c.Schema, br, c.TimestampField, mem)
				if err != nil || rec == nil {
					return err
				}
				defer rec.Release()
				if order == nil {
					taken.AddRange(first, rec.NumRows())
				} else {
					rows := make([]int64, len(order))
					for i, r := range order {
						rows[i] = first + r
					}
					taken.AddRows(rows)
				}
				return emit(rec)
			}
			next := first
			for rec := br.Next(); rec != nil; rec = br.Next() {
				taken.AddRange(next, rec.NumRows())
				next += rec.NumRows()
				if err := emit(rec); err != nil {
					return err
				}
			}
			if err := br.Err(); err != nil {
				return &ChunkError{Key: pi.ObjectKey, Err: err}
			}
			return nil
		}()
		if err != nil {
			return err
		}
		first += n
		if err := endBlock(src); err != nil {
			return err
		}
	}
	return nil
}

// sink is where a producer of writeChunk hands its rows: batches go to the encoder goroutine in
// order, and block boundaries with them.
type sink struct {
	ctx context.Context
	ch  chan<- outItem
	mem memory.Allocator
	res *OutputResult
	// flight bounds the bytes of the batches handed over and not yet written (see
	// inFlightBatches).
	flight *flight
}

// outItem is one batch for the encoder and its bytes of data (chunkstats.RowsBytes), or (rec
// nil) the end of a block and its source.
type outItem struct {
	rec    arrow.RecordBatch
	bytes  int64
	source string
}

// inFlightBatches is how many batches of the plan's batch bytes may be on their way from the
// producer to the encoder (in the channel, or being encoded): a larger batch (one row larger
// than a batch) waits until it is the only one.
const inFlightBatches = 4

// flight is a bound of bytes in flight: acquiring more than the bound waits until nothing else
// is in flight.
type flight struct {
	sem   *semaphore.Weighted
	limit int64
}

func newFlight(limit int64) *flight {
	return &flight{sem: semaphore.NewWeighted(limit), limit: limit}
}

func (f *flight) acquire(ctx context.Context, n int64) error {
	return f.sem.Acquire(ctx, max(min(n, f.limit), 0))
}

func (f *flight) release(n int64) { f.sem.Release(max(min(n, f.limit), 0)) }

// send hands rec (owned: released by the encoder) to the encoder, once the bytes in flight allow.
func (s *sink) send(rec arrow.RecordBatch) error {
	n := chunkstats.RowsBytes(rec, 0, rec.NumRows())
	if err := s.flight.acquire(s.ctx, n); err != nil {
		rec.Release()
		return err
	}
	select {
	case s.ch <- outItem{rec: rec, bytes: n}:
		return nil
	case <-s.ctx.Done():
		s.flight.release(n)
		rec.Release()
		return s.ctx.Err()
	}
}

// endBlock ends the block being written; source is the chunk its rows came from.
func (s *sink) endBlock(source string) error {
	select {
	case s.ch <- outItem{source: source}:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// writeChunk writes one output chunk from the rows produce hands to its sink: produce runs in one
// goroutine, the encoder in another. See WriteOutput.
func writeChunk(ctx context.Context, in Inputs, key string, layout *parquetio.Layout, progress func(rows int64),
	produce func(ctx context.Context, out *sink) error) (OutputResult, error) {
	res := OutputResult{Key: key, Taken: verify.Taken{}}
	schema := layout.Schema
	mem := in.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	stats, err := chunkstats.NewAccumulator(schema)
	if err != nil {
		return res, err
	}
	uctx, abort := context.WithCancel(ctx)
	defer abort()
	bw, cw, err := newUpload(uctx, in.Bucket, key)
	if err != nil {
		return res, err
	}
	batchBytes, rowGroupBytes := in.Plan.Limits()
	pw, err := parquetio.NewWriter(cw, writerLayout(layout), parquetio.WriterOptions{RowGroupRows: in.Plan.RowGroupRows,
		RowGroupBytes: rowGroupBytes, Mem: mem, EncodeWorkers: EncodeWorkers, Helpers: helpers})
	if err != nil {
		abort()
		_ = bw.Close()
		return res, err
	}

	items := make(chan outItem, 2)
	fl := newFlight(inFlightBatches * batchBytes)
	var sources []string
	g, gctx := errgroup.WithContext(uctx)
	panics.Go(g, "encoder of "+key, func() error {
		tsField := schema.FieldIndices(parquetio.TimestampColumn)[0]
		for item := range items {
			if item.rec == nil { // end of a block
				if err := pw.EndRowGroup(); err != nil {
					return err
				}
				for len(sources) < pw.RowGroups() {
					sources = append(sources, item.source)
				}
				continue
			}
			if err := faults.Hit(gctx, faults.WriteChunksEncode); err != nil {
				item.rec.Release()
				fl.release(item.bytes)
				return err
			}
			rec := corruptBatch(item.rec, tsField, mem)
			stats.Add(rec)
			err := pw.WriteSized(rec, item.bytes)
			rec.Release()
			fl.release(item.bytes)
			if err != nil {
				return err
			}
			if progress != nil {
				progress(pw.Rows())
			}
		}
		return stats.Err()
	})
	panics.Go(g, "reader and merger of "+key, func() error {
		defer close(items)
		if err := faults.Hit(gctx, faults.WriteChunksMerge); err != nil {
			return err
		}
		return produce(gctx, &sink{ctx: gctx, ch: items, mem: mem, res: &res, flight: fl})
	})
	if err := g.Wait(); err != nil {
		// The encoder stopped early (or panicked): release what the reader left in the
		// channel (closed by then: the reader stops at its next send once gctx is cancelled).
		for rest := range items {
			if rest.rec != nil {
				rest.rec.Release()
			}
		}
		abort()
		pw.Discard()
		_ = bw.Close()
		return res, outputError(key, err)
	}
	if err := pw.Close(); err != nil {
		abort()
		_ = bw.Close()
		if errors.Is(err, parquetio.ErrNoRows) {
			return res, &verify.MismatchError{What: fmt.Sprintf("output chunk %s would have no rows: the plan does not match its inputs", key)}
		}
		return res, outputError(key, err)
	}
	if err := bw.Close(); err != nil {
		return res, fmt.Errorf("upload %s: %w", key, err)
	}
	res.SizeBytes = cw.n
	res.Stats = stats.Result()
	footer, blocks, footerBytes, err := readBack(ctx, in, key, layout.Footer, res.Stats.RowCount, func(c *openedChunk) error {
		return readBackRows(ctx, in, key, c, &res.Written)
	})
	if err != nil {
		return res, err
	}
	res.Footer, res.Blocks, res.FooterBytes = footer.Digest(), blocks, footerBytes
	if sources != nil {
		if len(sources) != len(res.Blocks) {
			return res, &verify.MismatchError{What: fmt.Sprintf("written chunk %s has %d row groups, %d blocks written",
				key, len(res.Blocks), len(sources))}
		}
		res.Sources = sources
	}
	return res, nil
}

// readBack opens the written chunk as the store holds it, the way inputs are opened (openChunk),
// checks its footer against the topic's (Parquet schema elements and key/value pairs, verbatim),
// that it holds rows rows in row groups that are none of them empty, and has check digest it
// (readBackRows: every row decoded from it, in batches of the plan's limits). It returns the footer
// read back, the chunk's block index (its row groups) and the length of its footer. It runs once the merge and the
// encoder are done, within their reservation of the memory pool (OutputMemory counts it).
func readBack(ctx context.Context, in Inputs, key string, want *parquetio.Footer, rows int64, check func(*openedChunk) error) (*parquetio.Footer, []parquetio.Block, int64, error) {
	c, err := openChunk(ctx, in.Bucket, key, in.Mem)
	if err != nil {
		var ce *ChunkError
		if errors.As(err, &ce) {
			return nil, nil, 0, &verify.MismatchError{What: fmt.Sprintf("written chunk %s cannot be read back: %v", key, ce.Err)}
		}
		return nil, nil, 0, err
	}
	defer c.Close()
	if d := parquetio.FirstFooterDifference(want, c.Footer); d != "" {
		return nil, nil, 0, &verify.MismatchError{What: fmt.Sprintf("written chunk %s: footer differs from the inputs': %s", key, d)}
	}
	if c.NumRows != rows || rows == 0 {
		return nil, nil, 0, &verify.MismatchError{What: fmt.Sprintf("written chunk %s holds %d rows, %d written", key, c.NumRows, rows)}
	}
	if g := c.EmptyRowGroup(); g >= 0 {
		return nil, nil, 0, &verify.MismatchError{What: fmt.Sprintf("written chunk %s: row group %d is empty", key, g)}
	}
	blocks, err := c.Blocks()
	if err != nil {
		return nil, nil, 0, &verify.MismatchError{What: fmt.Sprintf("written chunk %s: block index: %v", key, err)}
	}
	if err := check(c); err != nil {
		return nil, nil, 0, err
	}
	return c.Footer, blocks, c.FooterBytes + 8, nil
}

// ReadBackWorkers is how many goroutines decode a written chunk back at most, each the row
// groups w, w+workers… of it from a reader of its own over the one opened object (a chunk's
// reader serves one record reader at a time): digests add up, so the order they are read in
// does not matter, and the read-back, which runs after the upload, takes a fraction of the time
// of a plain read. All but the first are helpers (helpers). OutputMemory counts a batch per
// worker.
var ReadBackWorkers = min(runtime.GOMAXPROCS(0), 4)

// EncodeWorkers is how many goroutines encode the columns of an output's batches at once
// (parquetio.WriterOptions.EncodeWorkers), the encoder's own and helpers (helpers): the encoder
// is the slowest stage of a rewrite, and a topic of one output chunk would otherwise use one
// core for it. OutputMemory counts the encoded row group the writer then holds.
var EncodeWorkers = min(runtime.GOMAXPROCS(0), 4)

// helpers bounds, for the whole process, the goroutines that the outputs being written add to
// their own (an output's merge and encoder goroutines, or its first read-back goroutine) to
// encode and read back: EncodeWorkers and ReadBackWorkers are each output's most, and a helper
// is taken only while the budget has room (TryAcquire; never waited for), for one batch's
// columns or one read-back. One output alone gets GOMAXPROCS-1 of them, as many as the cores
// its own goroutines leave; several outputs at once share them instead of each starting its
// own, which ran more goroutines than cores (the CPU profile of a rewrite with several outputs
// spent a tenth of its time preempting them). The bytes written do not depend on how many
// helpers an output gets (parquetio.WriterOptions.Helpers), nor does the digest read back.
var helpers = semaphore.NewWeighted(int64(max(runtime.GOMAXPROCS(0)-1, 1)))

// readBackRows adds the digest of every row of the written chunk c (opened from key) to written,
// decoded by up to ReadBackWorkers goroutines (parquetio.Chunk.DigestRows: from its pages where
// its columns allow, else in batches of the plan's limits).
func readBackRows(ctx context.Context, in Inputs, key string, c *openedChunk, written *verify.Digest) error {
	workers := 1
	for workers < min(ReadBackWorkers, c.NumRowGroups()) && helpers.TryAcquire(1) {
		workers++
	}
	defer helpers.Release(int64(workers - 1))
	digests := make([]verify.Digest, workers)
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		panics.Go(g, "read back of "+key, func() error {
			rc := c.Chunk
			if w > 0 {
				// A reader of its own over the object already opened (read whole, or read by
				// ranges): the object is not fetched again.
				var err error
				if rc, err = parquetio.Open(c.obj, in.Mem); err != nil {
					return readBackError(key, err)
				}
				defer rc.Close()
			}
			var rowGroups []int
			for rg := w; rg < rc.NumRowGroups(); rg += workers {
				rowGroups = append(rowGroups, rg)
			}
			if err := rc.DigestRows(gctx, in.limits(), rowGroups, &digests[w]); err != nil {
				return readBackError(key, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, d := range digests {
		written.Add(d)
	}
	return nil
}

// readBackError is a verification error when the written chunk's content cannot be decoded; a
// fault of the store or a cancellation stays what it is (retryable).
func readBackError(key string, err error) error {
	if parquetio.IsInputError(err) {
		return &verify.MismatchError{What: fmt.Sprintf("written chunk %s cannot be read back: %v", key, err)}
	}
	return fmt.Errorf("read back written chunk %s: %w", key, err)
}

// newUpload starts the upload of an output chunk to key (cancel ctx to abort it): the store's
// writer and a countingWriter over it.
func newUpload(ctx context.Context, b *blob.Bucket, key string) (*store.Writer, *countingWriter, error) {
	bw, err := store.NewWriter(ctx, b, key, &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", key, err)
	}
	return bw, &countingWriter{ctx: ctx, w: bw}, nil
}

type countingWriter struct {
	ctx context.Context // hits faults.WriteChunksUploading with it
	w   io.Writer
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if !faults.Enabled {
		n, err := c.w.Write(p)
		c.n += int64(n)
		return n, err
	}
	// With the fault points compiled in, the bytes go on a MiB at a time and the point is hit at
	// every MiB they complete, however large the write (a buffered row group's column chunks
	// arrive as one write): a fault paced per MiB paces the upload.
	written := 0
	for len(p) > 0 {
		k := min(len(p), int(1<<20-c.n%(1<<20)))
		n, err := c.w.Write(p[:k])
		written += n
		c.n += int64(n)
		if err != nil {
			return written, err
		}
		p = p[k:]
		if c.n%(1<<20) == 0 {
			if err := faults.Hit(c.ctx, faults.WriteChunksUploading); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// outputError names output chunk key in an input fault that names no input chunk (arrow-go
// refusing rows of several inputs while they were combined or encoded); other errors are
// returned as they are.
func outputError(key string, err error) error {
	var ce *ChunkError
	var oe *OutputError
	if parquetio.IsInputError(err) && !errors.As(err, &ce) && !errors.As(err, &oe) {
		return &OutputError{Key: key, Err: err}
	}
	return err
}
