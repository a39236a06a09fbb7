package compaction

import "github.com/storeopt/storeopt/plan"

// inMemoryObject is the object size up to which the store reads an input whole (store.OpenObject).
const inMemoryObject = 16 << 20

// ScanMemory estimates the bytes ScanChunk holds for an input of sizeBytes and rows: the object
// (when read whole), the timestamp column and its sort order, and decoder buffers.
func ScanMemory(sizeBytes, rows int64) int64 {
	return min(sizeBytes, inMemoryObject) + rows*18 + 1<<20
}

// OutputMemory estimates the bytes WriteOutput holds while writing output o of p: for each of the
// at most o.MaxOpen inputs open at once, its object (when read whole), two decoded batches and
// page buffers (a whole unsorted input is held three times: batches, concatenation, sorted
// copy); on the output side the collector's batch, two batches in the channel and the batch
// being handed over, the row group the writer holds as Arrow data until it is complete
// (parquetio.Writer), and the page buffers of the one column chunk being encoded.
func OutputMemory(p *plan.Plan, o plan.Output) int64 {
	batch := p.BatchRows * p.ArrowBytesPerRow
	var widest int64
	for _, i := range o.Inputs {
		in := p.Inputs[i]
		bpr := in.ArrowBytes / max(in.Rows, 1)
		obj := min(in.Object(), inMemoryObject)
		need := obj + 2*min(in.Rows, p.BatchRows)*bpr + min(in.SizeBytes, 4<<20)
		if !in.Sorted {
			need = obj + 3*in.ArrowBytes
		}
		widest = max(widest, need)
	}
	rowGroup := min(p.RowGroupRows, max(o.EstRows, 1)) * p.ArrowBytesPerRow
	return int64(max(o.MaxOpen, 1))*widest + 4*batch + rowGroup + 8<<20
}
