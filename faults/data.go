package faults

// Points at which the data path corrupts its own output, to prove that verification catches it
// (action "on": STOREOPT_FAULTS="output.drop-row=on*1"). They are checked with Triggered.
const (
	// OutputDropRow drops the first row of a batch after it was digested as read.
	OutputDropRow = "output.drop-row"
	// OutputChangeValue replaces the first row's value of the last column (or, when that is
	// timestamp_ns, the first) by the second row's, after the batch was digested as read.
	OutputChangeValue = "output.change-value"
	// OutputAlterMetadata writes an output chunk with one field metadata entry altered.
	OutputAlterMetadata = "output.alter-metadata"
)
