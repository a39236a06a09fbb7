// Package catalog is storeopt's PostgreSQL catalog: sequences, topics, chunks, the optimization
// queue with its leases, plans and staged output chunks. Every query is parameterized; no SQL is
// ever built from a locator or an object key. The schema is created by versioned, embedded goose
// migrations (Migrate).
package catalog

import (
	"errors"
	"fmt"
	"time"

	"github.com/storeopt/storeopt/policy"
)

// ErrNotFound is returned when a topic, lease or plan the caller names does not exist.
var ErrNotFound = errors.New("catalog: not found")

// ErrLeaseLost is returned by lease-guarded calls (SavePlan, StageChunk, Commit) when the topic's
// queue row is gone or now belongs to another run (fencing token mismatch): a newer run took the
// topic over, so this run must not write to the catalog.
var ErrLeaseLost = errors.New("catalog: lease lost to another run")

// ErrLeased is returned by AcquireLease when another run holds the topic's lease: the error is a
// *LeasedError naming the holder. The caller takes the lease over (TakeOverLease) only once the
// holder is gone (docs/design.md#one-optimization-per-topic).
var ErrLeased = errors.New("catalog: leased by another run")

// ErrLeaseChanged is returned by TakeOverLease when the topic's queue row is no longer held by the
// run to take it over from (it committed, released, or another run took it in between): nothing
// changed; decide again from the row as it is now.
var ErrLeaseChanged = errors.New("catalog: lease changed hands")

// ErrNotQueued is returned by AcquireQueuedLease when the topic has no queue row any more: its
// optimization was committed, or released, since the caller listed it.
var ErrNotQueued = errors.New("catalog: topic no longer queued")

// LeasedError is the error (wrapping ErrLeased) of AcquireLease on a topic whose lease another run
// holds: that run's lease, read under the queue row's lock.
type LeasedError struct {
	Holder Lease
}

func (e *LeasedError) Error() string {
	return fmt.Sprintf("topic %d (%q) is leased by run %q of %q since %s: %v", e.Holder.TopicID, e.Holder.Locator,
		e.Holder.FencingToken, e.Holder.Owner, e.Holder.LeasedAt.UTC().Format(time.RFC3339), ErrLeased)
}

func (e *LeasedError) Unwrap() error { return ErrLeased }

// ErrChunkSetChanged is returned by Commit when the topic's chunk set is no longer the one the
// plan was computed from (a chunk was added, removed or replaced in between).
var ErrChunkSetChanged = errors.New("catalog: topic chunk set changed since planning")

// ErrInvalid is returned when an argument cannot be stored: an empty or non-UTF-8 locator,
// prefix or object key (PostgreSQL text refuses invalid UTF-8 and NUL bytes), a negative ordinal
// or size, a plan whose fresh prefix is not the lease's. Retrying the same call cannot succeed.
var ErrInvalid = errors.New("catalog: invalid argument")

// ErrTopicFinalized is returned by AddChunk when the topic is finalized: its chunk set only
// changes through a committed optimization from then on.
var ErrTopicFinalized = errors.New("catalog: topic is finalized")

// ErrAlreadyExists is returned by CreateTopic when the locator is taken by a topic with a
// different sequence, prefix or format, and by AddChunk when the ordinal is taken.
var ErrAlreadyExists = errors.New("catalog: already exists")

// Topic is one row of the topics table.
type Topic struct {
	ID                  int64
	SequenceID          int64
	Locator             string // "<sequence>/<topic/path>"
	DataPrefix          string // "tp_<ULID>"
	SerializationFormat string // "parquet"
	CreatedAt           time.Time
	FinalizedAt         *time.Time // nil while ingestion is still writing
	OptimizedAt         *time.Time // nil until the first committed optimization
	MinTimestampNs      *int64     // nil when the topic has no non-null timestamp
	MaxTimestampNs      *int64
	ChunkSetVersion     int64 // bumped by every change to the topic's chunk rows
}

// ColumnStats are the per-column statistics of one chunk. Min and Max are JSON-friendly values
// (int64 and float64 as numbers, strings as strings); they are nil for binary and nested columns
// and for all-null columns. NaN and ±Inf are never stored (they are skipped when computing).
type ColumnStats struct {
	Min       any   `json:"min,omitempty"`
	Max       any   `json:"max,omitempty"`
	NullCount int64 `json:"null_count"`
	// MaxValueBytes bounds the Arrow size of the column's largest value in the chunk (bytes,
	// as chunkstats counts one row, at least 1); 0 when the writer of the chunk did not record it.
	// Together over the columns they bound the chunk's largest row (chunkstats.MaxRowBytes).
	MaxValueBytes int64 `json:"max_value_bytes,omitempty"`
}

// Chunk is one row of the chunks table: one Parquet object of a topic. Catalog order is L1
// chunks first, in the order of the topic's sorted run, then L0 chunks in ingestion order
// (ORDER BY level DESC, ordinal); it is the tie-break order of rows with equal timestamps.
type Chunk struct {
	ID      int64
	TopicID int64
	// Ordinal is the chunk's place in catalog order within its level: for L0 its ingestion
	// order (never renumbered; a tiered output takes its first input's ordinal), for L1 its
	// position in the sorted run (0-based, renumbered when a commit changes the run).
	Ordinal            int
	Level              policy.Level
	ObjectKey          string // "<prefix>/data/NNNNN.parquet"
	SizeBytes          int64  // object size in the store
	RowCount           int64
	ArrowSizeBytes     int64  // uncompressed Arrow bytes of all rows
	MinTimestampNs     *int64 // nil when every timestamp is null (or no rows)
	MaxTimestampNs     *int64
	TimestampNullCount int64
	ColumnStats        map[string]ColumnStats // keyed by top-level field name
	// Blocks is the chunk's block index, one entry per row group in file order; nil when unknown
	// (chunks recorded before block indexes existed: read the footer instead).
	Blocks []Block
	// FooterBytes is the length of the chunk's footer, the last FooterBytes bytes of the object
	// (serialized file metadata and the 8-byte trailer); 0 when unknown (an ingested chunk).
	FooterBytes int64
}

// Block is one block (row group) of a chunk as the block index records it (Qbeast's block
// ranges): a reader of a time window fetches only the byte ranges of the blocks it overlaps.
type Block struct {
	// MinTs and MaxTs are the smallest and largest non-null timestamp_ns of the block, nil when
	// every timestamp is null.
	MinTs *int64 `json:"min_ts,omitempty"`
	MaxTs *int64 `json:"max_ts,omitempty"`
	// Nulls counts the rows with a null timestamp_ns.
	Nulls int64 `json:"nulls,omitempty"`
	Rows  int64 `json:"rows"`
	// Offset and Length are the byte range of the row group's column chunks in the object.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Source is the object key of the chunk the block's rows came from, for blocks of a tiered
	// (rollup) output; "" otherwise.
	Source string `json:"source,omitempty"`
	// TsIndex and OffsetIndex locate the block's page index in the object: the column index of
	// timestamp_ns (each page's min/max) and the offset indexes of all its columns (each page's
	// byte range and first row), so that a window read fetches them with the footer instead of
	// after it; nil when the block has none.
	TsIndex     *ByteRange `json:"ts_index,omitempty"`
	OffsetIndex *ByteRange `json:"offset_index,omitempty"`
}

// ByteRange is a range of bytes of an object.
type ByteRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// QueuedTopic is one entry of the optimization queue as listed by ListQueued.
type QueuedTopic struct {
	TopicID int64
	Locator string
	// Bytes estimates the input bytes of the topic's compaction (object sizes): every chunk for
	// the full policy, the L0 chunks for the others (queueBytes).
	Bytes int64
	// Debt is the topic's L0 chunk count when it was queued (ListQueuedByDebt's order).
	Debt int
}

// Lease is the queue row of a topic held by one optimization run.
type Lease struct {
	TopicID      int64
	Locator      string
	Owner        string // workflow ID of the holder
	FencingToken string // run ID of the holder
	FreshPrefix  string // "tp_<ULID>": where this run writes its output
	OldPrefix    string // the topic's current data prefix
	LeasedAt     time.Time
	// PreviousFreshPrefix is set only by the TakeOverLease call that took the lease over from
	// another run: that run's fresh prefix, read under the queue row's lock, whose partial output
	// nothing references any more.
	PreviousFreshPrefix string
}

// PlanRecord is a plan as stored in the plans table: the planner's output serialized as JSON by
// the caller (the catalog does not interpret it), plus the facts Commit checks.
type PlanRecord struct {
	TopicID         int64
	FencingToken    string // run ID that computed the plan
	FreshPrefix     string
	ChunkSetVersion int64   // topics.chunk_set_version when the plan was computed
	InputChunkIDs   []int64 // chunk IDs the plan reads, in ordinal order
	Body            []byte  // JSON plan (see package plan)
	// Inputs is set by CommitPlan before it calls verify (it is not stored): the chunk rows the
	// commit replaces, as the catalog holds them inside the commit's transaction, in catalog
	// order. They are independent of the plan's Body, so verification can check the rows of
	// every chunk the commit deletes, not only of those the plan names.
	Inputs []Chunk `db:"-"`
}

// StagedChunk is an output chunk written by WriteChunks and waiting for Commit. Chunk.Ordinal
// is the output's ordinal in the run's plan (its staging key); TargetOrdinal is the ordinal it
// takes in the topic at commit, and the plan's policy its level (CommitSpec).
type StagedChunk struct {
	Chunk // TopicID, Ordinal, ObjectKey, sizes, stats and blocks (ID and Level unused)
	// TargetOrdinal is the ordinal of the chunk row Commit inserts; nil = Chunk.Ordinal.
	TargetOrdinal *int
	Digest        []byte // order-independent content digest of the chunk's rows (package verify)
	// Taken records which stored rows of which input chunks the chunk took (package verify's
	// encoding); empty for a chunk without rows.
	Taken []byte
}

// CommitResult says what Commit did.
type CommitResult struct {
	AlreadyCommitted bool // the run had committed before: nothing was done this time
	OldPrefix        string
	NewPrefix        string
	InputChunks      int
	OutputChunks     int
	Policy           policy.Policy // the policy the commit applied (recorded with the optimization)
}

// Optimization is one committed optimization of a topic (a row of the optimizations table).
// OldPrefix is what the cleanup routine may delete once the retention period has passed.
type Optimization struct {
	TopicID      int64
	FencingToken string // run ID that committed
	LeaseOwner   string // workflow ID that committed
	OldPrefix    string // data prefix before the commit
	NewPrefix    string // data prefix after the commit
	InputChunks  int    // chunk rows replaced
	OutputChunks int    // chunk rows written
	CommittedAt  time.Time
	Policy       policy.Policy // the policy applied (resolved: never auto)
	// What it cost (see OptimizationCost); nil for optimizations committed before catalog
	// version 5 recorded it.
	InputBytes      *int64
	InputArrowBytes *int64
	OutputBytes     *int64
	Rows            *int64
	Seconds         *float64
}
