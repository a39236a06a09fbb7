package ingest_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
)

// TestDemoScaleBoundedMemory ingests the "demo" preset at STOREOPT_INGEST_SCALE (skipped when
// unset; 1 writes about 550 MB to a temporary directory) and checks that the Go heap stays far
// below the data size: chunks are streamed, never accumulated.
func TestDemoScaleBoundedMemory(t *testing.T) {
	env := os.Getenv("STOREOPT_INGEST_SCALE")
	if env == "" {
		t.Skip("set STOREOPT_INGEST_SCALE (e.g. 1) to ingest the demo preset")
	}
	scale, err := strconv.ParseFloat(env, 64)
	require.NoError(t, err)
	opts, err := ingest.Preset("demo", scale)
	require.NoError(t, err)

	stop := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	topics, err := ingest.Ingest(context.Background(), pgtest.NewCatalog(t), openBucket(t), opts)
	close(stop)
	wg.Wait()
	require.NoError(t, err)

	var chunks int
	var bytes int64
	for i, tp := range topics {
		assert.Equal(t, opts.Topics[i].Chunks, tp.Chunks)
		chunks += tp.Chunks
		bytes += tp.Bytes
		t.Logf("%s: %d chunks, %d rows, %d bytes", tp.Locator, tp.Chunks, tp.Rows, tp.Bytes)
	}
	t.Logf("total %d chunks, %d bytes; peak heap in use %d MiB", chunks, bytes, peak>>20)
	assert.Less(t, peak, uint64(256<<20), "peak heap in use")
}
