// Package activities binds storeopt's data path (plan, merge, Parquet I/O, verification) to the
// catalog, the object store and Temporal heartbeats. Activities are methods on Activities; the
// workflows call them through a typed nil pointer.
package activities

import (
	"context"
	"errors"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
)

// Activities holds the clients every activity uses.
type Activities struct {
	Catalog *catalog.Catalog
	Bucket  *blob.Bucket
	// MemoryPoolBytes caps the memory all activities of this worker use together, bytes
	// (STOREOPT_MEMORY_POOL_SIZE); 0 = unlimited.
	MemoryPoolBytes int64
}

var errTODO = errors.New("not implemented yet")

// EnqueueTopics rescans the catalog and queues every finalized topic that needs optimizing.
func (a *Activities) EnqueueTopics(ctx context.Context, in EnqueueTopicsInput) (EnqueueTopicsResult, error) {
	return EnqueueTopicsResult{}, errTODO
}

// ListQueuedTopics returns one page of the optimization queue in topic ID order.
func (a *Activities) ListQueuedTopics(ctx context.Context, in ListQueuedTopicsInput) (ListQueuedTopicsResult, error) {
	return ListQueuedTopicsResult{}, errTODO
}

// Lease takes the topic's queue row for this workflow run and picks a fresh data prefix.
func (a *Activities) Lease(ctx context.Context, in LeaseInput) (LeaseResult, error) {
	return LeaseResult{}, errTODO
}

// ReadSort reads every input chunk's footer and timestamps, validates the schemas and stores the plan.
func (a *Activities) ReadSort(ctx context.Context, in ReadSortInput) (ReadSortResult, error) {
	return ReadSortResult{}, errTODO
}

// WriteChunks writes one output group of the stored plan and stages its chunk stats.
func (a *Activities) WriteChunks(ctx context.Context, in WriteChunksInput) (WriteChunksResult, error) {
	return WriteChunksResult{}, errTODO
}

// Commit verifies the staged output against the plan and switches the topic atomically.
func (a *Activities) Commit(ctx context.Context, in CommitInput) (CommitResult, error) {
	return CommitResult{}, errTODO
}

// Release drops the lease if it is still ours and deletes this run's partial output.
func (a *Activities) Release(ctx context.Context, in ReleaseInput) (ReleaseResult, error) {
	return ReleaseResult{}, errTODO
}
