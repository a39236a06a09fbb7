package parquetio

import (
	"context"
	"fmt"

	"github.com/storeopt/storeopt/verify"
)

// CopyDigest returns the digest the copy path takes of chunk c, written by an Assembler with
// spec: its copied columns' pages as stored and its other columns' values at their rows, as
// Assembler.Read takes them from the inputs.
func CopyDigest(ctx context.Context, c *Chunk, spec *CopySpec) (d verify.Digest, err error) {
	defer guard(&err, "digest assembled chunk")
	md := c.pf.MetaData()
	if md.NumColumns() != len(spec.Copied) {
		return d, inputErrorf("chunk has %d columns, %d assembled", md.NumColumns(), len(spec.Copied))
	}
	var h verify.Hasher
	pages := make([]int64, len(spec.Copied))
	var row int64
	var words pageWords
	var buf []byte
	for rg := range md.NumRowGroups() {
		err := c.readCopiedChunks(rg, spec, &buf, func(leaf int, chunk []byte) error {
			ps, err := splitPages(ctx, chunk)
			if err != nil {
				return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
			}
			for _, p := range ps {
				verify.AddPage(&d, leaf, pages[leaf], p.numValues, p.header(&words), p.data)
				pages[leaf]++
			}
			return nil
		})
		if err != nil {
			return d, err
		}
		for leaf, copied := range spec.Copied {
			if copied {
				continue
			}
			col, err := c.readColumnChunk(ctx, rg, leaf)
			if err != nil {
				return d, &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
			}
			at := row
			for _, arr := range col.Chunks() {
				h.AddColumnAt(&d, arr, leaf, at)
				at += int64(arr.Len())
			}
			col.Release()
		}
		n := md.RowGroup(rg).NumRows()
		row += n
		d.Rows += n
	}
	return d, nil
}

// copiedReadBytes bounds one read of the copy digest: the copied column chunks of a row group
// that follow each other are read together up to that many bytes, a larger one alone.
const copiedReadBytes = 4 << 20

// readCopiedChunks calls visit with the stored bytes of each copied column chunk of row group rg
// of c (spec), in column order, read into *buf (grown as needed, reused; valid during the call).
// An Assembler writes a row group's column chunks one after the other: those that follow each
// other are read in one request up to copiedReadBytes (one read of the store for a row group of
// a small pool, not one per column chunk).
func (c *Chunk) readCopiedChunks(rg int, spec *CopySpec, buf *[]byte, visit func(leaf int, chunk []byte) error) error {
	md := c.pf.MetaData().RowGroup(rg)
	type span struct {
		leaf  int
		at, n int64
	}
	var spans []span
	for leaf, copied := range spec.Copied {
		if !copied {
			continue
		}
		cc, err := md.ColumnChunk(leaf)
		if err != nil {
			return &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
		}
		spans = append(spans, span{leaf, cc.DataPageOffset(), max(cc.TotalCompressedSize(), 0)})
	}
	for first := 0; first < len(spans); {
		// The run of spans[first:last]: each after the one before, all within copiedReadBytes.
		lo, hi := spans[first].at, spans[first].at+spans[first].n
		last := first + 1
		for ; last < len(spans) && spans[last].at >= hi && spans[last].at+spans[last].n-lo <= copiedReadBytes; last++ {
			hi = spans[last].at + spans[last].n
		}
		if cap(*buf) < int(hi-lo) {
			*buf = make([]byte, hi-lo)
		}
		b := (*buf)[:hi-lo]
		if _, err := c.src.ReadAt(b, lo); err != nil {
			return fmt.Errorf("row group %d column %d: %w", rg, spans[first].leaf, err)
		}
		for _, s := range spans[first:last] {
			if err := visit(s.leaf, b[s.at-lo:s.at-lo+s.n]); err != nil {
				return err
			}
		}
		first = last
	}
	return nil
}
