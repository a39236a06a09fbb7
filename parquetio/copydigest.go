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
	var buf []byte
	for rg := range md.NumRowGroups() {
		chunks, err := c.copiedChunks(rg, spec, &buf)
		if err != nil {
			return d, err
		}
		for leaf, copied := range spec.Copied {
			if !copied {
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
				continue
			}
			ps, err := splitPages(ctx, chunks[leaf])
			if err != nil {
				return d, &InputError{Err: fmt.Errorf("row group %d column %d: %w", rg, leaf, err)}
			}
			for _, p := range ps {
				verify.AddPage(&d, leaf, pages[leaf], p.numValues, p.header(), p.data)
				pages[leaf]++
			}
		}
		n := md.RowGroup(rg).NumRows()
		row += n
		d.Rows += n
	}
	return d, nil
}

// copiedChunks returns the stored bytes of each copied column chunk of row group rg of c (by
// leaf; nil for the others), read into *buf (grown as needed, reused from one row group to the
// next). An Assembler writes a row group's column chunks one after the other: when the copied
// ones lie within the row group's stored bytes they are read in one request (one read of the
// store for the row group, not one per column chunk), else each on its own.
func (c *Chunk) copiedChunks(rg int, spec *CopySpec, buf *[]byte) ([][]byte, error) {
	md := c.pf.MetaData().RowGroup(rg)
	type span struct{ at, n int64 }
	spans := make([]span, len(spec.Copied))
	var lo, hi int64
	found := false
	for leaf, copied := range spec.Copied {
		if !copied {
			continue
		}
		cc, err := md.ColumnChunk(leaf)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		s := span{cc.DataPageOffset(), max(cc.TotalCompressedSize(), 0)}
		spans[leaf] = s
		if !found || s.at < lo {
			lo = s.at
		}
		hi, found = max(hi, s.at+s.n), true
	}
	chunks := make([][]byte, len(spec.Copied))
	if !found {
		return chunks, nil
	}
	read := func(at, n int64) ([]byte, error) {
		if cap(*buf) < int(n) {
			*buf = make([]byte, n)
		}
		b := (*buf)[:n]
		if _, err := c.src.ReadAt(b, at); err != nil {
			return nil, fmt.Errorf("row group %d: %w", rg, err)
		}
		return b, nil
	}
	if hi-lo <= c.RowGroupCompressedBytes(rg) {
		b, err := read(lo, hi-lo)
		if err != nil {
			return nil, err
		}
		for leaf, copied := range spec.Copied {
			if copied {
				chunks[leaf] = b[spans[leaf].at-lo : spans[leaf].at-lo+spans[leaf].n]
			}
		}
		return chunks, nil
	}
	// Not one after the other: each column chunk on its own, each copied out of the buffer
	// before the next is read.
	for leaf, copied := range spec.Copied {
		if copied {
			b, err := read(spans[leaf].at, spans[leaf].n)
			if err != nil {
				return nil, fmt.Errorf("column %d: %w", leaf, err)
			}
			chunks[leaf] = append([]byte(nil), b...)
		}
	}
	return chunks, nil
}
