// Package faults injects failures at named points of the activities and of the object store, for
// the fault tests only. It is inert unless the binary is built with the tag storeopt_faults AND
// the environment variable STOREOPT_FAULTS names the point; a production build compiles Hit to a
// no-op and has no fault store.
//
// STOREOPT_FAULTS is a ";"-separated list of "point=action[@N][*count]": action is "fail" (a
// retryable error), "hang" (block until the activity's context ends), "kill" (SIGKILL the worker
// process, as a crash would), "exit" (os.Exit(3)), "panic" (panic in the goroutine that hits the
// point: a bug) or "sleep:DURATION" (wait DURATION, a time.ParseDuration string, or until the
// context ends, then go on: a slow step); count limits
// how many hits act (default: every hit). "point=action@N[*count]" lets the first N-1 hits pass
// and acts from the Nth on. Example:
// STOREOPT_FAULTS="write-chunks.after-object=kill;store.read=fail*3;write-chunks.encode=kill@40".
//
// Every hit that acts writes one line "storeopt-faults: <point>=<action>" to stderr before acting,
// so a test can tell that its fault was reached.
//
// The store points act through the fault store: with the tag, a store URL
// "faultfile:///abs/dir" (StoreScheme) opens the file:// store at /abs/dir wrapped so that every
// read (attributes, list, opening a reader) hits StoreRead and every write (committing an upload,
// copy, delete) hits StoreWrite; lists also hit StoreList and deletes StoreDelete (the deletion
// of a partial output). A failing hit returns an error from the store call itself, as an
// unreachable store would.
package faults

// Points at which activities (and the fault store) call Hit.
const (
	LeaseAfter             = "lease.after"
	ReadSortStart          = "read-sort.start"
	ReadSortBeforeSave     = "read-sort.before-save"
	WriteChunksBeforeWrite = "write-chunks.before-object"
	WriteChunksAfterWrite  = "write-chunks.after-object"
	WriteChunksAfterStage  = "write-chunks.after-stage"
	CommitBeforeTx         = "commit.before-tx"
	CommitAfterTx          = "commit.after-tx"
	ReleaseBefore          = "release.before"
	// StoreRead is hit by every read of the fault store (StoreScheme).
	StoreRead = "store.read"
	// StoreWrite is hit by every write of the fault store (StoreScheme).
	StoreWrite = "store.write"
	// StoreList is hit by every list request of the fault store (after StoreRead).
	StoreList = "store.list"
	// StoreDelete is hit by every delete of the fault store (after StoreWrite).
	StoreDelete = "store.delete"
)

// Points inside the goroutines that activities start (package panics recovers them), for the
// tests that panic in each kind of goroutine ("panic" action). They are not in Points.
const (
	// ReadSortScan is hit in a goroutine of ReadSort's parallel scan, before it scans a chunk
	// (chunk 0 is scanned by the activity's own goroutine and does not hit it).
	ReadSortScan = "read-sort.scan"
	// WriteChunksMerge is hit in WriteChunks' reader and merger goroutine, before the merge (on
	// the copy path, before the output's inputs are opened).
	WriteChunksMerge = "write-chunks.merge"
	// WriteChunksEncode is hit in WriteChunks' encoder goroutine, before each batch it encodes
	// (on the copy path, before each input row group it appends).
	WriteChunksEncode = "write-chunks.encode"
)

// GoroutinePoints lists the points inside goroutines that activities start.
var GoroutinePoints = []string{ReadSortScan, WriteChunksMerge, WriteChunksEncode}

// WriteChunksUploading is hit each time another MiB of an output chunk has been handed to the
// store's writer, while its upload (an S3 multipart upload, for outputs over one part) is
// under way. It is not in Points: the fault suite's outputs are smaller than a MiB. A sleep
// here slows the upload down so that a test can kill the worker in its middle.
const WriteChunksUploading = "write-chunks.uploading"

// BatchTopicStart is hit by OptimizeSmallTopics before each topic of a batch. Its error fails the
// batch for good (a non-retryable error), as a batch whose attempts are all spent would fail, so
// that a test sees what a batch failing as a whole leaves. It is not in Points: only runs with
// batches of tiny topics reach it.
const BatchTopicStart = "batch.topic-start"

// Points lists every point, for suites that try each one.
var Points = []string{LeaseAfter, ReadSortStart, ReadSortBeforeSave, WriteChunksBeforeWrite,
	WriteChunksAfterWrite, WriteChunksAfterStage, CommitBeforeTx, CommitAfterTx, ReleaseBefore,
	StoreRead, StoreWrite, StoreList, StoreDelete}

// EnvVar is the environment variable read by builds with the storeopt_faults tag.
const EnvVar = "STOREOPT_FAULTS"

// StoreScheme is the URL scheme of the fault store, registered in gocloud.dev/blob's default URL
// mux by builds with the storeopt_faults tag: "faultfile:///abs/dir" is "file:///abs/dir" with
// the StoreRead and StoreWrite points.
const StoreScheme = "faultfile"

// LogPrefix starts the stderr line written by every hit that acts.
const LogPrefix = "storeopt-faults: "
