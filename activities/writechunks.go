package activities

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
)

// WriteChunksProgress is the heartbeat detail of WriteChunks.
type WriteChunksProgress struct {
	Output      int   // ordinal of the output chunk being written
	RowsWritten int64 // rows of that chunk written so far
	// OutputRows is the plan's estimate of that chunk's rows; OutputsDone and Outputs count the
	// group's chunks written (or staged by an earlier attempt) and planned.
	OutputRows  int64
	OutputsDone int
	Outputs     int
}

// WriteChunks writes the output chunks of one group of the stored plan under the lease's fresh
// prefix ("<prefix>/data/NNNNN.parquet", NNNNN = output ordinal) and stages each chunk's stats and
// digests in the catalog. Outputs already staged by an earlier attempt of the same run are
// skipped; an output is otherwise rewritten from scratch, with byte-identical content. Errors:
// ErrTypeInput for bad chunks, ErrTypeVerification when a written chunk's footer is not the
// topic's, ErrTypeLeaseLost when the run no longer holds the lease.
func (a *Activities) WriteChunks(ctx context.Context, in WriteChunksInput) (WriteChunksResult, error) {
	topic, lease, token, err := a.leased(ctx, in.TopicID)
	if err != nil {
		return WriteChunksResult{}, err
	}
	p, err := a.loadPlan(ctx, topic, token)
	if err != nil {
		return WriteChunksResult{}, err
	}
	outputs := p.Group(in.Group)
	if outputs == nil {
		return WriteChunksResult{}, a.classify(topic.Locator, fmt.Errorf("%w: plan has no group %d", catalog.ErrInvalid, in.Group))
	}
	staged, err := a.Catalog.StagedChunks(ctx, topic.ID, token)
	if err != nil {
		return WriteChunksResult{}, a.classify(topic.Locator, err)
	}
	done := map[int]catalog.StagedChunk{}
	for _, s := range staged {
		done[s.Ordinal] = s
	}
	layout, err := a.topicLayout(ctx, p)
	if err != nil {
		return WriteChunksResult{}, a.classify(topic.Locator, err)
	}
	inputs := compaction.Inputs{Bucket: a.Bucket, Plan: p, Mem: a.mem(),
		ColumnStats: func(ctx context.Context, ids []int64) (map[int64]map[string]catalog.ColumnStats, error) {
			return a.Catalog.ColumnStats(ctx, topic.ID, ids)
		}}
	var res WriteChunksResult
	for _, o := range outputs {
		if s, ok := done[o.Ordinal]; ok {
			res.Chunks++
			res.Rows += s.RowCount
			res.Bytes += s.SizeBytes
			continue
		}
		key := store.ChunkKey(lease.FreshPrefix, o.Ordinal)
		if err := faults.Hit(ctx, faults.WriteChunksBeforeWrite); err != nil {
			return res, err
		}
		out, err := a.writeOutput(ctx, inputs, o, key, layout, WriteChunksProgress{Output: o.Ordinal,
			OutputRows: o.EstRows, OutputsDone: res.Chunks, Outputs: len(outputs)})
		if err != nil {
			logPanic(ctx, topic.Locator, err)
			return res, a.classify(topic.Locator, err)
		}
		if out.NotPassed != "" {
			logger(ctx).Info("Output written: its input chunk cannot be kept as it is", "topic", topic.Locator, "output", o.Ordinal, "why", out.NotPassed)
		}
		if out.NotCopied != "" {
			logger(ctx).Info("Output rewritten: its pages cannot be copied", "topic", topic.Locator, "output", o.Ordinal, "why", out.NotCopied)
		}
		if err := faults.Hit(ctx, faults.WriteChunksAfterWrite); err != nil {
			return res, err
		}
		st := out.Stats
		target := p.Target(o)
		err = a.Catalog.StageChunk(ctx, token, catalog.StagedChunk{
			Chunk: catalog.Chunk{
				TopicID: topic.ID, Ordinal: o.Ordinal, ObjectKey: key, SizeBytes: out.SizeBytes,
				RowCount: st.RowCount, ArrowSizeBytes: st.ArrowSizeBytes,
				MinTimestampNs: st.MinTimestampNs, MaxTimestampNs: st.MaxTimestampNs,
				TimestampNullCount: st.TimestampNullCount, ColumnStats: st.Columns,
				Blocks: catalogBlocks(out), FooterBytes: out.FooterBytes,
			},
			TargetOrdinal: &target,
			Digest:        stagedDigest(out),
			Taken:         out.Taken.MarshalBinary(),
		})
		if err != nil {
			return res, a.classify(topic.Locator, err)
		}
		if err := faults.Hit(ctx, faults.WriteChunksAfterStage); err != nil {
			return res, err
		}
		res.Chunks++
		res.Rows += st.RowCount
		res.Bytes += out.SizeBytes
		res.WrittenChunks++
		res.WrittenArrowBytes += st.ArrowSizeBytes
		if out.Copied {
			res.CopiedChunks++
			res.CopiedArrowBytes += st.ArrowSizeBytes
		}
		if out.PassedThrough {
			res.PassedChunks++
			res.PassedArrowBytes += st.ArrowSizeBytes
		}
		heartbeat(ctx, WriteChunksProgress{Output: o.Ordinal, RowsWritten: st.RowCount, OutputRows: o.EstRows,
			OutputsDone: res.Chunks, Outputs: len(outputs)})
	}
	logger(ctx).Info("Output group written", "topic", topic.Locator, "group", in.Group,
		"chunks", res.Chunks, "rows", res.Rows, "bytes", res.Bytes)
	return res, nil
}

// loadPlan loads and decodes the run's plan.
func (a *Activities) loadPlan(ctx context.Context, topic catalog.Topic, token string) (*plan.Plan, error) {
	rec, err := a.Catalog.LoadPlan(ctx, topic.ID, token)
	if err != nil {
		return nil, a.classify(topic.Locator, err)
	}
	p, err := decodePlan(rec)
	if err != nil {
		return nil, a.classify(topic.Locator, err)
	}
	return p, nil
}

// decodePlan decodes a stored plan's body; a body this worker cannot read is catalog.ErrInvalid.
func decodePlan(rec catalog.PlanRecord) (*plan.Plan, error) {
	var p plan.Plan
	if err := json.Unmarshal(rec.Body, &p); err != nil {
		return nil, fmt.Errorf("%w: stored plan is unreadable: %v", catalog.ErrInvalid, err)
	}
	if p.Version < plan.MinVersion || p.Version > plan.Version {
		return nil, fmt.Errorf("%w: stored plan has version %d, this worker reads %d to %d",
			catalog.ErrInvalid, p.Version, plan.MinVersion, plan.Version)
	}
	return &p, nil
}

// stagedDigest is what verification needs of an output, staged with it: the digests of the rows
// read and written (16 bytes each) and the digest of its footer as read back
// (parquetio.FingerprintBytes).
func stagedDigest(out compaction.OutputResult) []byte {
	d := append(out.Read.MarshalBinary(), out.Written.MarshalBinary()...)
	return append(d, out.Footer...)
}

// topicLayout returns the layout (footer, Parquet schema) of the plan's first input, whose
// footer every output repeats (ReadSort planned with it, p.FooterID).
func (a *Activities) topicLayout(ctx context.Context, p *plan.Plan) (*parquetio.Layout, error) {
	if len(p.Inputs) == 0 {
		return nil, plan.ErrNoRows
	}
	key := p.Inputs[0].ObjectKey
	obj, err := store.OpenObject(ctx, a.Bucket, key)
	if err != nil {
		return nil, err
	}
	c, err := parquetio.Open(obj, a.mem())
	if err != nil {
		return nil, &compaction.ChunkError{Key: key, Err: err}
	}
	defer c.Close()
	if c.Footer.ID != p.FooterID {
		return nil, &compaction.ChunkError{Key: key, Err: fmt.Errorf("footer (Parquet schema or key/value pairs) changed since planning")}
	}
	return c.Layout(), nil
}

// writeOutput writes one output chunk within a reservation of the memory pool, heartbeating
// progress (with RowsWritten set) as rows are written. An output the copy path could not write
// after all is rewritten within a reservation of the rewrite's need, taken once the copy path's
// is released (so that two outputs growing theirs at once never wait for each other).
func (a *Activities) writeOutput(ctx context.Context, inputs compaction.Inputs, o plan.Output, key string, layout *parquetio.Layout, progress WriteChunksProgress) (compaction.OutputResult, error) {
	if err := compaction.CheckRows(inputs.Plan, a.pool().Limit()); err != nil {
		return compaction.OutputResult{}, err
	}
	r, err := a.reserve(ctx, compaction.OutputMemory(inputs.Plan, o))
	if err != nil {
		return compaction.OutputResult{}, err
	}
	defer func() { r.Release() }()
	inputs.Reserve = func(ctx context.Context, n int64) error {
		r.Release()
		grown, err := a.reserve(ctx, n)
		if err != nil {
			return err
		}
		r = grown
		return nil
	}
	write := compaction.WriteOutput
	if inputs.Plan.EffectiveKind() == plan.KindConcatenate {
		write = compaction.WriteRollup
	}
	return write(ctx, inputs, o, key, layout, func(rows int64) {
		progress.RowsWritten = rows
		heartbeat(ctx, progress)
	})
}

// catalogRange returns r as the catalog stores it.
func catalogRange(r *parquetio.ByteRange) *catalog.ByteRange {
	if r == nil {
		return nil
	}
	return &catalog.ByteRange{Offset: r.Offset, Length: r.Length}
}

// catalogBlocks returns the block index of a written chunk as the catalog stores it.
func catalogBlocks(out compaction.OutputResult) []catalog.Block {
	blocks := make([]catalog.Block, len(out.Blocks))
	for i, b := range out.Blocks {
		blocks[i] = catalog.Block{MinTs: b.MinTs, MaxTs: b.MaxTs, Nulls: max(b.Nulls, 0), Rows: b.Rows,
			Offset: b.Offset, Length: b.Length,
			TsIndex: catalogRange(b.PageIndex.Timestamps), OffsetIndex: catalogRange(b.PageIndex.Offsets)}
		if i < len(out.Sources) {
			blocks[i].Source = out.Sources[i]
		}
	}
	return blocks
}
