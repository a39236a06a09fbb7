package parquetio

import (
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// CopySpec says how the copy path assembles an output from a set of input chunks
// (docs/design.md#the-copy-path): which leaf columns keep their stored pages, and their codec
// and encoding. The other columns are decoded and re-encoded as a Writer would.
type CopySpec struct {
	// Copied[i] says leaf column i's pages are copied as stored.
	Copied   []bool
	codec    []compress.Compression
	encoding []parquet.Encoding
}

// CopiedLeaves returns how many leaf columns are copied.
func (s *CopySpec) CopiedLeaves() int {
	n := 0
	for _, c := range s.Copied {
		if c {
			n++
		}
	}
	return n
}

// CopySpecFor returns how an output of chunks (each of the layout's topic: the caller checked
// their footers) is assembled, or nil when the copy path cannot assemble it: the topic's schema
// is not flat (every top-level field a leaf column), a field is a narrow dictionary read in its
// value type (its row groups are cut by distinct values, which copying cannot keep), a chunk is
// encrypted, or no column can be copied. A leaf column is copied when, in every row group of
// every chunk, its column chunk has no dictionary page, uses one data encoding (the same in all)
// besides the levels' RLE, the same codec, and is not encrypted.
func (l *Layout) CopySpecFor(chunks []*Chunk) *CopySpec {
	if len(chunks) == 0 || l.parquet.NumColumns() != len(l.manifest.Fields) {
		return nil
	}
	for i := range l.manifest.Fields {
		if !l.manifest.Fields[i].IsLeaf() || (i < len(l.dictLimits) && l.dictLimits[i] > 0) {
			return nil
		}
	}
	leaves := l.parquet.NumColumns()
	spec := &CopySpec{Copied: make([]bool, leaves), codec: make([]compress.Compression, leaves),
		encoding: make([]parquet.Encoding, leaves)}
	for leaf := range leaves {
		spec.Copied[leaf] = true
		first := true
		for _, c := range chunks {
			md := c.pf.MetaData()
			if md.NumColumns() != leaves || md.FileDecryptor != nil {
				return nil
			}
			for rg := range md.NumRowGroups() {
				cc, err := md.RowGroup(rg).ColumnChunk(leaf)
				if err != nil {
					return nil
				}
				enc, ok := dataEncoding(cc)
				if first && ok {
					spec.codec[leaf], spec.encoding[leaf], first = cc.Compression(), enc, false
				}
				if !spec.copies(cc, leaf) {
					spec.Copied[leaf] = false
					break
				}
			}
			if !spec.Copied[leaf] {
				break
			}
		}
	}
	if spec.CopiedLeaves() == 0 {
		return nil
	}
	return spec
}

// copies says whether column chunk cc can be copied as leaf column leaf of the spec: no
// dictionary page, not encrypted, the spec's codec and one data encoding, the spec's.
func (s *CopySpec) copies(cc *metadata.ColumnChunkMetaData, leaf int) bool {
	enc, ok := dataEncoding(cc)
	return ok && !cc.HasDictionaryPage() && cc.CryptoMetadata() == nil && cc.Compression() == s.codec[leaf] && enc == s.encoding[leaf]
}

// dataEncoding returns the one encoding of a column chunk's data pages, from its encodings list
// without the levels' RLE and BIT_PACKED (false: none, several, or a dictionary encoding).
func dataEncoding(cc *metadata.ColumnChunkMetaData) (parquet.Encoding, bool) {
	var enc parquet.Encoding
	n := 0
	for _, e := range cc.Encodings() {
		switch e {
		case parquet.Encodings.RLE, parquet.Encodings.BitPacked:
			continue
		case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
			return 0, false
		}
		if n == 0 || e != enc {
			n++
		}
		enc = e
	}
	return enc, n == 1
}
