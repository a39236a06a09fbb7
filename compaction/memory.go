package compaction

import (
	"fmt"
	"math"
	"slices"

	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
)

// inMemoryObject is the object size up to which the store reads an input whole (store.OpenObject).
const inMemoryObject = 16 << 20

// ScanMemory estimates the bytes ScanChunk holds for an input of sizeBytes and rows: the object
// (when read whole), the timestamp column and its sort order, and decoder buffers.
func ScanMemory(sizeBytes, rows int64) int64 {
	return min(sizeBytes, inMemoryObject) + rows*18 + 1<<20
}

// RowCopies is how many copies of its largest row the writing of an output holds at once, at
// most, when that row is larger than a record batch: the row as read (the reader's decompressed
// page, then the decoded Arrow value, which the merge hands on as a slice) and as written (the
// value held for the row group and its encoded page); the next such row is not decoded before
// the encoder has taken the previous one (the merge holds one batch per input, the encoder waits
// for a batch it may hold alone). Measured: TestSkewedRowsWithinPool.
const RowCopies = 4

// rowOverhead is what the writing of an output holds besides copies of its largest row: small
// batches of the other inputs, the collector, page buffers of the other columns.
const rowOverhead = 32 << 20

// RowMemory estimates the bytes of the memory pool the writing of an output needs when its
// largest row has rowBytes uncompressed bytes (plan.Input.MaxRowBytes): RowCopies copies of the
// row and rowOverhead. ReadSort refuses a topic whose row needs more than the pool (CheckRows).
func RowMemory(rowBytes int64) int64 {
	return RowCopies*max(rowBytes, 0) + rowOverhead
}

// OutputMemory estimates the bytes WriteOutput (WriteRollup for a concatenate plan) holds while
// writing output o of p: PassThroughMemory when the output is to pass through, CopyMemory when it
// is to be written by the copy path, else RewriteMemory. An output that cannot pass through after
// all is written otherwise once Inputs.Reserve has grown its reservation to CopyMemory or
// RewriteMemory, and one the copy path cannot write after all (parquetio.ErrNotCopyable) is
// rewritten once it has grown it to RewriteMemory.
func OutputMemory(p *plan.Plan, o plan.Output) int64 {
	if passes(p, o) {
		return PassThroughMemory(p, o)
	}
	return writeMemory(p, o)
}

// writeMemory is OutputMemory of an output that does not pass through: CopyMemory or
// RewriteMemory.
func writeMemory(p *plan.Plan, o plan.Output) int64 {
	if copyPath(p, o) {
		return CopyMemory(p, o)
	}
	return RewriteMemory(p, o)
}

// RewriteMemory estimates the bytes the rewrite holds while writing output o of p: for each of the
// at most o.MaxOpen inputs open at once (the largest needs), its object (when read whole), two
// decoded batches and page buffers (a whole unsorted input is held three times: batches,
// concatenation, sorted copy); on the output side the collector's batch, the batches in flight
// to the encoder (inFlightBatches of the plan's batch bytes), the row group the writer holds
// until it is complete (parquetio.Writer: as Arrow data with one encoder; with EncodeWorkers > 1
// as encoded pages, at most its Arrow bytes, and the Arrow data of up to 1/parquetio.EncodeShare
// of it not encoded yet) and page buffers; or, when more, what reading the written chunk back holds once all that is
// released. A batch is at most the plan's batch bytes or one row (the input's
// MaxRowBytes), so a skewed topic's large rows count as what they are; when a row is larger than a
// batch, the estimate is at least RowMemory of the largest row.
func RewriteMemory(p *plan.Plan, o plan.Output) int64 {
	batchBytes, rowGroupBytes := p.Limits()
	batch := min(p.BatchRows*p.ArrowBytesPerRow, batchBytes)
	var needs []int64
	var widestRow int64
	for _, i := range o.Inputs {
		in := p.Inputs[i]
		bpr := in.ArrowBytes / max(in.Rows, 1)
		obj := min(in.Object(), inMemoryObject)
		inBatch := max(min(min(in.Rows, p.BatchRows)*bpr, batchBytes), in.MaxRowBytes)
		need := obj + 2*inBatch + max(min(in.SizeBytes, 4<<20), in.MaxRowBytes)
		if !in.Sorted {
			need = obj + 3*in.ArrowBytes
		}
		needs = append(needs, need)
		widestRow = max(widestRow, in.MaxRowBytes)
	}
	slices.Sort(needs)
	slices.Reverse(needs)
	var inputs int64
	for _, n := range needs[:min(max(o.MaxOpen, 1), len(needs))] {
		inputs += n
	}
	rowGroup := min(min(p.RowGroupRows, max(o.EstRows, 1))*p.ArrowBytesPerRow, rowGroupBytes) + widestRow
	outputs := batch + max(inFlightBatches*batch, widestRow) + rowGroup + widestRow
	if EncodeWorkers > 1 {
		outputs += rowGroup / parquetio.EncodeShare
	}
	need := inputs + outputs + 8<<20
	// The written chunk is read back once all of that is released (readBack), by up to
	// ReadBackWorkers readers of its own: each its object (when read whole), a decoded batch and
	// the one before it, page buffers.
	reader := readBackObject(o) + 2*max(batch, widestRow) + max(4<<20, widestRow)
	readBack := int64(ReadBackWorkers)*reader + 8<<20
	need = max(need, readBack)
	if widestRow > batchBytes {
		need = max(need, RowMemory(widestRow))
	}
	return need
}

// readBackObject is what the object of output o holds when it is read back: the whole object
// when it is small enough to be read whole (its estimated bytes with a quarter more for a worse
// compression than planned), else nothing much (it is read by ranges).
func readBackObject(o plan.Output) int64 {
	return min(max(o.EstBytes, 0)*5/4+1<<20, inMemoryObject)
}

// CopyMemory estimates the bytes writeCopy holds while writing output o of p by the copy path
// (docs/design.md#the-copy-path), which holds no decoded batches, only pages and one input row
// group's decoded columns:
//   - the inputs open at once (the one being appended and up to openAhead+1 opened ahead), each
//     its object when read whole;
//   - the row group being assembled: its copied column chunks as stored and the re-encoded
//     columns' encoded pages, together at most the row group's uncompressed bytes, which the
//     Assembler bounds by the plan's row group bytes, or an input row group when that is larger
//     (it is appended whole; plan.Input.MaxRowGroupBytes, or the input's whole data in plans
//     made before it was recorded);
//   - an input row group decoded: the re-encoded columns and timestamp_ns, with the
//     timestamps' concatenation, at most twice the row group's Arrow bytes (its share of the
//     input's, by its uncompressed bytes against the input's stored ones, an overestimate);
//   - page and encoder buffers;
//
// or, when more, what reading the written chunk back holds once all that is released (readBack,
// one reader): its object (when read whole), a row group's copied column chunks (the copy digest
// reads those that follow each other at once, up to 4 MiB), a row group's decoded re-encoded column or timestamps and their
// concatenation, page buffers.
func CopyMemory(p *plan.Plan, o plan.Output) int64 {
	_, rowGroupBytes := p.Limits()
	var objects []int64
	var widestGroup, decoded int64
	for _, i := range o.Inputs {
		in := p.Inputs[i]
		objects = append(objects, min(in.Object(), inMemoryObject))
		data := max(in.SizeBytes-in.FooterBytes, 1)
		group := in.MaxRowGroupBytes
		if group <= 0 {
			group = max(data, in.ArrowBytes)
		}
		widestGroup = max(widestGroup, group)
		decoded = max(decoded, min(in.ArrowBytes, group*max(in.ArrowBytes, 0)/data))
	}
	slices.Sort(objects)
	slices.Reverse(objects)
	var inputs int64
	for _, n := range objects[:min(openAhead+2, len(objects))] {
		inputs += n
	}
	rowGroup := max(rowGroupBytes, widestGroup)
	assemble := inputs + rowGroup + 2*decoded + 8<<20
	readBack := readBackObject(o) + 3*rowGroup + 4<<20
	return max(assemble, readBack)
}

// maxArrayBytes is the most data one Arrow binary or string array can hold: its offsets are
// int32.
const maxArrayBytes = math.MaxInt32

// RowTooLargeError refuses a topic one of whose rows cannot be optimized within the memory pool
// (or cannot be held by an Arrow array at all): retrying cannot help, a larger pool can.
type RowTooLargeError struct {
	// RowBytes is the row's uncompressed size or its upper bound (plan.Input.MaxRowBytes), bytes; NeedBytes
	// RowCopies times it, PoolBytes the pool (0: unlimited).
	RowBytes, NeedBytes, PoolBytes int64
}

func (e *RowTooLargeError) Error() string {
	if e.RowBytes > maxArrayBytes {
		return fmt.Sprintf("a row of %s (uncompressed, from the footer%s) is larger than an Arrow binary array can hold (2 GiB)",
			mib(e.RowBytes), rowSource)
	}
	return fmt.Sprintf("a row of %s (uncompressed, from the footer%s) needs about %s of the memory pool to be rewritten "+
		"(%d copies of the row), more than the worker's pool of %s (STOREOPT_MEMORY_POOL_SIZE): "+
		"a worker with a larger pool can optimize the topic",
		mib(e.RowBytes), rowSource, mib(e.NeedBytes), RowCopies, mib(e.PoolBytes))
}

// rowSource says where a row size comes from: a row group's footer, or, for a row group that
// may hide large rows, the largest page of a byte-array column (a bound of its values).
const rowSource = ", or at most the largest data page holding it when the footer's average may hide it"

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// CheckRows refuses a plan with a row that a pool of poolBytes (0: unlimited) cannot rewrite:
// RowCopies copies of it exceed the pool (the pool's overhead beyond them may then be exceeded
// by up to rowOverhead while that row is written, with nothing else reserved), or it exceeds
// what an Arrow array holds. The error is a
// *ChunkError (an input fault) naming the first chunk that holds the largest such row and
// wrapping a *RowTooLargeError.
func CheckRows(p *plan.Plan, poolBytes int64) error {
	worst := -1
	for i, in := range p.Inputs {
		if worst < 0 || in.MaxRowBytes > p.Inputs[worst].MaxRowBytes {
			worst = i
		}
	}
	if worst < 0 {
		return nil
	}
	in := p.Inputs[worst]
	need := RowCopies * in.MaxRowBytes
	if in.MaxRowBytes > maxArrayBytes || (poolBytes > 0 && need > poolBytes) {
		return &ChunkError{Key: in.ObjectKey, Err: &RowTooLargeError{RowBytes: in.MaxRowBytes, NeedBytes: need, PoolBytes: poolBytes}}
	}
	return nil
}
