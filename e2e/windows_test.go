package e2e

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/internal/testrows"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/policy"
)

// TestWindowReadsFetchOnlyTheirPages: after every policy step of a live IMU topic (ingested,
// tiered, leveled with new chunks, full once finalized, full again keeping every chunk), random windows read by starter read's
// reader give the rows a brute-force read of the ingested chunks gives, in global order; and the
// bytes they fetch are counted: from chunks without a page index (as ingested) a window fetches
// the overlapping blocks whole, from storeopt's outputs it reads every block by its pages, and from
// L1 chunks a 1-second window fetches no more than two pages of rows of each block it overlaps
// (the pages holding it) besides footers and page indexes, where a whole block is many more.
func TestWindowReadsFetchOnlyTheirPages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	opts := ingest.Options{Sequence: "windows", Seed: 3, NoFinalize: true, Topics: []ingest.TopicSpec{{
		Path: "sensors/imu", Kind: ingest.IMU, Chunks: 12, RowsPerChunk: 2000, Overlap: 0.05,
		UnsortedFraction: 0.2, EqualTimestamps: true, NullTimestamps: 2}}}
	topics, err := ingest.Ingest(ctx, e.cat, e.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	tp := topics[0]
	chunks := opts.Topics[0].Chunks
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	// The chunks are about 160 kB: tiered joins up to a dozen of them, leveled and full write
	// chunks of about 24 000 rows (a block each: a dozen pages of every column).
	const maxChunk = 2 << 20
	r := rand.New(rand.NewPCG(5, 8))

	check := func(step string) {
		t.Helper()
		keys := make([]string, chunks)
		for o := range keys {
			keys[o] = ingest.ChunkKey(tp.Prefix, o)
		}
		rows, err := testrows.ReadAll(ctx, e.b, keys)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := e.cat.Chunks(ctx, tp.TopicID)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := testrows.Span(rows)
		for i := range 8 {
			length := []int64{int64(time.Millisecond), int64(time.Second), int64(time.Second), 5 * int64(time.Second), (hi - lo) / 3}[i%5]
			from := lo - int64(time.Second) + r.Int64N(hi-lo+2*int64(time.Second))
			st, err := testrows.CheckWindow(ctx, e.cat, e.b, tp.Locator, rows, from, from+length)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			blocks, pages, paged, l1 := overlappingBlocks(cs, from, from+length)
			t.Logf("%s: window of %.3f s: %d rows, %d chunks, %d blocks (%d by pages), %d bytes fetched in %d requests, blocks %d bytes",
				step, float64(length)/1e9, st.Rows, st.Chunks, st.Blocks, st.Pages, st.BytesFetched, st.Requests, blocks)
			switch {
			case !paged && st.Pages > 0:
				t.Fatalf("%s: %d blocks read by pages from chunks without a page index", step, st.Pages)
			case !paged && st.BytesFetched < blocks:
				t.Fatalf("%s: %d bytes fetched, less than the %d bytes of the blocks the window overlaps", step, st.BytesFetched, blocks)
			case paged && st.Blocks > 0 && st.Pages != st.Blocks:
				t.Fatalf("%s: %d of %d blocks read by pages", step, st.Pages, st.Blocks)
			case l1 && length <= int64(time.Second) && st.BytesFetched > pages+footersAndIndexes:
				t.Fatalf("%s: a window of %d ns fetched %d bytes: more than two pages of rows (%d bytes) of the %d bytes of the blocks it overlaps", step, length, st.BytesFetched, pages, blocks)
			}
		}
	}

	check("ingested")
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "tiered"}); res.Tiered != 1 || res.Failed != 0 {
		t.Fatalf("tiered run %+v", res)
	}
	check("tiered")
	if err := ingest.Append(ctx, e.cat, e.b, opts, topics, chunks, 4); err != nil {
		t.Fatal(err)
	}
	chunks += 4
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk, Policy: "leveled"}); res.Leveled != 1 || res.Failed != 0 {
		t.Fatalf("leveled run %+v", res)
	}
	check("leveled")
	// The last chunks arrive and the topic is finalized: full rewrites it whole (L1 run and L0).
	if err := ingest.Append(ctx, e.cat, e.b, opts, topics, chunks, 2); err != nil {
		t.Fatal(err)
	}
	chunks += 2
	if err := e.cat.FinalizeTopic(ctx, tp.TopicID); err != nil {
		t.Fatal(err)
	}
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("full run %+v", res)
	}
	check("full")
	// Queued again, the topic's chunks pass through: the copies read as the chunks did.
	full := e.snapshot(t, tp.TopicID)
	if err := e.cat.Enqueue(ctx, tp.TopicID); err != nil {
		t.Fatal(err)
	}
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("second full run %+v", res)
	}
	if !chunksKept(t, e, full) {
		t.Fatal("the second full run did not keep the first one's chunks")
	}
	check("kept")
}

// footersAndIndexes bounds what a window read of a few chunks fetches besides pages: footers and
// page indexes.
const footersAndIndexes = 64 << 10

// overlappingBlocks returns the bytes of the blocks of chunks cs that may hold timestamps in
// [from, to) (the whole object of a chunk without a block index), the bytes of two pages of rows
// of each (parquetio.DataPageRows rows a page, at the block's average bytes a row: a window of
// 1 s at 400 Hz is within one or two pages of each column), whether every chunk that
// overlaps the window has a page index in the catalog (storeopt's outputs) and whether they are
// all L1 chunks (blocks of many pages; a tiered output's block is one ingested chunk).
func overlappingBlocks(cs []catalog.Chunk, from, to int64) (bytes, pages int64, paged, l1 bool) {
	paged, l1 = true, true
	for _, c := range cs {
		if c.MinTimestampNs == nil || *c.MinTimestampNs >= to || *c.MaxTimestampNs < from {
			continue
		}
		l1 = l1 && c.Level == policy.L1
		if c.Blocks == nil {
			bytes += c.SizeBytes
			pages += c.SizeBytes
			paged = false
			continue
		}
		for _, b := range c.Blocks {
			if b.MinTs == nil || *b.MinTs >= to || *b.MaxTs < from {
				continue
			}
			bytes += b.Length
			pages += b.Length * min(b.Rows, 2*parquetio.DataPageRows) / max(b.Rows, 1)
			paged = paged && b.TsIndex != nil && b.OffsetIndex != nil
		}
	}
	return bytes, pages, paged, l1 && paged
}
