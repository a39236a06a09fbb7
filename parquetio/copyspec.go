package parquetio

import (
	"strconv"
	"strings"

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
	storages := make([]string, len(chunks))
	for i, c := range chunks {
		storages[i] = c.PageStorage()
	}
	return l.CopySpecOf(storages)
}

// PageStorage describes how the chunk stores each leaf column's pages, for CopySpecOf: per leaf,
// its codec and data encoding when every row group stores the column alike without a dictionary
// page and unencrypted, "-" otherwise (runs of equal leaves written once: joinRuns); "" for an
// encrypted chunk. The planner records it for every input (plan.Input.Storage) from the footers
// it reads anyway, so that the copy path knows every input's storage before it starts.
func (c *Chunk) PageStorage() string {
	md := c.pf.MetaData()
	if md.FileDecryptor != nil {
		return ""
	}
	leaves := md.Schema.NumColumns()
	parts := make([]string, leaves)
	for leaf := range leaves {
		parts[leaf] = "-"
		var first pageStorage
		alike := md.NumRowGroups() > 0
		for rg := range md.NumRowGroups() {
			cc, err := md.RowGroup(rg).ColumnChunk(leaf)
			if err != nil {
				return ""
			}
			st, ok := storageOf(cc)
			if rg == 0 {
				first = st
			}
			if !ok || st != first {
				alike = false
				break
			}
		}
		if alike {
			parts[leaf] = strconv.Itoa(int(first.codec)) + "/" + strconv.Itoa(int(first.encoding))
		}
	}
	return joinRuns(parts)
}

// joinRuns joins parts with spaces, a run of n equal parts written once as part*n: a topic's
// columns are mostly stored alike, so a wide topic's storage stays a few bytes in every input of
// a stored plan.
func joinRuns(parts []string) string {
	var b strings.Builder
	for i := 0; i < len(parts); {
		n := 1
		for i+n < len(parts) && parts[i+n] == parts[i] {
			n++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(parts[i])
		if n > 1 {
			b.WriteByte('*')
			b.WriteString(strconv.Itoa(n))
		}
		i += n
	}
	return b.String()
}

// splitRuns is joinRuns' inverse: the parts of st, or false when st is not a storage of leaves
// parts.
func splitRuns(st string, leaves int) ([]string, bool) {
	parts := make([]string, 0, leaves)
	for _, run := range strings.Fields(st) {
		part, count, many := strings.Cut(run, "*")
		n := 1
		if many {
			var err error
			if n, err = strconv.Atoi(count); err != nil || n < 2 || n > leaves-len(parts) {
				return nil, false
			}
		}
		for range n {
			parts = append(parts, part)
		}
	}
	return parts, len(parts) == leaves
}

// CopySpecOf returns how an output of chunks stored as storages say (Chunk.PageStorage, one per
// chunk, in any order) is assembled; nil as CopySpecFor. A leaf column is copied when every
// chunk stores it alike; the others are re-encoded, so one input stored otherwise (an earlier
// rewrite's output among ingested chunks) costs the copy of its differing columns only.
func (l *Layout) CopySpecOf(storages []string) *CopySpec {
	if len(storages) == 0 || l.parquet.NumColumns() != len(l.manifest.Fields) {
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
	var first []string
	for i, st := range storages {
		parts, ok := splitRuns(st, leaves)
		if !ok {
			return nil
		}
		if i == 0 {
			first = parts
			for leaf, p := range parts {
				spec.Copied[leaf] = p != "-"
			}
		}
		for leaf, p := range parts {
			spec.Copied[leaf] = spec.Copied[leaf] && p == first[leaf]
		}
	}
	for leaf, p := range first {
		if !spec.Copied[leaf] {
			continue
		}
		codec, enc, ok := strings.Cut(p, "/")
		c, err1 := strconv.Atoi(codec)
		e, err2 := strconv.Atoi(enc)
		if !ok || err1 != nil || err2 != nil {
			return nil
		}
		spec.codec[leaf], spec.encoding[leaf] = compress.Compression(c), parquet.Encoding(e)
	}
	if ts := l.tsLeaf; spec.Copied[ts] && deltaTimestamps(l.parquet.Column(ts)) &&
		spec.encoding[ts] != parquet.Encodings.DeltaBinaryPacked {
		// timestamp_ns is re-encoded as a Writer stores it (delta, a third smaller than
		// zstd's plain bytes): copied and rewritten outputs store it alike, and the copy path
		// decodes its values anyway (statistics, column index, order).
		spec.Copied[ts] = false
	}
	if spec.CopiedLeaves() == 0 {
		return nil
	}
	return spec
}

// copies says whether column chunk cc can be copied as leaf column leaf of the spec: it stores
// its pages as the spec's (storageOf).
func (s *CopySpec) copies(cc *metadata.ColumnChunkMetaData, leaf int) bool {
	st, ok := storageOf(cc)
	return ok && st == pageStorage{codec: s.codec[leaf], encoding: s.encoding[leaf]}
}

// pageStorage is how a column chunk stores its pages: their codec and their one data encoding.
type pageStorage struct {
	codec    compress.Compression
	encoding parquet.Encoding
}

// storageOf returns how column chunk cc stores its pages; false when the copy path cannot copy
// them: a dictionary page, several data encodings or a dictionary encoding, or encryption.
func storageOf(cc *metadata.ColumnChunkMetaData) (pageStorage, bool) {
	enc, ok := dataEncoding(cc)
	return pageStorage{codec: cc.Compression(), encoding: enc}, ok && !cc.HasDictionaryPage() && cc.CryptoMetadata() == nil
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
