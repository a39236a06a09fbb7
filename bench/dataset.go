package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/parquetio"
)

// Dataset shapes.
const (
	shapeIMU   = "imu"
	shapeImage = "image"
	// shapeSkew is a camera topic of small rows (100-byte payloads) of which every
	// -huge-every-th chunk starts with -huge-rows rows of -huge-bytes zero bytes (for example
	// a status stream with an occasional map snapshot or raw frame).
	shapeSkew = "skew"
)

// Payload of the skew shape's small rows, bytes.
const skewSmallPayload = 100

// datasetFormat changes whenever the generated layout changes, so that old datasets are not
// reused by mistake.
const datasetFormat = 1

// benchSequence is the sequence of every generated topic.
const benchSequence = "bench"

// datasetParams fix a generated dataset: equal params give equal data (ingest is deterministic
// for a seed, prefixes aside).
type datasetParams struct {
	Format           int     `json:"format"`
	Shape            string  `json:"shape"`
	TargetArrowBytes int64   `json:"target_arrow_bytes"`
	Chunks           int     `json:"chunks"`
	RowsPerChunk     int     `json:"rows_per_chunk"`
	PayloadBytes     int     `json:"payload_bytes,omitempty"`
	HugeEvery        int     `json:"huge_every,omitempty"`
	HugeRows         int     `json:"huge_rows,omitempty"`
	HugeBytes        int     `json:"huge_bytes,omitempty"`
	Overlap          float64 `json:"overlap"`
	Unsorted         float64 `json:"unsorted"`
	PageIndex        bool    `json:"page_index,omitempty"`
	RowGroupRows     int     `json:"row_group_rows,omitempty"`
	Seed             int64   `json:"seed"`
}

// approxRowBytes is the uncompressed Arrow size of one row of a shape, bytes: timestamp_ns (8),
// strings and binaries as 4-byte offsets plus their data (the simulator's constant frame IDs
// and encodings), fixed-width numbers.
func approxRowBytes(shape string, payload int) int64 {
	if shape == shapeImage || shape == shapeSkew {
		return 8 + (4 + 20) + 4 + 4 + (4 + 4) + (4 + int64(payload)) // ts, frame_id, width, height, encoding, data
	}
	return 8 + (4 + 8) + 10*8 // ts, frame_id, 10 float64
}

// paramsFor returns the dataset params of shape under cfg.
func paramsFor(cfg config, shape string) datasetParams {
	p := datasetParams{Format: datasetFormat, Shape: shape, TargetArrowBytes: cfg.size, Chunks: cfg.chunks,
		Overlap: cfg.overlap, Unsorted: cfg.unsorted, PageIndex: cfg.pageIndex, RowGroupRows: cfg.rowGroupRows, Seed: cfg.seed}
	if shape == shapeImage {
		p.PayloadBytes = cfg.payload
	}
	if shape == shapeSkew {
		// The size is that of the small rows; the huge ones come on top.
		p.PayloadBytes, p.HugeEvery, p.HugeRows, p.HugeBytes = skewSmallPayload, cfg.hugeEvery, cfg.hugeRows, cfg.hugeBytes
	}
	if p.TargetArrowBytes == 0 {
		p.TargetArrowBytes = map[string]int64{shapeIMU: 1_100_000_000, shapeImage: 500_000_000, shapeSkew: 60_000_000}[shape]
	}
	if p.Chunks == 0 {
		p.Chunks = map[string]int{shapeIMU: 2000, shapeImage: 300, shapeSkew: 200}[shape]
	}
	rows := float64(p.TargetArrowBytes) / float64(p.Chunks) / float64(approxRowBytes(shape, p.PayloadBytes))
	p.RowsPerChunk = max(1, int(math.Round(rows)))
	return p
}

// name identifies the dataset in the data directory: shape and a hash of the params.
func (p datasetParams) name() string {
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return p.Shape + "-" + hex.EncodeToString(sum[:6])
}

func (p datasetParams) topicSpec() ingest.TopicSpec {
	spec := ingest.TopicSpec{Path: "sensors/imu", Kind: ingest.IMU, Chunks: p.Chunks, RowsPerChunk: p.RowsPerChunk,
		Overlap: p.Overlap, UnsortedFraction: p.Unsorted, PageIndex: p.PageIndex, RowGroupRows: p.RowGroupRows}
	if p.Shape == shapeImage {
		spec.Path, spec.Kind, spec.PayloadBytes = "camera/front", ingest.Camera, p.PayloadBytes
	}
	if p.Shape == shapeSkew {
		spec.Path, spec.Kind, spec.PayloadBytes = "sensors/blobs", ingest.Camera, p.PayloadBytes
		spec.HugeEvery, spec.HugeRows, spec.HugeBytes = p.HugeEvery, p.HugeRows, p.HugeBytes
	}
	return spec
}

// marker is the dataset's marker file, written last: a dataset directory without it is
// incomplete and regenerated.
type marker struct {
	Params          datasetParams   `json:"params"`
	Locator         string          `json:"locator"`
	Tables          []snapshotTable `json:"tables"`
	GenerateSeconds float64         `json:"generate_seconds"`
}

// dataset is one generated topic, ready to be benchmarked: its catalog lives in the template
// database, its chunks in the file store.
type dataset struct {
	Params      datasetParams
	Name        string
	Dir         string // data directory of the dataset
	StoreDir    string // file store root
	Template    string // database holding the catalog; copied for every storeopt run
	TopicID     int64
	Prefix      string
	Keys        []string // input chunk keys in catalog order
	InputBytes  int64    // Parquet bytes of the input chunks
	ArrowBytes  int64    // uncompressed Arrow bytes of the input
	Rows        int64
	Footer      *parquetio.Footer // Parquet schema and footer pairs of the input
	GenerateSec float64           // seconds spent generating (0 when reused)
}

func (d *dataset) storeURL() string { return "file://" + d.StoreDir }

// prepareDataset makes the dataset of shape available: it creates a fresh template database,
// migrates it, and either restores the catalog snapshot of an earlier generation with the same
// params (marker present) or generates the topic with ingest.Ingest and snapshots its catalog.
func prepareDataset(ctx context.Context, cfg config, srv *server, shape string) (*dataset, error) {
	p := paramsFor(cfg, shape)
	d := &dataset{Params: p, Name: p.name(), Template: "storeopt_bench_" + randomSuffix() + "_" + shape}
	d.Dir = filepath.Join(cfg.dataDir, d.Name)
	d.StoreDir = filepath.Join(d.Dir, "store")
	dbURL, err := srv.create(ctx, d.Template, "")
	if err != nil {
		return nil, err
	}
	if err := catalog.Migrate(ctx, dbURL); err != nil {
		return nil, err
	}
	m, err := readMarker(d.Dir)
	if err == nil && m.Params == p && !cfg.regen {
		logf("dataset %s: reusing %s", d.Name, d.Dir)
		if err := restoreCatalog(ctx, dbURL, filepath.Join(d.Dir, "catalog"), m.Tables); err != nil {
			return nil, err
		}
	} else {
		if m, err = generate(ctx, d, dbURL); err != nil {
			return nil, err
		}
		d.GenerateSec = m.GenerateSeconds
	}
	if err := d.load(ctx, dbURL, m.Locator); err != nil {
		return nil, err
	}
	return d, nil
}

func readMarker(dir string) (marker, error) {
	var m marker
	b, err := os.ReadFile(filepath.Join(dir, "dataset.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// generate writes the topic into a new store and catalog, snapshots the catalog and writes the
// marker.
func generate(ctx context.Context, d *dataset, dbURL string) (marker, error) {
	p := d.Params
	if err := os.RemoveAll(d.Dir); err != nil {
		return marker{}, err
	}
	logf("dataset %s: generating %d chunks × %d rows (about %.0f MB of Arrow data) into %s",
		d.Name, p.Chunks, p.RowsPerChunk, float64(p.TargetArrowBytes)/1e6, d.Dir)
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		return marker{}, err
	}
	defer cat.Close()
	bucket, err := app.OpenStore(ctx, "file://"+d.StoreDir)
	if err != nil {
		return marker{}, err
	}
	defer bucket.Close()
	start := time.Now()
	lastTenth := 0
	topics, err := ingest.Ingest(ctx, cat, bucket, ingest.Options{
		Sequence: benchSequence, Seed: p.Seed, Topics: []ingest.TopicSpec{p.topicSpec()},
		Progress: func(_ string, done, total int) {
			if tenth := done * 10 / total; tenth > lastTenth {
				lastTenth = tenth
				logf("dataset %s: %d/%d chunks (%.0f s)", d.Name, done, total, time.Since(start).Seconds())
			}
		},
	})
	if err != nil {
		return marker{}, fmt.Errorf("generate dataset %s: %w", d.Name, err)
	}
	m := marker{Params: p, Locator: topics[0].Locator, GenerateSeconds: time.Since(start).Seconds()}
	cat.Close()
	if m.Tables, err = snapshotCatalog(ctx, dbURL, filepath.Join(d.Dir, "catalog")); err != nil {
		return marker{}, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return marker{}, err
	}
	if err := os.WriteFile(filepath.Join(d.Dir, "dataset.json"), b, 0o644); err != nil {
		return marker{}, err
	}
	logf("dataset %s: generated in %.1f s", d.Name, m.GenerateSeconds)
	return m, nil
}

// load reads the topic's input facts from the catalog and the first chunk's footer. It closes
// its connections, so that the template database can be copied afterwards.
func (d *dataset) load(ctx context.Context, dbURL, locator string) error {
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer cat.Close()
	t, err := cat.TopicByLocator(ctx, locator)
	if err != nil {
		return fmt.Errorf("dataset %s: topic %s: %w", d.Name, locator, err)
	}
	chunks, err := cat.Chunks(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("dataset %s: chunks of %s: %w", d.Name, locator, err)
	}
	if len(chunks) == 0 {
		return fmt.Errorf("dataset %s: topic %s has no chunks", d.Name, locator)
	}
	d.TopicID, d.Prefix = t.ID, t.DataPrefix
	overlaps := overlappingChunk(chunks)
	if d.Params.Overlap == 0 && overlaps != "" {
		return fmt.Errorf("dataset %s: generated with -overlap 0, but %s: the copy path needs chunks disjoint in time (rerun with -regen)",
			d.Name, overlaps)
	}
	for _, c := range chunks {
		d.Keys = append(d.Keys, c.ObjectKey)
		d.InputBytes += c.SizeBytes
		d.ArrowBytes += c.ArrowSizeBytes
		d.Rows += c.RowCount
	}
	f, err := os.Open(filepath.Join(d.StoreDir, d.Keys[0]))
	if err != nil {
		return fmt.Errorf("dataset %s: %w (rerun with -regen)", d.Name, err)
	}
	defer f.Close()
	c, err := parquetio.Open(f, nil)
	if err != nil {
		return fmt.Errorf("dataset %s: chunk %s: %w", d.Name, d.Keys[0], err)
	}
	defer c.Close()
	d.Footer = c.Footer
	if _, ok := d.Footer.Value(parquetio.ArrowSchemaKey); !ok {
		return errors.New("input chunk has no ARROW:schema footer entry")
	}
	disjoint := "disjoint in time"
	if overlaps != "" {
		disjoint = "overlapping in time"
	}
	logf("dataset %s: topic %s, %d chunks %s, %d rows, %.1f MB Parquet, %.1f MB Arrow",
		d.Name, locator, len(d.Keys), disjoint, d.Rows, float64(d.InputBytes)/1e6, float64(d.ArrowBytes)/1e6)
	return nil
}

// overlappingChunk describes the first chunk, in catalog order, whose first timestamp is not
// strictly after the last timestamp of every chunk before it (or whose timestamps are all
// null); "" when every chunk starts after its predecessors end: what -overlap 0 promises, so
// that the chunks can be taken whole, in order, by the copy path.
func overlappingChunk(chunks []catalog.Chunk) string {
	var last *int64
	for i, c := range chunks {
		switch {
		case c.MinTimestampNs == nil || c.MaxTimestampNs == nil:
			return fmt.Sprintf("chunk %s has no timestamp", c.ObjectKey)
		case last != nil && *c.MinTimestampNs <= *last:
			return fmt.Sprintf("chunk %s starts at %d, not after %d, the last timestamp of the chunks before it (%s the last)",
				c.ObjectKey, *c.MinTimestampNs, *last, chunks[i-1].ObjectKey)
		}
		if last == nil || *c.MaxTimestampNs > *last {
			last = c.MaxTimestampNs
		}
	}
	return ""
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}
