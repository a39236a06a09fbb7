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

// demoHeapBound is the most Go heap the ingestion of the demo preset may hold at once.
const demoHeapBound = 256 << 20

// TestDemoScaleBoundedMemory ingests the "demo" preset (about 550 MB into a temporary directory,
// a few seconds; STOREOPT_INGEST_SCALE scales it, e.g. 4) and checks that the Go heap stays far
// below the data size: chunks are streamed, never accumulated.
func TestDemoScaleBoundedMemory(t *testing.T) {
	scale := 1.0
	if env := os.Getenv("STOREOPT_INGEST_SCALE"); env != "" {
		var err error
		scale, err = strconv.ParseFloat(env, 64)
		require.NoError(t, err)
	}
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
	// A server of its own, without fsync: 2600 chunk rows committed one by one took about a
	// minute on the shared server's disk, and durability is not what this test is about.
	t.Setenv("STOREOPT_TEST_DATABASE_URL", pgtest.StartServer(t).URL)
	cat := pgtest.NewCatalog(t)
	topics, err := ingest.Ingest(context.Background(), cat, openBucket(t), opts)
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
	require.Greater(t, bytes, int64(2*demoHeapBound), "the data must be well above the bound to show it (STOREOPT_INGEST_SCALE too small)")
	assert.Less(t, peak, uint64(demoHeapBound), "peak heap in use")
}
