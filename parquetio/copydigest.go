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
			cc, err := md.RowGroup(rg).ColumnChunk(leaf)
			if err != nil {
				return d, &InputError{Err: err}
			}
			// One buffer for every column chunk, as large as the largest.
			if n := int(max(cc.TotalCompressedSize(), 0)); cap(buf) < n {
				buf = make([]byte, n)
			} else {
				buf = buf[:n]
			}
			if _, err := c.src.ReadAt(buf, cc.DataPageOffset()); err != nil {
				return d, fmt.Errorf("row group %d column %d: %w", rg, leaf, err)
			}
			ps, err := splitPages(ctx, buf)
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
