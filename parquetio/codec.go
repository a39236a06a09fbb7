package parquetio

import (
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// minCompressionSaving is the share of a column's bytes its input's compression must save for an
// output to compress the column too. Sensor noise (the mantissas of IMU floats) and already
// compressed payloads (JPEG frames) do not compress: zstd then spends most of a rewrite's encoding
// time, and every reader's decoding time, to store the bytes as they are.
const minCompressionSaving = 0.05

// minJudgedBytes is how many uncompressed bytes of a column the chunk must hold for its
// compression to be judged: on a few rows zstd's frame costs more than it saves whatever the
// data, and the chunk may be the plan's smallest.
const minJudgedBytes = 32 << 10

// uncompressedLeaves says, for each leaf column of the chunk, whether a chunk written like it
// stores the column without compression (Layout, NewWriter): the chunk's own codec saved less
// than minCompressionSaving of the column's bytes over its row groups (of at least
// minJudgedBytes uncompressed bytes), or the column is stored
// uncompressed by storeopt (which decided so from its own inputs). A column another writer stored
// uncompressed is compressed: nothing says it would not compress. timestamp_ns, which a Writer
// stores DELTA_BINARY_PACKED, is stored uncompressed unless the chunk stores it so too (and its
// codec saved enough of it). The choice depends only on the
// chunk's footer, so the same plan always writes the same bytes.
func (c *Chunk) uncompressedLeaves() []bool {
	md := c.pf.MetaData()
	n := md.Schema.NumColumns()
	compressed, uncompressed := make([]int64, n), make([]int64, n)
	plain := make([]bool, n) // every column chunk of the leaf is stored uncompressed
	for i := range plain {
		plain[i] = md.NumRowGroups() > 0
	}
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for i := range min(rg.NumColumns(), n) {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return nil
			}
			compressed[i] += cc.TotalCompressedSize()
			uncompressed[i] += cc.TotalUncompressedSize()
			plain[i] = plain[i] && cc.Compression() == compress.Codecs.Uncompressed
		}
	}
	out := make([]bool, n)
	ts := c.TimestampLeaf
	for i := range out {
		switch {
		case i == ts && deltaTimestamps(md.Schema.Column(i)) && !storedDelta(md, i):
			// A Writer stores timestamp_ns DELTA_BINARY_PACKED: what zstd saved of the input's
			// plain bytes says nothing of the differences, which a recorder's jitter makes as
			// random as they are few bits wide (zstd saves nothing of them:
			// docs/benchmarks.md#timestamps-delta-encoded). Start uncompressed; an input
			// stored delta-encoded is judged as any other column.
			out[i] = true
		case plain[i]:
			out[i] = c.WrittenByStoreopt()
		case uncompressed[i] >= minJudgedBytes:
			out[i] = float64(compressed[i]) > (1-minCompressionSaving)*float64(uncompressed[i])
		}
	}
	return out
}

// deltaTimestamps says whether a Writer stores col, the layout's timestamp_ns leaf, as
// DELTA_BINARY_PACKED: it does for integer columns (timestamp_ns is an int64).
func deltaTimestamps(col *schema.Column) bool {
	return col.PhysicalType() == parquet.Types.Int64 || col.PhysicalType() == parquet.Types.Int32
}

// storedDelta says whether every column chunk of leaf column i holds DELTA_BINARY_PACKED pages only.
func storedDelta(md *metadata.FileMetaData, i int) bool {
	for g := range md.NumRowGroups() {
		cc, err := md.RowGroup(g).ColumnChunk(i)
		if err != nil {
			return false
		}
		if enc, ok := dataEncoding(cc); !ok || enc != parquet.Encodings.DeltaBinaryPacked {
			return false
		}
	}
	return md.NumRowGroups() > 0
}
