package compaction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/chunkstats"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/verify"
)

// CopyPages says whether an output whose inputs allow it is written by the copy path
// (docs/design.md#the-copy-path); false rewrites every output (for measuring one path against the
// other).
var CopyPages = true

// copyOrder returns the inputs of output o in the order the copy path appends them, when the
// merge of its inputs is their concatenation: each input taken whole (not a run of a chunk, every
// row within o's key range), stored in key order, and every input's keys after the previous
// one's. ok is false otherwise.
func copyOrder(p *plan.Plan, o plan.Output) (order []int, ok bool) {
	for _, i := range o.Inputs {
		pi := p.Inputs[i]
		if pi.Rows == 0 {
			continue
		}
		if pi.RowGroups != nil || !pi.Sorted || len(pi.Unsorted) > 0 ||
			!plan.InRange(pi.First, o.Lo, o.Hi) || !plan.InRange(pi.Last, o.Lo, o.Hi) {
			return nil, false
		}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return p.Inputs[a].First.Compare(p.Inputs[b].First) })
	for k := 1; k < len(order); k++ {
		if p.Inputs[order[k-1]].Last.Compare(p.Inputs[order[k]].First) >= 0 {
			return nil, false
		}
	}
	return order, len(order) > 0
}

// copyPath says whether output o of p is to be written by the copy path: by WriteRollup for a
// concatenate plan (rollupCopyable), else by WriteOutput (copyOrder), with CopyPages on.
func copyPath(p *plan.Plan, o plan.Output) bool {
	if !CopyPages {
		return false
	}
	if p.EffectiveKind() == plan.KindConcatenate {
		return rollupCopyable(p, o)
	}
	_, ok := copyOrder(p, o)
	return ok
}

// writeCopy writes an output chunk by the copy path, appending the inputs in order (see
// copyOrder, rollupCopyable) to a parquetio.Assembler whose copy spec is taken from the inputs'
// storage as the plan recorded it (copySpec); with blocks, each input row group is a row group of
// its own (a block of a rollup, its source chunk in the result's Sources). It returns
// parquetio.ErrNotCopyable (nothing written: the upload aborted) when an input's columns do not
// allow the spec's copies; the caller then rewrites the output. The output is read back and
// checked as WriteOutput's are; its digests are the copy digest (pages of copied columns,
// values of the others: parquetio.CopyDigest), its positions every row of each input, its
// column statistics the inputs' merged.
func writeCopy(ctx context.Context, in Inputs, order []int, blocks bool, key string, layout *parquetio.Layout,
	progress func(rows int64)) (OutputResult, error) {
	res := OutputResult{Key: key, Taken: verify.Taken{}, Copied: true}
	if err := faults.Hit(ctx, faults.WriteChunksMerge); err != nil {
		return res, err
	}
	spec, err := in.copySpec(ctx, layout, order)
	if err != nil {
		return res, err
	}
	if spec == nil {
		return res, parquetio.ErrNotCopyable
	}
	uctx, abort := context.WithCancel(ctx)
	defer abort()
	bw, cw, err := newUpload(uctx, in.Bucket, key)
	if err != nil {
		return res, err
	}
	_, rowGroupBytes := in.Plan.Limits()
	a, err := parquetio.NewAssembler(cw, writerLayout(layout), spec, parquetio.WriterOptions{RowGroupRows: in.Plan.RowGroupRows,
		RowGroupBytes: rowGroupBytes, Mem: in.Mem})
	if err == nil {
		err = appendInputs(uctx, in, order, blocks, a, &res, progress)
	}
	if err == nil {
		err = a.Close()
	}
	if err != nil {
		abort()
		a.Discard()
		_ = bw.Close()
		if errors.Is(err, parquetio.ErrNoRows) {
			return res, &verify.MismatchError{What: fmt.Sprintf("output chunk %s would have no rows: the plan does not match its inputs", key)}
		}
		if errors.Is(err, parquetio.ErrNotCopyable) {
			return res, err
		}
		return res, outputError(key, err)
	}
	if err := bw.Close(); err != nil {
		return res, fmt.Errorf("upload %s: %w", key, err)
	}
	res.SizeBytes = cw.n
	res.Read = a.Read
	res.Stats = chunkstats.Stats{RowCount: a.Rows()}
	if res.Stats.Columns, err = in.mergedStats(ctx, layout, order); err != nil {
		return res, err
	}
	for _, i := range order {
		res.Stats.ArrowSizeBytes += in.Plan.Inputs[i].ArrowBytes
	}
	footer, written, footerBytes, err := readBack(ctx, in, key, layout.Footer, res.Stats.RowCount, func(c *openedChunk) error {
		d, err := parquetio.CopyDigest(ctx, c.Chunk, spec)
		if err != nil {
			return readBackError(key, err)
		}
		res.Written = d
		return timestampFacts(ctx, key, c.Chunk, blocks, &res.Stats)
	})
	if err != nil {
		return res, err
	}
	res.Footer, res.Blocks, res.FooterBytes = footer.Digest(), written, footerBytes
	if blocks && len(res.Sources) != len(written) {
		return res, &verify.MismatchError{What: fmt.Sprintf("written chunk %s has %d row groups, %d blocks written",
			key, len(written), len(res.Sources))}
	}
	return res, nil
}

// copySpec returns the copy spec of an output of the inputs in order: from their storage as the
// plan recorded it (parquetio.Layout.CopySpecOf: a column is copied when every input stores it
// alike), or, in a plan made before storage was recorded, from the first input's footer (an input
// stored otherwise then makes the copy fail with parquetio.ErrNotCopyable). An input without
// rows (a rollup's empty chunk) has no page to copy, and its storage, no column stored, is left
// out. Nil: no copy.
func (in Inputs) copySpec(ctx context.Context, layout *parquetio.Layout, order []int) (*parquetio.CopySpec, error) {
	var storages []string
	var withRows []int
	for _, i := range order {
		if pi := in.Plan.Inputs[i]; pi.Rows > 0 {
			withRows = append(withRows, i)
			if pi.Storage != "" {
				storages = append(storages, pi.Storage)
			}
		}
	}
	if len(withRows) == 0 {
		return nil, nil
	}
	if len(storages) == len(withRows) {
		return layout.CopySpecOf(storages), nil
	}
	first, err := in.openInput(ctx, withRows[0])
	if err != nil {
		return nil, err
	}
	defer first.Close()
	return layout.CopySpecFor([]*parquetio.Chunk{first.Chunk}), nil
}

// rollupCopyable says whether output o of a concatenate plan can be written by the copy path:
// every input a whole chunk whose row groups are all stored in key order.
func rollupCopyable(p *plan.Plan, o plan.Output) bool {
	for _, i := range o.Inputs {
		if pi := p.Inputs[i]; pi.RowGroups != nil || len(pi.Unsorted) > 0 {
			return false
		}
	}
	return len(o.Inputs) > 0
}

// openInput opens plan input i, checking that its footer is still the topic's.
func (in Inputs) openInput(ctx context.Context, i int) (*openedChunk, error) {
	pi := in.Plan.Inputs[i]
	c, err := openChunk(ctx, in.Bucket, pi.ObjectKey, in.Mem)
	if err != nil {
		return nil, err
	}
	if _, drift := parquetio.PerFileDifferences(in.footer, c.Footer); drift != "" {
		c.Close()
		return nil, &ChunkError{Key: pi.ObjectKey, Err: fmt.Errorf("footer changed since planning: %s", drift)}
	}
	if c.NumRows != pi.Rows {
		c.Close()
		return nil, &ChunkError{Key: pi.ObjectKey, Err: fmt.Errorf("chunk holds %d rows, %d when planned", c.NumRows, pi.Rows)}
	}
	return c, nil
}

// appendInputs appends every row group of the inputs in order to a, taking each input's rows
// 0…n−1 as its positions. A goroutine opens the inputs (fetch and footer) up to openAhead ahead
// of the one being appended.
func appendInputs(ctx context.Context, in Inputs, order []int, blocks bool, a *parquetio.Assembler, res *OutputResult, progress func(rows int64)) error {
	type opened struct {
		c   *openedChunk
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan opened, openAhead)
	go func() {
		defer close(next)
		for _, i := range order {
			c, err := in.openInput(ctx, i)
			select {
			case next <- opened{c, err}:
			case <-ctx.Done():
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for o := range next {
			if o.c != nil {
				o.c.Close()
			}
		}
	}()
	for _, i := range order {
		pi := in.Plan.Inputs[i]
		o, ok := <-next
		if !ok {
			return ctx.Err()
		}
		if o.err != nil {
			return o.err
		}
		err := func() error {
			defer o.c.Close()
			for rg := range o.c.NumRowGroups() {
				if err := faults.Hit(ctx, faults.WriteChunksEncode); err != nil {
					return err
				}
				if err := a.Append(ctx, o.c.Chunk, rg); err != nil {
					if parquetio.IsInputError(err) {
						return &ChunkError{Key: pi.ObjectKey, Err: err}
					}
					return err
				}
				if !blocks || o.c.RowGroupRows(rg) == 0 {
					continue
				}
				if err := a.EndRowGroup(); err != nil {
					return err
				}
				src := pi.ObjectKey
				if rg < len(pi.BlockSources) && pi.BlockSources[rg] != "" {
					src = pi.BlockSources[rg]
				}
				res.Sources = append(res.Sources, src)
			}
			return nil
		}()
		if err != nil {
			return err
		}
		taken := verify.NewChunkPositions(pi.ChunkID)
		taken.AddRange(0, pi.Rows)
		res.Taken.Add(taken)
		if progress != nil {
			progress(a.Rows())
		}
	}
	return nil
}

// openAhead is how many inputs the copy path opens ahead of the one it appends.
const openAhead = 2

// mergedStats returns the inputs' column statistics merged (chunkstats.MergeColumns), nil when
// the catalog's are not at hand or an input's are missing.
func (in Inputs) mergedStats(ctx context.Context, layout *parquetio.Layout, order []int) (map[string]catalog.ColumnStats, error) {
	if in.ColumnStats == nil {
		return nil, nil
	}
	ids := make([]int64, len(order))
	for k, i := range order {
		ids[k] = in.Plan.Inputs[i].ChunkID
	}
	stats, err := in.ColumnStats(ctx, ids)
	if err != nil {
		return nil, err
	}
	parts := make([]map[string]catalog.ColumnStats, len(ids))
	for k, id := range ids {
		st, ok := stats[id]
		if !ok || st == nil {
			return nil, nil
		}
		parts[k] = st
	}
	return chunkstats.MergeColumns(layout.Schema, parts), nil
}

// timestampFacts decodes the timestamps of the written chunk c (key) into st (null count,
// min, max) and checks that they are in key order (non-null ones ascending, nulls last): the
// whole chunk's, or with blocks each row group's.
func timestampFacts(ctx context.Context, key string, c *parquetio.Chunk, blocks bool, st *chunkstats.Stats) error {
	var lo, hi, prev int64
	found, null := false, false
	var row int64
	// A row group at a time: the chunk's timestamps may be tens of MiB.
	for rg := range c.NumRowGroups() {
		ts, err := c.RowGroupTimestamps(ctx, rg)
		if err != nil {
			return readBackError(key, err)
		}
		if blocks {
			prev, null = math.MinInt64, false
		}
		for i := range ts.Len() {
			if ts.IsNull(i) {
				st.TimestampNullCount++
				null = true
				continue
			}
			v := ts.Value(i)
			if null || (found && v < prev) {
				ts.Release()
				return &verify.MismatchError{What: fmt.Sprintf("written chunk %s: row %d is out of key order", key, row+int64(i))}
			}
			if !found || v < lo {
				lo = v
			}
			if !found || v > hi {
				hi = v
			}
			prev, found = v, true
		}
		row += int64(ts.Len())
		ts.Release()
	}
	if found {
		st.MinTimestampNs, st.MaxTimestampNs = &lo, &hi
	}
	return nil
}
