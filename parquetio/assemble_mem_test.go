package parquetio

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The Assembler returns every buffer it takes from its allocator: the inputs' pages it held,
// the re-encoded columns' buffered pages, its encoders' buffers.
func TestAssemblerReturnsItsMemory(t *testing.T) {
	inputs := ingestedChunks(t, 6, 2000, 1000)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	assemble(t, inputs, WriterOptions{RowGroupRows: 3000, Mem: mem})
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes still allocated after Close", n)
	}
}
