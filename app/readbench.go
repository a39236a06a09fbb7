package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"
)

// DefaultReadParallelism is how many objects ReadObjects fetches and decodes at once (two keep
// both cores of a small machine busy; docs/design.md#arrow-go-facts).
const DefaultReadParallelism = 2

// Record batch size of the benchmark reader: about readBatchBytes of uncompressed data, between 1
// and maxReadBatchRows rows. Sizing batches by bytes matters: a batch of 64k camera frames
// would be one 3 GB binary array built by repeated reallocation, which measures the builder, not
// the file.
const (
	readBatchBytes   = 8 << 20
	maxReadBatchRows = 64 * 1024
)

// batchRows returns the batch size, in rows, for a file with numRows rows and uncompressedBytes
// of data.
func batchRows(numRows, uncompressedBytes int64) int64 {
	if numRows <= 0 || uncompressedBytes <= 0 {
		return maxReadBatchRows
	}
	rowBytes := max(1, uncompressedBytes/numRows)
	return min(max(1, readBatchBytes/rowBytes), maxReadBatchRows)
}

// ReadStats is what ReadObjects read.
type ReadStats struct {
	Objects int
	Rows    int64
	Bytes   int64 // object bytes fetched from the store
	Elapsed time.Duration
}

// ReadObjects measures how long a reader takes to read a topic: it fetches every object of keys
// from bucket and decodes all its rows into Arrow record batches with pqarrow, parallel objects
// at a time (≤ 0 means DefaultReadParallelism), and returns the totals and the wall time. It is
// the benchmark of the demo's before/after table. Errors name the object key.
func ReadObjects(ctx context.Context, bucket *blob.Bucket, keys []string, parallel int) (ReadStats, error) {
	if parallel <= 0 {
		parallel = DefaultReadParallelism
	}
	start := time.Now()
	rows := make([]int64, len(keys))
	sizes := make([]int64, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, key := range keys {
		g.Go(func() error {
			n, size, err := readObject(gctx, bucket, key)
			if err != nil {
				return fmt.Errorf("read %s: %w", key, err)
			}
			rows[i], sizes[i] = n, size
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return ReadStats{}, err
	}
	st := ReadStats{Objects: len(keys), Elapsed: time.Since(start)}
	for i := range keys {
		st.Rows += rows[i]
		st.Bytes += sizes[i]
	}
	return st, nil
}

// readObject reads one Parquet object completely and returns its row count and size in bytes.
func readObject(ctx context.Context, bucket *blob.Bucket, key string) (rows, size int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parquet reader panicked: %v", r)
		}
	}()
	data, err := fetch(ctx, bucket, key)
	if err != nil {
		return 0, 0, err
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return 0, 0, err
	}
	defer pf.Close()
	md := pf.MetaData()
	var uncompressed int64
	for i := range md.NumRowGroups() {
		uncompressed += md.RowGroup(i).TotalByteSize()
	}
	arrowProps := pqarrow.ArrowReadProperties{BatchSize: batchRows(md.NumRows, uncompressed), Parallel: true}
	fr, err := pqarrow.NewFileReader(pf, arrowProps, memory.DefaultAllocator)
	if err != nil {
		return 0, 0, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		return 0, 0, err
	}
	return rows, int64(len(data)), nil
}

// fetch reads a whole object into a buffer of exactly its size (Bucket.ReadAll grows its buffer
// step by step, which costs seconds for objects of hundreds of MB).
func fetch(ctx context.Context, bucket *blob.Bucket, key string) ([]byte, error) {
	r, err := bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, r.Size())
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}
