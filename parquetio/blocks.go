package parquetio

import "github.com/apache/arrow-go/v18/parquet/metadata"

// Block is one row group of a chunk as the catalog's block index records it: the timestamp range
// of its rows, its rows and the byte range of its column chunks in the object.
type Block struct {
	MinTs, MaxTs *int64 // smallest and largest non-null timestamp_ns; nil when unknown or none
	Nulls        int64  // rows with a null timestamp_ns (-1: unknown)
	Rows         int64
	Offset       int64 // first byte of the row group's column chunks
	Length       int64 // bytes from Offset to the end of its last column chunk
	// PageIndex locates the row group's page index (zero when it has none).
	PageIndex PageIndex
}

// Blocks returns the block index of the chunk: one Block per row group in file order, ranges
// from each column chunk's dictionary or first data page offset and compressed size, timestamp
// range from the statistics of the timestamp_ns column (unknown when the writer wrote none), and
// where its page index lies.
func (c *Chunk) Blocks() ([]Block, error) {
	return BlocksOf(c.pf.MetaData(), c.TimestampLeaf)
}

// BlocksOf is Blocks for a footer and the leaf index of its timestamp_ns column.
func BlocksOf(md *metadata.FileMetaData, tsLeaf int) (blocks []Block, err error) {
	defer guard(&err, "read row group metadata")
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		b := Block{Rows: rg.NumRows(), Nulls: -1}
		start, end := int64(-1), int64(0)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, inputErrorf("row group %d column %d: %v", i, c, err)
			}
			off := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < off {
				off = cc.DictionaryPageOffset()
			}
			if start < 0 || off < start {
				start = off
			}
			end = max(end, off+cc.TotalCompressedSize())
			if c != tsLeaf {
				continue
			}
			ok, err := cc.StatsSet()
			if err != nil || !ok {
				continue
			}
			st, err := cc.Statistics()
			if err != nil || st == nil {
				continue
			}
			b.Nulls = st.NullCount()
			if st.HasMinMax() {
				lo, hi, ok := int64MinMax(st)
				if ok {
					b.MinTs, b.MaxTs = &lo, &hi
				}
			}
		}
		if start < 0 {
			return nil, inputErrorf("row group %d has no column chunks", i)
		}
		b.Offset, b.Length = start, end-start
		b.PageIndex = PageIndexOf(md, i, tsLeaf)
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func int64MinMax(st metadata.TypedStatistics) (lo, hi int64, ok bool) {
	s, ok := st.(*metadata.Int64Statistics)
	if !ok {
		return 0, 0, false
	}
	return s.Min(), s.Max(), true
}
