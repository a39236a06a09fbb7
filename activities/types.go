package activities

// Inputs and results of the activities. One struct per activity so fields can be added without
// breaking running histories. Nothing here grows with the size of a topic
// (docs/design.md#payloads-stay-small): the plan and the staged output stats live in PostgreSQL and
// are found by topic ID and run ID.

// Error types of non-retryable application errors (docs/design.md#errors-are-typed). Workflows list
// them in retry policies; tests match on them.
const (
	// ErrTypeInput: the topic's data is bad (corrupt or missing chunk, schema mismatch, no or
	// wrong timestamp column, no chunks). Retrying cannot help.
	ErrTypeInput = "StoreoptInputError"
	// ErrTypeVerification: the output does not match the input; nothing was switched.
	ErrTypeVerification = "StoreoptVerificationError"
	// ErrTypeLeaseLost: another run holds the topic now; this run must stop writing.
	ErrTypeLeaseLost = "StoreoptLeaseLostError"
	// ErrTypeChunkSetChanged: the topic's chunks changed between plan and commit.
	ErrTypeChunkSetChanged = "StoreoptChunkSetChangedError"
	// ErrTypeNotFound: the topic does not exist or is not finalized.
	ErrTypeNotFound = "StoreoptNotFoundError"
	// ErrTypeInternal: a goroutine of the activity panicked (a bug of storeopt, recovered by
	// package panics so that the worker keeps running); the stack is in the worker log. A panic
	// on given input almost always recurs, so it is not retried.
	ErrTypeInternal = "StoreoptInternalError"
	// ErrTypeStore: the object store refuses the work in a way no retry can fix (a read-only
	// filesystem, permission denied, a rename across filesystems, a missing bucket: see
	// store.FaultOf), or holds none of the topic's objects (the worker's store URL is not the
	// one the topic was ingested into). The message names the store URL (redacted) and says what
	// to change; the details are one StoreFault. Never counts toward quarantine: the topic is
	// not at fault.
	ErrTypeStore = "StoreoptStoreError"
)

// NonRetryableErrorTypes lists every error type above, for RetryPolicy.NonRetryableErrorTypes.
var NonRetryableErrorTypes = []string{
	ErrTypeInput, ErrTypeVerification, ErrTypeLeaseLost, ErrTypeChunkSetChanged, ErrTypeNotFound,
	ErrTypeInternal, ErrTypeStore,
}

// StoreFault is the detail of an ErrTypeStore error: which store refused, and why, in words
// that are the same for every topic the fault hits (no object keys), so that a run can tell
// that all its topics fail the same way.
type StoreFault struct {
	Store string // the store URL, redacted
	Cause string // e.g. "read-only file system"
}

// EnqueueTopicsInput is the input of EnqueueTopics: which topics the run queues (catalog.Trigger).
// Zero values: policy full, trigger policy.DefaultMinChunks, chunk size 256000000, scope all.
type EnqueueTopicsInput struct {
	Policy            string
	MinChunks         int
	MaxChunkSizeBytes int64
	// Scope are scope terms ("all", "sequence:NAME", "topic:LOCATOR"; none = all).
	Scope []string
}

// EnqueueTopicsResult says how many topics were newly queued and how many are queued in all,
// and which topics are quarantined (not queued).
type EnqueueTopicsResult struct {
	Added  int
	Queued int
	// Quarantined counts the quarantined topics inside Scope; QuarantinedTopics lists the first
	// MaxReportedQuarantined of them in topic ID order.
	Quarantined       int
	QuarantinedTopics []QuarantinedTopic
	// ForRun and ForRunBytes are what the run will list (ListQueuedTopics with its policy and
	// scope, quarantined topics left out): the topics and the sum of their QueuedTopic.Bytes.
	ForRun      int
	ForRunBytes int64
	// Debt is the catalog's compaction debt once the topics were queued (nil in histories
	// recorded before it existed).
	Debt *Debt `json:",omitempty"`
}

// Debt is the compaction debt of the whole catalog (catalog.DebtTotals) as a run reports it:
// sums and extremes over the topics, never a list of them.
type Debt struct {
	Topics            int
	L0Chunks, L0Bytes int64
	// UncompactedChunks are L0 chunks no compaction has joined yet; the oldest was ingested
	// OldestUncompactedSeconds ago.
	UncompactedChunks        int64
	OldestUncompactedSeconds float64
	MaxTopicL0Chunks         int
	// TopicsOverTrigger have at least TriggerMinChunks L0 chunks.
	TopicsOverTrigger, TriggerMinChunks int
	// DelayedTopics and StoppedTopics are the topics whose writers the write signal asks to
	// delay and to stop.
	DelayedTopics, StoppedTopics int
	// IngestedBytes and CompactionWrittenBytes are what ingestion and committed compactions
	// wrote, ever; WriteAmplification the second over the first.
	IngestedBytes, CompactionWrittenBytes int64
	WriteAmplification                    float64
}

// ListQueuedTopicsInput asks for one page of the queue, in topic ID order, after AfterTopicID:
// the topics queued with Policy ("" = any) inside Scope (none = all).
type ListQueuedTopicsInput struct {
	AfterTopicID int64
	Limit        int // at most 1000
	Policy       string
	Scope        []string
	// DebtFirst lists the page in order of debt instead (catalog.ListQueuedByDebt), after the
	// topic AfterTopicID whose QueuedTopic.Debt was AfterDebt.
	DebtFirst bool `json:",omitempty"`
	AfterDebt int  `json:",omitempty"`
}

// QueuedTopic is one queued topic.
type QueuedTopic struct {
	TopicID int64
	Locator string
	// Bytes estimates the input bytes of the topic's compaction (catalog.QueuedTopic.Bytes); 0
	// in histories recorded before it existed.
	Bytes int64
	// Debt is the topic's L0 chunks when it was queued (catalog.QueuedTopic.Debt); 0 in
	// histories recorded before it existed.
	Debt int `json:",omitempty"`
}

// ListQueuedTopicsResult is one page of the queue.
type ListQueuedTopicsResult struct {
	Topics []QueuedTopic
}

// LeaseInput is the input of Lease. The owner (workflow ID) and fencing token (run ID) are taken
// from the activity's own workflow execution, not from the input.
type LeaseInput struct {
	TopicID int64
	// Policy of the compaction ("" = full); auto is resolved to tiered or leveled for the topic
	// (LeaseResult.Policy). MinChunks and MaxChunkSizeBytes are the run's trigger (see
	// catalog.Trigger), used with SkipIfOptimized.
	Policy            string
	MinChunks         int
	MaxChunkSizeBytes int64
	// SkipIfOptimized: when the topic no longer needs a compaction of Policy (another run did
	// it after this run listed it), take no lease and return AlreadyOptimized; when it is
	// quarantined (another run's failure quarantined it after this run listed it), take no
	// lease and return Quarantined. The lease itself then never queues the topic again: one that
	// is no longer queued when its queue row is locked (committed or released by another run
	// since the checks) is AlreadyOptimized too.
	SkipIfOptimized bool
}

// LeaseResult is the lease taken.
type LeaseResult struct {
	// AlreadyOptimized: nothing to do (see LeaseInput.SkipIfOptimized); no lease was taken.
	AlreadyOptimized bool
	// Quarantined is set, and no lease taken, when the topic is quarantined (see
	// LeaseInput.SkipIfOptimized).
	Quarantined *QuarantinedTopic
	Locator     string
	OldPrefix   string
	FreshPrefix string
	// Policy is the policy the compaction applies (auto resolved; "" in old histories = full).
	Policy string
	// Leased is true, and no lease taken, when another run that is still open holds the topic's
	// lease (Holder): the topic is skipped (docs/design.md#one-optimization-per-topic).
	Leased bool         `json:",omitempty"`
	Holder *LeaseHolder `json:",omitempty"`
}

// LeaseHolder is the workflow run that holds a topic's lease: owner and fencing token.
type LeaseHolder struct {
	WorkflowID string
	RunID      string
}

// ReadSortInput is the input of ReadSort.
type ReadSortInput struct {
	TopicID           int64
	MaxChunkSizeBytes int64 // soft limit of one output chunk, bytes; 0 = 256000000
	// GroupTargetChunks is the number of output chunks per WriteChunks activity; 0 = automatic
	// (one per activity, at most plan.MaxGroups activities).
	GroupTargetChunks int
	// Policy is the lease's policy (resolved; "" = full).
	Policy string
	// DryRun plans with the write switched off (a dry run, PlanTopics): the topic is planned as
	// it is, without a lease, and the plan is not stored.
	DryRun bool `json:",omitempty"`
}

// ReadSortResult summarizes the plan stored in the catalog.
type ReadSortResult struct {
	InputChunks  int
	InputRows    int64
	InputBytes   int64
	OutputChunks int
	// PassThroughChunks counts the output chunks the plan marks PassThrough: input chunks to be
	// kept as they are (docs/design.md#the-pass-through-path).
	PassThroughChunks int `json:",omitempty"`
	Groups            int // number of WriteChunks activities to run, groups 0..Groups-1
	// FooterValuesKept describes the footer pairs whose values differ between the topic's
	// chunks (per-file values: a pandas index range, a GeoParquet bounding box): the outputs
	// keep the first chunk's value, the others are dropped and listed here (at most 16 keys).
	FooterValuesKept []string `json:",omitempty"`
	// NothingToDo is true when the policy selects no chunk (nothing to join or merge): no plan
	// was stored and Groups is 0.
	NothingToDo bool
	// OutputBytes is the plan's estimate of the bytes written.
	OutputBytes int64
	// InputArrowBytes is the inputs' uncompressed Arrow size (what a dry run's estimate reads).
	InputArrowBytes int64 `json:",omitempty"`
}

// WriteChunksInput names one output group of the stored plan.
type WriteChunksInput struct {
	TopicID int64
	Group   int
}

// WriteChunksResult summarizes the chunks written and staged.
type WriteChunksResult struct {
	Chunks int
	Rows   int64
	Bytes  int64
	// WrittenChunks and WrittenArrowBytes count the output chunks this call wrote (outputs staged
	// by an earlier attempt are counted in Chunks only) and their rows' Arrow bytes;
	// CopiedChunks and CopiedArrowBytes those of them written by the copy path
	// (compaction.OutputResult.Copied), PassedChunks and PassedArrowBytes those kept by the
	// pass-through path (compaction.OutputResult.PassedThrough).
	WrittenChunks     int
	WrittenArrowBytes int64
	CopiedChunks      int
	CopiedArrowBytes  int64
	PassedChunks      int
	PassedArrowBytes  int64
}

// CommitInput is the input of Commit.
type CommitInput struct {
	TopicID int64
}

// CommitResult says what Commit did.
type CommitResult struct {
	AlreadyCommitted bool
	OldPrefix        string
	NewPrefix        string
	InputChunks      int
	OutputChunks     int
	Rows             int64
	InputBytes       int64
	OutputBytes      int64
	// Policy is the policy the commit applied (auto resolved), for the metrics; "" in histories
	// from before it and in a retried commit's AlreadyCommitted answer.
	Policy string `json:",omitempty"`
}

// ReleaseInput is the input of Release.
type ReleaseInput struct {
	TopicID int64
	Reason  string
	// ErrorType and Error are the type and message of the activity error that failed the
	// optimization ("" after a cancellation or a failure that is not an activity error). A
	// failure of one of QuarantineErrorTypes counts toward the topic's quarantine.
	ErrorType string
	Error     string
	// Policy is the compaction's policy (auto resolved once leased; "" = full), Canceled tells a
	// cancellation from a failure, NothingToDo a lease given back because the policy selected no
	// chunk: for metrics only ("" and false in histories from before them).
	Policy      string
	Canceled    bool
	NothingToDo bool
}

// ReleaseResult says whether the lease was still ours and what was deleted, and where the topic's
// failure streak stands (Failures 0 when the failure did not count toward quarantine).
type ReleaseResult struct {
	Released       bool
	DeletedObjects int
	Failures       int
	Quarantined    bool
}
