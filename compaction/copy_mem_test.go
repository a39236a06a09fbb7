package compaction

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/storeopt/storeopt/store"
)

// The copy path returns every buffer it takes from the inputs' allocator.
func TestWriteOutputByCopyReturnsItsMemory(t *testing.T) {
	var chunks [][]int64
	for c := range 12 {
		var ts []int64
		for r := range 50 {
			ts = append(ts, int64(c*1000+r))
		}
		chunks = append(chunks, ts)
	}
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(20), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("payload", true), parquet.WithStats(true))
	tp := newTopicWith(t, chunks, props)
	p := tp.plan(t, 1<<30)
	p.RowGroupRows = 70
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	res, err := WriteOutput(context.Background(), Inputs{Bucket: tp.bucket, Plan: p, Mem: mem}, p.Outputs[0], store.ChunkKey(prefix+"M", 0), tp.layout(t), nil)
	if err != nil || !res.Copied {
		t.Fatalf("copied %v, %v", res.Copied, err)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes still allocated after the output was written", n)
	}
}
