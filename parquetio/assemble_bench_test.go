package parquetio

import (
	"bytes"
	"context"
	"testing"
)

// BenchmarkAssembleSensor assembles one chunk of 40 sensor inputs of 10 000 rows each
// (flatSchema as the ingestion service writes it: five columns copied, one re-encoded).
func BenchmarkAssembleSensor(b *testing.B) {
	inputs := ingestedChunks(b, 40, 10000, 10000)
	b.ResetTimer()
	for range b.N {
		var chunks []*Chunk
		for _, in := range inputs {
			c, err := Open(bytes.NewReader(in), nil)
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, c)
		}
		spec := chunks[0].Layout().CopySpecFor(chunks[:1])
		var buf bytes.Buffer
		a, err := NewAssembler(&buf, chunks[0].Layout(), spec, WriterOptions{RowGroupRows: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range chunks {
			for rg := range c.NumRowGroups() {
				if err := a.Append(context.Background(), c, rg); err != nil {
					b.Fatal(err)
				}
			}
			c.Close()
		}
		if err := a.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
