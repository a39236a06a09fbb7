package plan

import "testing"

// BenchmarkComputeManyInputs plans a topic like the bench's IMU set: 2000 inputs overlapping
// their neighbours by 5 %, 128 samples each (256 Ki in all). Its bytes/op are the planner's
// own memory beside the samples it is given.
func BenchmarkComputeManyInputs(b *testing.B) {
	const inputs, perInput, span = 2000, 128, 1000
	in := make([]Input, inputs)
	samples := make([][]Sample, inputs)
	for j := range in {
		start := int64(j) * span * 95 / 100
		in[j] = Input{ChunkID: int64(j), Rows: perInput * 43, SizeBytes: 450_000, FooterBytes: 4000, Sorted: true,
			First: Key{Ts: start, Input: j}, Last: Key{Ts: start + span, Input: j, Row: perInput*43 - 1}}
		for k := range perInput {
			samples[j] = append(samples[j], Sample{Key: Key{Ts: start + int64(k)*span/perInput, Input: j, Row: int64(k) * 43}, Rows: 43})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(in, samples, Totals{Rows: inputs * perInput * 43}, Options{MaxChunkSizeBytes: 256_000_000}); err != nil {
			b.Fatal(err)
		}
	}
}
