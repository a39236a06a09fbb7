package faults

// Points at which the data path corrupts its own output, to prove that verification catches it
// (action "on": STOREOPT_FAULTS="output.drop-row=on*1"). They are checked with Triggered.
const (
	// OutputDropRow drops the first row of a batch after it was digested as read.
	OutputDropRow = "output.drop-row"
	// OutputChangeValue replaces the first row's value of the last column (or, when that is
	// timestamp_ns, the first) by the second row's, after the batch was digested as read.
	OutputChangeValue = "output.change-value"
	// OutputAlterMetadata writes an output chunk whose footer has one key/value pair more.
	OutputAlterMetadata = "output.alter-metadata"
	// EncodeChangeValue flips the lowest bit of the first value of a row group's first
	// fixed-width column (other than timestamp_ns) with a valid first value, inside the Parquet
	// writer, on its way from the Arrow array to the column encoder: after every digest and
	// statistic of the rows handed to the writer, as an encoder fault would.
	EncodeChangeValue = "encode.change-value"
	// CopyChangePage flips the last bit of the first page of the first copied column (other
	// than timestamp_ns) of an assembled chunk, on its way to the store: after the digest of
	// the pages taken from the inputs, as a fault of the copy path would.
	CopyChangePage = "copy.change-page"
	// PassChangeByte flips the lowest bit of the middle byte of a chunk the pass-through path
	// copied, in the store, after the copy and before either was read back: as a store that
	// damaged the copy would.
	PassChangeByte = "pass.change-byte"
)

// Points at which the merge moves a key range's bound by one row in one input chunk, before any
// digest is taken, so that the per-output checks all agree: an off-by-one at a range boundary
// that only the check of every input row's positions catches (action "on", checked with
// TriggeredOn on the input's chunk ID; each hit that acts logs the chunk ID).
const (
	// MergeDuplicateRow: one output also takes the row just before its range from one input
	// chunk (which the previous output takes too): that chunk's rows are taken n+1 times.
	MergeDuplicateRow = "merge.duplicate-boundary-row"
	// MergeSkipRow: one output leaves out the last row of its range from one input chunk, which
	// no output takes then; never the chunk a MergeDuplicateRow hit acted on, so that both
	// together take one row twice and another of another chunk not at all (total rows right).
	MergeSkipRow = "merge.skip-boundary-row"
	// MergeShiftRange: one output takes its range one row early from one input chunk: the row
	// before the range twice, the range's last row by no output; the chunk's row count and
	// every total stay right.
	MergeShiftRange = "merge.shift-boundary"
)

// PlanDropInput: read-sort leaves one selected input chunk (the middle one) out of the merge plan
// it computes (inputs and totals; full and leveled policies), while the commit still replaces
// it: a planning fault that every check taken from the plan agrees with (action "on", checked
// with TriggeredOn on the chunk ID).
const PlanDropInput = "plan.drop-input"
