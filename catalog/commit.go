package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Commit switches the topic to the output of the run fencingToken, in one transaction:
//
//  1. if the run already committed, it returns that commit's result with AlreadyCommitted set
//     and changes nothing;
//  2. the topic's queue row must be held by the run, else ErrLeaseLost;
//  3. the topic's chunk_set_version and chunk IDs (ordinal order) must be the plan's
//     ChunkSetVersion and InputChunkIDs, else ErrChunkSetChanged; no plan is ErrNotFound;
//  4. verify(plan, staged) is called inside the transaction with the staged chunks in ordinal
//     order; its error aborts the commit and is returned wrapped (errors.As works);
//  5. the topic's chunk rows are replaced by the staged chunks (same ordinals, new IDs), its
//     data_prefix becomes the plan's fresh prefix, optimized_at now, min/max timestamp_ns those
//     of the new chunks, and chunk_set_version is bumped;
//  6. the optimization is recorded (Optimizations);
//  7. the queue row, the plan and the staged chunks are deleted.
//
// On any error nothing is changed. verify must not be nil.
func (c *Catalog) Commit(ctx context.Context, topicID int64, fencingToken string,
	verify func(plan PlanRecord, staged []StagedChunk) error) (CommitResult, error) {
	if verify == nil {
		return CommitResult{}, fmt.Errorf("catalog: commit topic %d: nil verify function: %w", topicID, ErrInvalid)
	}
	var res CommitResult
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		var done bool
		var err error
		if res, done, err = committed(ctx, tx, topicID, fencingToken); err != nil || done {
			return err
		}
		lease, err := checkLease(ctx, tx, topicID, fencingToken, true)
		if err != nil {
			// A concurrent Commit of the same run may have won while we waited for the row lock.
			var again error
			if res, done, again = committed(ctx, tx, topicID, fencingToken); again == nil && done {
				return nil
			}
			return err
		}
		res, err = switchTopic(ctx, tx, topicID, fencingToken, lease, verify)
		return err
	})
	if err != nil {
		return CommitResult{}, fmt.Errorf("catalog: commit topic %d for run %q: %w", topicID, fencingToken, err)
	}
	return res, nil
}

// committed returns the result of the run's earlier commit, if there was one.
func committed(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string) (CommitResult, bool, error) {
	res := CommitResult{AlreadyCommitted: true}
	err := tx.QueryRow(ctx, `SELECT old_prefix, new_prefix, input_chunks, output_chunks FROM optimizations
		WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken).
		Scan(&res.OldPrefix, &res.NewPrefix, &res.InputChunks, &res.OutputChunks)
	if errors.Is(err, pgx.ErrNoRows) {
		return CommitResult{}, false, nil
	}
	if err != nil {
		return CommitResult{}, false, fmt.Errorf("topic %d: look up earlier commit: %w", topicID, err)
	}
	return res, true, nil
}

// switchTopic does steps 3 to 7 of Commit; the caller holds the queue row lock.
func switchTopic(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string, lease queueRow,
	verify func(PlanRecord, []StagedChunk) error) (CommitResult, error) {
	var version int64
	var oldPrefix string
	err := tx.QueryRow(ctx, `SELECT chunk_set_version, data_prefix FROM topics WHERE id = $1 FOR UPDATE`, topicID).
		Scan(&version, &oldPrefix)
	if errors.Is(err, pgx.ErrNoRows) {
		return CommitResult{}, fmt.Errorf("topic %d: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return CommitResult{}, fmt.Errorf("topic %d: lock topic: %w", topicID, err)
	}
	plan, err := loadPlan(ctx, tx, topicID, fencingToken, false)
	if err != nil {
		return CommitResult{}, err
	}
	if version != plan.ChunkSetVersion {
		return CommitResult{}, fmt.Errorf("topic %d: chunk set version is %d, plan was made at %d: %w",
			topicID, version, plan.ChunkSetVersion, ErrChunkSetChanged)
	}
	current, err := chunksOf(ctx, tx, topicID)
	if err != nil {
		return CommitResult{}, err
	}
	ids := make([]int64, len(current))
	for i, ch := range current {
		ids[i] = ch.ID
	}
	if !slices.Equal(ids, plan.InputChunkIDs) {
		return CommitResult{}, fmt.Errorf("topic %d: %d chunks now, plan read %d (chunk IDs differ): %w",
			topicID, len(ids), len(plan.InputChunkIDs), ErrChunkSetChanged)
	}
	staged, err := stagedChunksOf(ctx, tx, topicID, fencingToken)
	if err != nil {
		return CommitResult{}, err
	}
	if err := verify(plan, staged); err != nil {
		return CommitResult{}, fmt.Errorf("topic %d: verify: %w", topicID, err)
	}

	// The queue row lock keeps StageChunk (FOR SHARE) out, so staged_chunks is what verify saw.
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"delete old chunk rows", `DELETE FROM chunks WHERE topic_id = $1`, []any{topicID}},
		{"insert new chunk rows", `INSERT INTO chunks (` + chunkFields + `) SELECT ` + chunkFields +
			` FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2 ORDER BY ordinal`, []any{topicID, fencingToken}},
		{"switch prefix", `
			UPDATE topics t SET data_prefix = $2, optimized_at = now(),
				min_timestamp_ns = b.min_ts, max_timestamp_ns = b.max_ts,
				chunk_set_version = t.chunk_set_version + 1
			FROM (SELECT min(min_timestamp_ns) AS min_ts, max(max_timestamp_ns) AS max_ts
			      FROM chunks WHERE topic_id = $1) b
			WHERE t.id = $1`, []any{topicID, plan.FreshPrefix}},
		{"record optimization", `
			INSERT INTO optimizations (topic_id, fencing_token, lease_owner, old_prefix, new_prefix, input_chunks, output_chunks)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			[]any{topicID, fencingToken, lease.owner, oldPrefix, plan.FreshPrefix, len(current), len(staged)}},
	}
	for _, s := range steps {
		if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
			return CommitResult{}, fmt.Errorf("topic %d: %s: %w", topicID, s.what, err)
		}
	}
	if err := deleteRunState(ctx, tx, topicID, fencingToken); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{OldPrefix: oldPrefix, NewPrefix: plan.FreshPrefix, InputChunks: len(current), OutputChunks: len(staged)}, nil
}

// Optimizations returns the committed optimizations of a topic, oldest first.
func (c *Catalog) Optimizations(ctx context.Context, topicID int64) ([]Optimization, error) {
	rows, _ := c.Pool.Query(ctx, `
		SELECT topic_id, fencing_token, lease_owner, old_prefix, new_prefix, input_chunks, output_chunks, committed_at
		FROM optimizations WHERE topic_id = $1 ORDER BY committed_at, id`, topicID)
	opts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Optimization])
	if err != nil {
		return nil, fmt.Errorf("catalog: optimizations of topic %d: %w", topicID, err)
	}
	return opts, nil
}
