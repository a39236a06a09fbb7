// Package metrics is storeopt's Prometheus instrumentation: Observe, the one seam metrics are
// recorded at (Interceptor calls it around every activity the worker executes), which reports
// step durations, topic outcomes and cleanup deletions to a Recorder (Nop when metrics are off),
// and the Registry that serves storeopt's own metrics (named storeopt_…), the store's byte
// counters, the memory pool's gauges, Go runtime and process metrics and the Temporal SDK's
// metrics (through go.temporal.io/sdk/contrib/tally and tally's Prometheus reporter) on one
// /metrics endpoint.
//
// Metrics are recorded around the worker's activities only, never by workflow code: workflows do
// no I/O and are replayed, so a workflow-side counter would count again on every replay.
package metrics

import "time"

// Steps of an optimization whose durations storeopt_step_duration_seconds records (label step).
const (
	StepLease       = "lease"
	StepReadSort    = "read-sort"
	StepWriteChunks = "write-chunks"
	StepCommit      = "commit"
)

// Steps lists the step label values in data-path order.
var Steps = []string{StepLease, StepReadSort, StepWriteChunks, StepCommit}

// ActivitySteps maps the activity type names of the data path (the methods of
// activities.Activities, registered under their method names) to their step label.
var ActivitySteps = map[string]string{
	"Lease":       StepLease,
	"ReadSort":    StepReadSort,
	"WriteChunks": StepWriteChunks,
	"Commit":      StepCommit,
}

// Outcomes of a step (label outcome of storeopt_step_duration_seconds).
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// Reasons a topic is skipped (label reason of storeopt_topics_skipped_total).
const (
	// SkipAlreadyOptimized: another run optimized the topic after this run listed it (Lease).
	SkipAlreadyOptimized = "already_optimized"
	// SkipQuarantined: another run's failure quarantined the topic after this run listed it
	// (Lease).
	SkipQuarantined = "quarantined"
	// SkipNothingToDo: the policy selected no chunk; the lease was given back (Release).
	SkipNothingToDo = "nothing_to_do"
	// SkipLeased: another run that is still open holds the topic's lease (Lease).
	SkipLeased = "leased"
)

// SkipReasons lists the reason label values.
var SkipReasons = []string{SkipAlreadyOptimized, SkipQuarantined, SkipNothingToDo, SkipLeased}

// Error types of storeopt_topics_failed_total (label error_type) that are not the type of a
// storeopt activity error (activities.ErrType*, which are used as they are).
const (
	// ErrorCanceled: the optimization was canceled (its run was canceled or terminated).
	ErrorCanceled = "canceled"
	// ErrorOther: any other failure: retryable errors after the last attempt, timeouts.
	ErrorOther = "other"
)

// What cleanup deletes (label kind of storeopt_cleanup_deleted_total and
// storeopt_cleanup_failed_total).
const (
	CleanupPrefixes        = "prefixes"         // unreferenced tp_<ULID>/ prefixes deleted whole
	CleanupObjects         = "objects"          // objects of those prefixes
	CleanupTempFiles       = "temp_files"       // temporary files of killed file:// writes
	CleanupAbortedUploads  = "aborted_uploads"  // unfinished S3 multipart uploads aborted
	CleanupReplacedObjects = "replaced_objects" // objects of chunks replaced by compactions of live topics
)

// CleanupKinds lists the kind label values.
var CleanupKinds = []string{CleanupPrefixes, CleanupObjects, CleanupTempFiles, CleanupAbortedUploads, CleanupReplacedObjects}

// Optimization is what one committed optimization of a topic did.
type Optimization struct {
	Policy       string // policy applied (auto resolved): full, tiered or leveled
	InputChunks  int    // chunks replaced
	OutputChunks int    // chunks written
	Rows         int64  // rows rewritten (the same in inputs and outputs)
	InputBytes   int64  // object bytes of the input chunks
	OutputBytes  int64  // object bytes of the output chunks
}

// Recorder receives what the activities know about topics, steps and cleanup. Implementations
// are safe for concurrent use and cheap: they are called once per topic, step or cleanup
// activity, never per row or batch.
type Recorder interface {
	// TopicOptimized records a committed optimization (not a retried commit that found its
	// own earlier success).
	TopicOptimized(o Optimization)
	// TopicFailed records an optimization that failed or was canceled; errorType is the
	// storeopt error type (activities.ErrType*), ErrorCanceled or ErrorOther.
	TopicFailed(policy, errorType string)
	// TopicSkipped records a topic a run left alone; reason is one of SkipReasons.
	TopicSkipped(policy, reason string)
	// TopicQuarantined records a topic that this failure quarantined.
	TopicQuarantined(policy string)
	// StepFinished records one execution (attempt) of a step: its duration and whether it
	// returned an error.
	StepFinished(step string, d time.Duration, err error)
	// CleanupDone records what one cleanup activity deleted and failed to delete, by kind
	// (one of CleanupKinds).
	CleanupDone(kind string, deleted, failed int)
	// ChunksWritten records output chunks written (and verified) by one write-chunks step, by
	// path (one of WritePaths), and the Arrow bytes of their rows.
	ChunksWritten(path string, chunks int, arrowBytes int64)
}

// Paths by which an output chunk is written (docs/design.md#the-copy-path,
// docs/design.md#the-pass-through-path).
const (
	PathRewrite     = "rewrite"
	PathCopy        = "copy"
	PathPassThrough = "pass-through"
)

// WritePaths are the values of the path label.
var WritePaths = []string{PathRewrite, PathCopy, PathPassThrough}

// Nop is the Recorder of a worker without metrics: every method does nothing.
type Nop struct{}

func (Nop) TopicOptimized(Optimization)               {}
func (Nop) TopicFailed(string, string)                {}
func (Nop) TopicSkipped(string, string)               {}
func (Nop) TopicQuarantined(string)                   {}
func (Nop) StepFinished(string, time.Duration, error) {}
func (Nop) CleanupDone(string, int, int)              {}
func (Nop) ChunksWritten(string, int, int64)          {}
