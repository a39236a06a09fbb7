package compaction

import (
	"context"
	"errors"
	"fmt"

	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// PassThroughChunks says whether an output the plan marks PassThrough is kept as its input chunk
// is stored (docs/design.md#the-pass-through-path); false writes it by the copy path or the
// rewrite (for measuring one path against the other).
var PassThroughChunks = true

// passes says whether output o of p is to be written by the pass-through path: the plan marks it
// PassThrough, and PassThroughChunks is on.
func passes(p *plan.Plan, o plan.Output) bool {
	return PassThroughChunks && o.PassThrough && p.EffectiveKind() == plan.KindMerge
}

// errNotPassed says why a chunk the plan marks PassThrough cannot be kept after all: what the
// footer of the plan could not tell. The output is then written by the copy path or rewritten.
type errNotPassed struct{ why string }

func (e *errNotPassed) Error() string { return e.why }

// passThrough writes output o of p, which the plan marks PassThrough, as a copy of its input chunk
// made by the store (store.Copy: server-side on S3), once the chunk is found to be what the
// pass-through path keeps: its footer the topic's verbatim (per-file pairs included), its rows as
// planned and no more of it fetched by a window read than of a chunk storeopt writes
// (parquetio.Chunk.PagesWithin the copy path's page bounds). It returns an
// *errNotPassed (nothing written) when the chunk is not. The copy is then read back like every
// output: the input and the copy are each read whole from the store and hashed (store.Checksum:
// the digests Read and Written, equal only when the copy holds the input's bytes), and the copy is
// opened as inputs are, its footer checked against the topic's, its timestamps decoded for the
// chunk's facts and checked in key order (timestampFacts). Its positions are every row of the
// input, its column statistics the input's.
func passThrough(ctx context.Context, in Inputs, o plan.Output, key string, layout *parquetio.Layout, progress func(rows int64)) (OutputResult, error) {
	res := OutputResult{Key: key, Taken: verify.Taken{}, PassedThrough: true}
	if err := faults.Hit(ctx, faults.WriteChunksMerge); err != nil {
		return res, err
	}
	i := o.Inputs[0]
	pi := in.Plan.Inputs[i]
	// Each step reads or copies the whole chunk: progress (no row written yet) after each, so
	// that the activity heartbeats between them.
	step := func() {
		if progress != nil {
			progress(0)
		}
	}
	if err := in.keepable(ctx, i, layout); err != nil {
		return res, err
	}
	step()
	if err := store.Copy(ctx, in.Bucket, key, pi.ObjectKey); err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return res, &ChunkError{Key: pi.ObjectKey, Err: errors.New("object is missing from the store")}
		}
		return res, fmt.Errorf("copy %s to %s: %w", pi.ObjectKey, key, err)
	}
	if faults.Triggered(faults.PassChangeByte) {
		if err := changeByte(ctx, in, key); err != nil {
			return res, err
		}
	}
	step()
	read, _, err := store.Checksum(ctx, in.Bucket, pi.ObjectKey)
	if err != nil {
		return res, err
	}
	step()
	written, size, err := store.Checksum(ctx, in.Bucket, key)
	if err != nil {
		return res, fmt.Errorf("read back written chunk %s: %w", key, err)
	}
	step()
	res.SizeBytes = size
	res.Read = verify.Digest{Rows: pi.Rows, Sum: read}
	footer, blocks, footerBytes, err := readBack(ctx, in, key, layout.Footer, pi.Rows, func(c *openedChunk) error {
		res.Written = verify.Digest{Rows: c.NumRows, Sum: written}
		return timestampFacts(ctx, key, c.Chunk, false, &res.Stats)
	})
	if err != nil {
		return res, err
	}
	res.Footer, res.Blocks, res.FooterBytes = footer.Digest(), blocks, footerBytes
	res.Stats.RowCount, res.Stats.ArrowSizeBytes = pi.Rows, pi.ArrowBytes
	if res.Stats.Columns, err = in.mergedStats(ctx, layout, []int{i}); err != nil {
		return res, err
	}
	taken := verify.NewChunkPositions(pi.ChunkID)
	taken.AddRange(0, pi.Rows)
	res.Taken.Add(taken)
	if progress != nil {
		progress(pi.Rows)
	}
	return res, nil
}

// keepable checks plan input i as passThrough keeps it (opened as inputs are: footer and rows
// as planned), returning an *errNotPassed naming what stands in the way.
func (in Inputs) keepable(ctx context.Context, i int, layout *parquetio.Layout) error {
	c, err := in.openInput(ctx, i)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.Footer.ID != layout.Footer.ID {
		return &errNotPassed{why: "its footer's per-file pairs differ from the topic's, which an output repeats"}
	}
	within, err := c.PagesWithin(parquetio.CopiedPageRows, parquetio.CopiedPageBytes)
	if err != nil {
		return err
	}
	if !within {
		return &errNotPassed{why: fmt.Sprintf("a window read would fetch more than %d rows of it: a page index is missing "+
			"or a page is larger", parquetio.CopiedPageRows)}
	}
	return nil
}

// changeByte flips the lowest bit of the middle byte of object key (fault point PassChangeByte).
func changeByte(ctx context.Context, in Inputs, key string) error {
	data, err := in.Bucket.ReadAll(ctx, key)
	if err != nil {
		return err
	}
	data[len(data)/2] ^= 1
	return store.WriteAll(ctx, in.Bucket, key, data, nil)
}

// PassThroughMemory estimates the bytes passThrough holds while writing output o of p: the input
// opened to be checked (its object when read whole, its page index), then the two checksums'
// buffers, then the copy opened (its object when read whole) with one row group's timestamps
// decoded (timestampFacts) and page buffers.
func PassThroughMemory(p *plan.Plan, o plan.Output) int64 {
	var rows int64
	for _, i := range o.Inputs {
		rows = max(rows, p.Inputs[i].MaxRowGroupRows)
	}
	return readBackObject(o) + 2*store.ChecksumMemory + 16*rows + 4<<20
}
