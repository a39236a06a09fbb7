package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/policy"
)

// chunkFields are the columns chunks and staged_chunks share, in the order of chunkDest and
// chunkArgs.
const chunkFields = "topic_id, ordinal, object_key, size_bytes, row_count, arrow_size_bytes, " +
	"min_timestamp_ns, max_timestamp_ns, timestamp_null_count, column_stats, level, blocks, footer_bytes"

// chunkFieldParams are the placeholders $1..$13 for chunkFields.
const chunkFieldParams = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13"

// chunkDest returns the scan destinations for chunkFields; the column_stats JSON goes to stats,
// the block index JSON to blocks.
func chunkDest(ch *Chunk, stats, blocks *[]byte) []any {
	return []any{&ch.TopicID, &ch.Ordinal, &ch.ObjectKey, &ch.SizeBytes, &ch.RowCount,
		&ch.ArrowSizeBytes, &ch.MinTimestampNs, &ch.MaxTimestampNs, &ch.TimestampNullCount, stats,
		&ch.Level, blocks, footerBytesDest{&ch.FooterBytes}}
}

// footerBytesDest scans footer_bytes, NULL as 0 (unknown).
type footerBytesDest struct{ n *int64 }

func (d footerBytesDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.n = 0
	case int64:
		*d.n = v
	default:
		return fmt.Errorf("footer_bytes: unexpected %T", src)
	}
	return nil
}

// chunkArgs validates ch and returns the query arguments for chunkFields. what names the chunk
// in errors.
func chunkArgs(what string, ch Chunk) ([]any, error) {
	if ch.Ordinal < 0 || ch.Ordinal > math.MaxInt32 {
		return nil, fmt.Errorf("catalog: %s: ordinal %d out of range: %w", what, ch.Ordinal, ErrInvalid)
	}
	if ch.FooterBytes < 0 || ch.FooterBytes > ch.SizeBytes {
		return nil, fmt.Errorf("catalog: %s: footer of %d bytes in an object of %d: %w", what, ch.FooterBytes, ch.SizeBytes, ErrInvalid)
	}
	if ch.SizeBytes < 0 || ch.RowCount < 0 || ch.ArrowSizeBytes < 0 || ch.TimestampNullCount < 0 {
		return nil, fmt.Errorf("catalog: %s: negative size or count (size %d bytes, %d rows, arrow %d bytes, %d null timestamps): %w",
			what, ch.SizeBytes, ch.RowCount, ch.ArrowSizeBytes, ch.TimestampNullCount, ErrInvalid)
	}
	if err := checkNonEmptyText(what+": object key", ch.ObjectKey); err != nil {
		return nil, err
	}
	if ch.Level != policy.L0 && ch.Level != policy.L1 {
		return nil, fmt.Errorf("catalog: %s: level %d is not L0 or L1: %w", what, ch.Level, ErrInvalid)
	}
	stats, err := encodeColumnStats(ch.ColumnStats)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: column stats: %w", what, err)
	}
	blocks, err := encodeBlocks(ch.Blocks)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: block index: %w", what, err)
	}
	return []any{ch.TopicID, ch.Ordinal, ch.ObjectKey, ch.SizeBytes, ch.RowCount, ch.ArrowSizeBytes,
		ch.MinTimestampNs, ch.MaxTimestampNs, ch.TimestampNullCount, stats, ch.Level, blocks, footerBytes(ch.FooterBytes)}, nil
}

// footerBytes is the footer_bytes of a chunk: NULL when unknown (0).
func footerBytes(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// encodeBlocks returns the JSON stored in blocks: NULL (nil) for an unknown block index.
func encodeBlocks(blocks []Block) ([]byte, error) {
	if blocks == nil {
		return nil, nil
	}
	for i, b := range blocks {
		if b.Rows < 0 || b.Nulls < 0 || b.Offset < 0 || b.Length < 0 {
			return nil, fmt.Errorf("block %d: negative rows, nulls, offset or length: %w", i, ErrInvalid)
		}
		for _, r := range []*ByteRange{b.TsIndex, b.OffsetIndex} {
			if r != nil && (r.Offset < 0 || r.Length <= 0) {
				return nil, fmt.Errorf("block %d: page index range [%d, +%d): %w", i, r.Offset, r.Length, ErrInvalid)
			}
		}
		if err := checkText("block source", b.Source); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	return b, nil
}

func decodeBlocks(b []byte) ([]Block, error) {
	if b == nil {
		return nil, nil
	}
	var blocks []Block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return nil, fmt.Errorf("catalog: block index: %w", err)
	}
	if blocks == nil {
		blocks = []Block{}
	}
	return blocks, nil
}

// StoredColumnStats returns stats as a chunk's ColumnStats read back from the catalog: a Min or
// Max the catalog cannot hold faithfully dropped (see encodeColumnStats), numbers as int64 when
// integral and within its range and as float64 otherwise, whatever their Go type was (a float
// column's min 3.0 comes back as int64 3, a uint64 above the int64 range as the nearest
// float64). An empty map gives nil. It fails, as AddChunk would, on a column name that is not
// valid text.
func StoredColumnStats(stats map[string]ColumnStats) (map[string]ColumnStats, error) {
	b, err := encodeColumnStats(stats)
	if err != nil {
		return nil, err
	}
	return decodeColumnStats(b)
}

// encodeColumnStats returns the JSON stored in column_stats. A Min or Max that JSONB cannot hold
// faithfully (a string with a NUL byte or invalid UTF-8, a NaN or infinite float) is stored as
// unknown (nil) instead. Field names must be valid text.
func encodeColumnStats(stats map[string]ColumnStats) ([]byte, error) {
	if len(stats) == 0 {
		return []byte("{}"), nil
	}
	clean := make(map[string]ColumnStats, len(stats))
	for name, s := range stats {
		if err := checkText("column name", name); err != nil {
			return nil, err
		}
		s.Min = storableStat(s.Min)
		s.Max = storableStat(s.Max)
		clean[name] = s
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	return b, nil
}

func storableStat(v any) any {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) || strings.IndexByte(x, 0) >= 0 {
			return nil
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	}
	return v
}

// decodeColumnStats parses column_stats. Numbers written without fraction or exponent come back
// as int64 (exact for the whole int64 range), other numbers as float64; an empty object gives nil.
func decodeColumnStats(b []byte) (map[string]ColumnStats, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stats map[string]ColumnStats
	if err := dec.Decode(&stats); err != nil {
		return nil, fmt.Errorf("catalog: column stats: %w", err)
	}
	if len(stats) == 0 {
		return nil, nil
	}
	for name, s := range stats {
		s.Min = numberValue(s.Min)
		s.Max = numberValue(s.Max)
		stats[name] = s
	}
	return stats, nil
}

func numberValue(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if !strings.ContainsAny(string(n), ".eE") {
		if i, err := n.Int64(); err == nil {
			return i
		}
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return string(n)
}

// scanChunk scans a row of "id, " + chunkFields.
func scanChunk(row pgx.CollectableRow) (Chunk, error) {
	var ch Chunk
	var stats, blocks []byte
	if err := row.Scan(append([]any{&ch.ID}, chunkDest(&ch, &stats, &blocks)...)...); err != nil {
		return Chunk{}, err
	}
	return ch, decodeChunkJSON(&ch, stats, blocks)
}

// scanStagedChunk scans a row of chunkFields + ", target_ordinal, digest, taken".
func scanStagedChunk(row pgx.CollectableRow) (StagedChunk, error) {
	var s StagedChunk
	var stats, blocks []byte
	if err := row.Scan(append(chunkDest(&s.Chunk, &stats, &blocks), &s.TargetOrdinal, &s.Digest, &s.Taken)...); err != nil {
		return StagedChunk{}, err
	}
	return s, decodeChunkJSON(&s.Chunk, stats, blocks)
}

func decodeChunkJSON(ch *Chunk, stats, blocks []byte) error {
	var err error
	if ch.ColumnStats, err = decodeColumnStats(stats); err != nil {
		return err
	}
	ch.Blocks, err = decodeBlocks(blocks)
	return err
}
