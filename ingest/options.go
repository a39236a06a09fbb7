package ingest

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Kind is the sensor kind of a simulated topic; it fixes the schema, the sample rate and the
// "mosaico:ontology" schema metadata.
type Kind string

// The simulated sensor kinds.
const (
	IMU    Kind = "imu"    // 400 Hz inertial measurements: accelerations, angular rates, orientation
	GPS    Kind = "gps"    // 10 Hz position fixes
	Camera Kind = "camera" // 30 Hz camera frames with a binary payload
)

// DefaultPayloadBytes is the per-row payload of a Camera topic whose PayloadBytes is 0.
const DefaultPayloadBytes = 50_000

// DefaultWorkers is the number of chunks encoded and uploaded in parallel when Options.Workers is 0.
const DefaultWorkers = 2

// MaxChunks is the most chunks one simulated topic may have: a topic's timeline holds a few
// bytes per chunk (a permutation of its chunks), so a count beyond it (a huge --scale, a long
// --live with a tiny --chunk-interval) is refused before anything is written instead of
// exhausting memory.
const MaxChunks = 1_000_000

// Options describe one simulated ingestion: one sequence and its topics.
type Options struct {
	// Sequence is the sequence locator (no "/" or ":").
	Sequence string
	// Topics are ingested one after the other, in this order.
	Topics []TopicSpec
	// Seed makes everything written deterministic except the data prefixes (tp_<ULID>).
	Seed int64
	// Workers is the number of goroutines that generate, encode and upload chunks of a topic in
	// parallel (0 = DefaultWorkers). Catalog rows are added in ordinal order regardless.
	Workers int
	// Progress, when set, is called after each chunk is recorded in the catalog (from the
	// calling goroutine of Ingest).
	Progress func(locator string, chunksDone, chunksTotal int)
	// ChunkInterval, when positive, makes the ingestion live: every topic of the sequence is
	// created at once and receives one chunk every ChunkInterval (as a recording does), instead
	// of the topics being written one after the other as fast as possible.
	ChunkInterval time.Duration
	// NoFinalize leaves the topics live (not finalized) at the end: they can still receive
	// chunks, and Finalize finalizes them later.
	NoFinalize bool
}

// TopicSpec describes one simulated topic.
type TopicSpec struct {
	// Path is the topic path inside the sequence, e.g. "sensors/imu"; the locator is
	// Sequence + "/" + Path.
	Path string
	Kind Kind
	// Chunks is the number of chunks (one record batch, one Parquet object each); 0 is allowed
	// and gives a finalized topic without chunks.
	Chunks int
	// RowsPerChunk is the number of rows of every chunk (at least 1).
	RowsPerChunk int
	// PayloadBytes is the size of the binary "data" of each Camera row in bytes (0 means
	// DefaultPayloadBytes); ignored for other kinds.
	PayloadBytes int
	// Overlap (0..1) is the fraction of a chunk's time span that overlaps the previous chunk:
	// the first round(Overlap*RowsPerChunk) rows of every chunk but the first are moved back in
	// time so that they interleave with the previous chunk's last rows.
	Overlap float64
	// UnsortedFraction (0..1) is the fraction of chunks (round(f*Chunks), at least one when f > 0)
	// whose rows are not in timestamp order: a few neighbouring rows are swapped.
	UnsortedFraction float64
	// EqualTimestamps gives some rows of every chunk the timestamp of the row before them.
	EqualTimestamps bool
	// NullTimestamps is the number of rows of the topic with a null timestamp_ns (at most
	// Chunks*RowsPerChunk), spread over the topic.
	NullTimestamps int
	// Compression is the Parquet codec: "zstd" (default when empty), "snappy", "gzip" or "none".
	Compression string
	// DataPageV2 writes the chunks' data pages as DATA_PAGE_V2 (as pyarrow does with
	// data_page_version='2.0'), V1 pages otherwise.
	DataPageV2 bool
	// PageIndex writes a page index (each column's page locations, each column's page
	// statistics) into every chunk, as a recorder that serves window reads does; RowGroupRows
	// cuts each chunk into row groups of at most that many rows (0: one row group per chunk).
	PageIndex    bool
	RowGroupRows int
	// HugeEvery, HugeRows and HugeBytes skew a Camera topic's row sizes (huge rows among small): in
	// every HugeEvery-th chunk (ordinals HugeEvery-1, 2·HugeEvery-1, …) the first HugeRows rows carry
	// a payload of HugeBytes zero bytes instead of PayloadBytes (a map snapshot or a raw frame
	// among small messages; zeros, so the objects stay small). 0 = no huge rows. A chunk's huge
	// payloads together must stay under 2 GiB (one Arrow binary array).
	HugeEvery, HugeRows, HugeBytes int
}

// hugeRows returns how many of chunk ordinal's first rows carry HugeBytes (see HugeEvery).
func (s TopicSpec) hugeRows(ordinal int) int {
	if s.HugeEvery <= 0 || s.Kind != Camera || ordinal%s.HugeEvery != s.HugeEvery-1 {
		return 0
	}
	return min(s.HugeRows, s.RowsPerChunk)
}

// kind facts: sample period and description.
type kindFacts struct {
	periodNs    int64
	description string
}

var kinds = map[Kind]kindFacts{
	IMU:    {periodNs: 2_500_000, description: "inertial measurement unit: linear acceleration, angular velocity and orientation"},
	GPS:    {periodNs: 100_000_000, description: "GNSS receiver: WGS84 position fixes with quality indicators"},
	Camera: {periodNs: 1_000_000_000 / 30, description: "camera: encoded image frames"},
}

var codecs = map[string]compress.Compression{
	"":       compress.Codecs.Zstd,
	"zstd":   compress.Codecs.Zstd,
	"snappy": compress.Codecs.Snappy,
	"gzip":   compress.Codecs.Gzip,
	"none":   compress.Codecs.Uncompressed,
}

// compressionName is the codec name recorded in metadata.json.
func (s TopicSpec) compressionName() string {
	if s.Compression == "" {
		return "zstd"
	}
	return s.Compression
}

func (s TopicSpec) payloadBytes() int {
	if s.PayloadBytes == 0 {
		return DefaultPayloadBytes
	}
	return s.PayloadBytes
}

// validate checks opts and returns an error naming the offending sequence or topic.
func (o Options) validate() error {
	if o.Sequence == "" || strings.ContainsAny(o.Sequence, "/:") {
		return fmt.Errorf("sequence %q: locator must be non-empty without '/' or ':'", o.Sequence)
	}
	if o.Workers < 0 {
		return fmt.Errorf("sequence %s: workers %d < 0", o.Sequence, o.Workers)
	}
	if o.ChunkInterval < 0 {
		return fmt.Errorf("sequence %s: chunk interval %s < 0", o.Sequence, o.ChunkInterval)
	}
	seen := make(map[string]bool)
	for _, t := range o.Topics {
		locator := o.Sequence + "/" + t.Path
		if err := t.validate(); err != nil {
			return fmt.Errorf("topic %s: %w", locator, err)
		}
		if seen[t.Path] {
			return fmt.Errorf("topic %s: listed twice", locator)
		}
		seen[t.Path] = true
	}
	return nil
}

func (t TopicSpec) validate() error {
	switch {
	case t.Path == "" || strings.HasPrefix(t.Path, "/") || strings.HasSuffix(t.Path, "/") ||
		strings.Contains(t.Path, "//") || strings.Contains(t.Path, ":"):
		return fmt.Errorf("path %q must be non-empty, without ':', leading, trailing or double '/'", t.Path)
	case kinds[t.Kind].periodNs == 0:
		return fmt.Errorf("unknown kind %q (imu, gps or camera)", t.Kind)
	case t.Chunks < 0:
		return fmt.Errorf("chunks %d < 0", t.Chunks)
	case t.Chunks > MaxChunks:
		return fmt.Errorf("chunks %d > %d, the most a simulated topic may have", t.Chunks, MaxChunks)
	case t.RowsPerChunk < 1:
		return fmt.Errorf("rows per chunk %d < 1", t.RowsPerChunk)
	case t.PayloadBytes < 0:
		return fmt.Errorf("payload bytes %d < 0", t.PayloadBytes)
	case t.RowGroupRows < 0:
		return fmt.Errorf("row group rows %d < 0", t.RowGroupRows)
	case t.HugeEvery < 0 || t.HugeRows < 0 || t.HugeBytes < 0 ||
		int64(min(t.HugeRows, t.RowsPerChunk))*int64(t.HugeBytes) >= 1<<31:
		return fmt.Errorf("huge rows: every %d chunks %d rows of %d bytes (each ≥ 0, rows × bytes < 2 GiB)",
			t.HugeEvery, t.HugeRows, t.HugeBytes)
	case !(t.Overlap >= 0 && t.Overlap <= 1):
		return fmt.Errorf("overlap %v outside 0..1", t.Overlap)
	case !(t.UnsortedFraction >= 0 && t.UnsortedFraction <= 1):
		return fmt.Errorf("unsorted fraction %v outside 0..1", t.UnsortedFraction)
	case t.NullTimestamps < 0 || int64(t.NullTimestamps) > int64(t.Chunks)*int64(t.RowsPerChunk):
		return fmt.Errorf("null timestamps %d outside 0..%d (chunks × rows per chunk)",
			t.NullTimestamps, int64(t.Chunks)*int64(t.RowsPerChunk))
	}
	if _, ok := codecs[t.Compression]; !ok {
		return fmt.Errorf("unknown compression %q (zstd, snappy, gzip or none)", t.Compression)
	}
	return nil
}

// Presets lists the names Preset accepts.
var Presets = []string{"test", "demo"}

// Preset returns named options; scale (> 0) multiplies every topic's chunk count (rounded, at
// least 1). Presets:
//   - "test": sequence "test_run", three small topics (IMU 10 chunks × 200 rows, GPS 8 × 25,
//     camera 6 × 4 rows of 4 KiB) with every irregularity switched on and three codecs; a few
//     hundred KB.
//   - "demo": sequence "demo_run", IMU 2000 chunks × 1000 rows, GPS 300 × 50, camera 300 × 30
//     rows of 50 KB; about 650 MB of Arrow data (about 550 MB of Parquet) at scale 1.
//
// Errors: unknown name, scale not a positive finite number, a scale that gives a topic more than
// MaxChunks chunks.
func Preset(name string, scale float64) (Options, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return Options{}, fmt.Errorf("preset %q: scale %v must be a positive number", name, scale)
	}
	var o Options
	switch name {
	case "test":
		o = Options{Sequence: "test_run", Seed: 1, Topics: []TopicSpec{
			{Path: "sensors/imu", Kind: IMU, Chunks: 10, RowsPerChunk: 200, Overlap: 0.1,
				UnsortedFraction: 0.3, EqualTimestamps: true, NullTimestamps: 3},
			{Path: "sensors/gps", Kind: GPS, Chunks: 8, RowsPerChunk: 25, Overlap: 0.2,
				UnsortedFraction: 0.25, NullTimestamps: 1, Compression: "snappy"},
			{Path: "camera/front", Kind: Camera, Chunks: 6, RowsPerChunk: 4, PayloadBytes: 4096,
				Overlap: 0.25, UnsortedFraction: 0.2, EqualTimestamps: true, Compression: "none"},
		}}
	case "demo":
		o = Options{Sequence: "demo_run", Seed: 1, Topics: []TopicSpec{
			{Path: "sensors/imu", Kind: IMU, Chunks: 2000, RowsPerChunk: 1000, Overlap: 0.05,
				UnsortedFraction: 0.1, EqualTimestamps: true, NullTimestamps: 20},
			{Path: "sensors/gps", Kind: GPS, Chunks: 300, RowsPerChunk: 50, Overlap: 0.1,
				UnsortedFraction: 0.05, NullTimestamps: 5},
			{Path: "camera/front", Kind: Camera, Chunks: 300, RowsPerChunk: 30, PayloadBytes: 50_000,
				Overlap: 0.02, UnsortedFraction: 0.02, EqualTimestamps: true},
		}}
	default:
		return Options{}, fmt.Errorf("unknown preset %q (one of %s)", name, strings.Join(Presets, ", "))
	}
	for i, t := range o.Topics {
		// Checked in float64: a huge scale must not overflow the int conversion.
		chunks := math.Round(float64(t.Chunks) * scale)
		if chunks > MaxChunks {
			return Options{}, fmt.Errorf("preset %q: scale %v gives topic %s %.0f chunks, more than %d (the most a simulated topic may have)",
				name, scale, t.Path, chunks, MaxChunks)
		}
		o.Topics[i].Chunks = max(1, int(chunks))
	}
	return o, nil
}
