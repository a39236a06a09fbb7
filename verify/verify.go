package verify

import (
	"bytes"
	"fmt"
)

// MismatchError says that the output of an optimization differs from its input; What names the
// first difference found. Nothing may be switched after it.
type MismatchError struct{ What string }

func (e *MismatchError) Error() string { return "verification failed: " + e.What }

func mismatch(format string, args ...any) error {
	return &MismatchError{What: fmt.Sprintf(format, args...)}
}

// OutputFacts are the facts of one written output chunk that Check compares with the plan.
type OutputFacts struct {
	Ordinal        int
	Key            string // the chunk's object key, for messages
	Rows           int64
	TimestampNulls int64
	MinTs, MaxTs   *int64 // nil when the chunk has no non-null timestamp
	// Read is the digest of the input rows merged into the chunk, Written of the rows decoded
	// back from the chunk as stored.
	Read, Written Digest
	// Taken is which stored rows of which input chunks the chunk took.
	Taken Taken
	// Footer identifies the chunk's footer as read back after writing (parquetio.Footer.Digest).
	Footer []byte
}

// Expected are the facts of all input rows (from the plan).
type Expected struct {
	Outputs        int
	Rows           int64
	TimestampNulls int64
	MinTs, MaxTs   *int64
	// Inputs are the input chunks the optimization replaces, as the catalog holds them (not as
	// the plan lists them); their rows must add up to Rows.
	Inputs []InputChunk
	// Footer identifies the footer every output must repeat: the inputs' (parquetio.Footer.Digest).
	Footer []byte
	// Unordered: the outputs are a rollup's L0 chunks, which may overlap each other in time;
	// otherwise they form (a part of) the sorted run and must be globally ordered.
	// Before and After, when set, bound the outputs' timestamps by the kept L1 chunks around them (leveled compaction): no output timestamp
	// before Before or after After; AfterRows says kept chunks follow, AfterHasNonNull that one
	// of them has a non-null timestamp (the outputs may then hold no null timestamp).
	Unordered       bool
	Before, After   *int64
	AfterRows       bool
	AfterHasNonNull bool
}

// Check compares the outputs of an optimization with its inputs: one output per planned chunk in
// ordinal order; total rows, null timestamps and min/max timestamp equal to the inputs'; each
// output's read and written digests equal (no row lost, duplicated or changed between decoding
// and encoding); chunks globally ordered (each chunk's timestamps not before the previous
// chunk's, null timestamps only at the end); and, independently of how the plan and the merge
// routed rows to outputs, every row of every input chunk the optimization replaces (want.Inputs,
// from the catalog) taken by exactly one output (each output's Taken adds up to its rows; the
// Taken of all outputs add up, per input chunk, to its rows 0..n-1: a row routed to two outputs
// and another to none, or a chunk the plan left out, is caught here, though every count above
// still agrees); each output's footer (Parquet schema elements and key/value
// pairs) equal to the inputs'. Returns a *MismatchError naming the first difference (for
// input rows: the input chunks' object keys with the rows they hold and the rows taken).
func Check(want Expected, outs []OutputFacts) error {
	if len(outs) != want.Outputs {
		return mismatch("%d output chunks staged, %d planned", len(outs), want.Outputs)
	}
	for i, o := range outs {
		if o.Ordinal != i {
			return mismatch("output chunk %d missing (found ordinal %d in its place)", i, o.Ordinal)
		}
		if o.Read.Rows != o.Rows || o.Written.Rows != o.Rows {
			return mismatch("output chunk %d: %d rows, but %d read and %d encoded", i, o.Rows, o.Read.Rows, o.Written.Rows)
		}
		if !bytes.Equal(o.Footer, want.Footer) || len(want.Footer) == 0 {
			return mismatch("output chunk %d: footer %x differs from the inputs' footer %x (Parquet schema elements and key/value pairs must be kept verbatim)", i, o.Footer, want.Footer)
		}
		if o.Read != o.Written {
			return mismatch("output chunk %d (%s): content digest of the rows read %s differs from the rows decoded from the stored chunk %s",
				i, o.Key, o.Read, o.Written)
		}
		if n := o.Taken.Rows(); n != o.Rows {
			return mismatch("output chunk %d: %d rows, but %d taken from its input chunks", i, o.Rows, n)
		}
	}
	// Which input rows went where comes before the order of the outputs and the totals: a row
	// routed to the wrong output usually breaks the order too, a chunk left out of the plan its
	// totals, and this names the input chunk.
	if err := checkTaken(want.Inputs, outs); err != nil {
		return err
	}
	var inputRows int64
	for _, in := range want.Inputs {
		inputRows += in.Rows
	}
	if inputRows != want.Rows {
		return mismatch("the %d input chunks hold %d rows, the plan's totals say %d", len(want.Inputs), inputRows, want.Rows)
	}
	var rows, nulls int64
	var minTs, maxTs *int64
	seenNull := false
	for i, o := range outs {
		if !want.Unordered {
			if err := checkOrder(want, o, i, seenNull, maxTs); err != nil {
				return err
			}
		}
		if o.MinTs != nil {
			if minTs == nil {
				minTs = o.MinTs
			}
			maxTs = o.MaxTs
		}
		seenNull = seenNull || o.TimestampNulls > 0
		rows += o.Rows
		nulls += o.TimestampNulls
	}
	if rows != want.Rows {
		return mismatch("%d rows written, %d in the input chunks", rows, want.Rows)
	}
	if nulls != want.TimestampNulls {
		return mismatch("%d null timestamps written, %d in the input chunks", nulls, want.TimestampNulls)
	}
	if !equalPtr(minTs, want.MinTs) || !equalPtr(maxTs, want.MaxTs) {
		return mismatch("timestamp range written [%s, %s], input [%s, %s]", fmtPtr(minTs), fmtPtr(maxTs), fmtPtr(want.MinTs), fmtPtr(want.MaxTs))
	}
	return nil
}

// checkOrder checks that output o (number i) continues the sorted run: after the previous
// outputs (whose largest timestamp is maxTs, seenNull when one had null timestamps) and between
// the kept chunks around the outputs.
func checkOrder(want Expected, o OutputFacts, i int, seenNull bool, maxTs *int64) error {
	switch {
	case seenNull && o.Rows != o.TimestampNulls:
		return mismatch("output chunk %d has non-null timestamps after a chunk with null timestamps", i)
	case o.MinTs != nil && maxTs != nil && *o.MinTs < *maxTs:
		return mismatch("output chunk %d starts at %d, before the previous chunk's last timestamp %d", i, *o.MinTs, *maxTs)
	case o.MinTs != nil && want.Before != nil && *o.MinTs < *want.Before:
		return mismatch("output chunk %d starts at %d, before the kept chunk before it ends (%d)", i, *o.MinTs, *want.Before)
	case o.MaxTs != nil && want.After != nil && *o.MaxTs > *want.After:
		return mismatch("output chunk %d ends at %d, after the kept chunk after it starts (%d)", i, *o.MaxTs, *want.After)
	case o.TimestampNulls > 0 && want.AfterHasNonNull:
		return mismatch("output chunk %d has null timestamps before a kept chunk with timestamps", i)
	}
	return nil
}

func equalPtr(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func fmtPtr(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}
