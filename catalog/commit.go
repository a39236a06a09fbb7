package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/policy"
)

// CommitSpec says how a commit changes the topic's chunk set; the activity derives it from the
// run's plan, as CommitPlan reads it inside its transaction (PlanSpec).
type CommitSpec struct {
	// Policy is the policy the plan applied (resolved: not Auto); it is recorded.
	Policy policy.Policy
	// ReplaceAll: the plan read every chunk of the topic (Full). The chunk set must still be
	// exactly the plan's inputs, and the topic switches to the run's fresh prefix. Otherwise the
	// commit replaces exactly the plan's inputs, each of which must still be there; chunks added
	// since the plan stay as they are, and the topic keeps its data prefix.
	ReplaceAll bool
	// L1ShiftFrom and L1ShiftBy renumber the sorted run (Leveled): once the inputs are deleted,
	// every L1 chunk with ordinal >= L1ShiftFrom moves by L1ShiftBy, making room for the outputs'
	// target ordinals.
	L1ShiftFrom int
	L1ShiftBy   int
}

// PlanSpec derives the CommitSpec of a commit from the run's plan, as CommitPlan reads it inside
// its transaction, so that a plan replaced or dropped meanwhile is never committed with the
// spec of another; its error aborts the commit.
type PlanSpec func(plan PlanRecord) (CommitSpec, error)

// Always returns the PlanSpec that gives s whatever the plan says, for callers that made the
// plan themselves (tests of the catalog).
func Always(s CommitSpec) PlanSpec {
	return func(PlanRecord) (CommitSpec, error) { return s, nil }
}

// Commit is CommitPlan for a Full plan: the topic's whole chunk set is replaced.
func (c *Catalog) Commit(ctx context.Context, topicID int64, fencingToken string,
	verify func(plan PlanRecord, staged []StagedChunk) error) (CommitResult, error) {
	return c.CommitPlan(ctx, topicID, fencingToken, Always(CommitSpec{Policy: policy.Full, ReplaceAll: true}), verify)
}

// CommitPlan switches the topic to the output of the run fencingToken, in one transaction:
//
//  1. if the run already committed, it returns that commit's result with AlreadyCommitted set
//     and changes nothing;
//  2. the topic's queue row must be held by the run, else ErrLeaseLost;
//  3. the run's plan is read (no plan is ErrNotFound: there is no default) and spec(plan) says
//     how the chunk set changes (its error aborts the commit, returned wrapped);
//     every input chunk of the plan must still be there (with spec.ReplaceAll: the topic's
//     chunk_set_version and chunk IDs in catalog order must be exactly the plan's
//     ChunkSetVersion and InputChunkIDs), else ErrChunkSetChanged;
//  4. verify(plan, staged) is called inside the transaction with the staged chunks in output
//     ordinal order; its error aborts the commit and is returned wrapped (errors.As works);
//  5. the input chunk rows are deleted (their object keys recorded for cleanup unless
//     spec.ReplaceAll: then their prefixes go whole), L1 ordinals
//     shifted as spec says, and the staged chunks inserted at their target ordinal, at level L0
//     for a Tiered plan and L1 otherwise;
//     the topic's optimized_at becomes now, its min/max timestamp_ns those of its chunks, its
//     chunk_set_version is bumped, and with spec.ReplaceAll its data prefix becomes the plan's
//     fresh prefix;
//  6. the optimization is recorded (Optimizations);
//  7. the queue row, the plan and the staged chunks are deleted.
//
// The topic row is locked FOR NO KEY UPDATE, which does not block AddChunk: appends go on during
// a commit. On any error nothing is changed. verify must not be nil.
func (c *Catalog) CommitPlan(ctx context.Context, topicID int64, fencingToken string, spec PlanSpec,
	verify func(plan PlanRecord, staged []StagedChunk) error) (CommitResult, error) {
	if verify == nil || spec == nil {
		return CommitResult{}, fmt.Errorf("catalog: commit topic %d: nil spec or verify function: %w", topicID, ErrInvalid)
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
		res, err = switchTopic(ctx, tx, topicID, fencingToken, lease, spec, verify)
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
	var pol string
	err := tx.QueryRow(ctx, `SELECT old_prefix, new_prefix, input_chunks, output_chunks, policy FROM optimizations
		WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken).
		Scan(&res.OldPrefix, &res.NewPrefix, &res.InputChunks, &res.OutputChunks, &pol)
	if errors.Is(err, pgx.ErrNoRows) {
		return CommitResult{}, false, nil
	}
	if err != nil {
		return CommitResult{}, false, fmt.Errorf("topic %d: look up earlier commit: %w", topicID, err)
	}
	res.Policy = policy.Policy(pol)
	return res, true, nil
}

// switchTopic does steps 3 to 7 of CommitPlan; the caller holds the queue row lock.
func switchTopic(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string, lease queueRow,
	specOf PlanSpec, verify func(PlanRecord, []StagedChunk) error) (CommitResult, error) {
	var version int64
	var oldPrefix string
	err := tx.QueryRow(ctx, `SELECT chunk_set_version, data_prefix FROM topics WHERE id = $1 FOR NO KEY UPDATE`, topicID).
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
	spec, err := specOf(plan)
	if err != nil {
		return CommitResult{}, fmt.Errorf("topic %d: plan of run %q: %w", topicID, fencingToken, err)
	}
	if !spec.Policy.Resolved() {
		return CommitResult{}, fmt.Errorf("topic %d: plan of run %q: commit policy %q is not a resolved policy: %w",
			topicID, fencingToken, spec.Policy, ErrInvalid)
	}
	if plan.Inputs, err = checkInputs(ctx, tx, topicID, plan, version, spec.ReplaceAll); err != nil {
		return CommitResult{}, err
	}
	staged, err := stagedChunksOf(ctx, tx, topicID, fencingToken)
	if err != nil {
		return CommitResult{}, err
	}
	if err := verify(plan, staged); err != nil {
		return CommitResult{}, fmt.Errorf("topic %d: verify: %w", topicID, err)
	}

	// What the optimization cost, recorded with it for the estimates of dry runs: the inputs'
	// bytes before their rows go, and the seconds since the lease.
	var inputBytes, inputArrowBytes int64
	err = tx.QueryRow(ctx, `SELECT coalesce(sum(size_bytes), 0)::bigint, coalesce(sum(arrow_size_bytes), 0)::bigint
		FROM chunks WHERE topic_id = $1 AND id = ANY($2)`, topicID, plan.InputChunkIDs).Scan(&inputBytes, &inputArrowBytes)
	if err != nil {
		return CommitResult{}, fmt.Errorf("topic %d: input bytes: %w", topicID, err)
	}

	newPrefix := oldPrefix
	if spec.ReplaceAll {
		newPrefix = plan.FreshPrefix
	}
	// The queue row lock keeps StageChunk (FOR SHARE) out, so staged_chunks is what verify saw.
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		// A full commit replaces every chunk and switches the data prefix: every prefix its
		// inputs lived in becomes unreferenced and goes whole. Otherwise the inputs' prefixes
		// may stay referenced (the ingestion prefix of a live topic): cleanup deletes the
		// replaced objects one by one.
		{"record replaced objects", `INSERT INTO replaced_objects (object_key, topic_id)
			SELECT object_key, topic_id FROM chunks WHERE topic_id = $1 AND id = ANY($2) AND NOT $3
			ON CONFLICT (object_key) DO NOTHING`, []any{topicID, plan.InputChunkIDs, spec.ReplaceAll}},
		{"delete input chunk rows", `DELETE FROM chunks WHERE topic_id = $1 AND id = ANY($2)`, []any{topicID, plan.InputChunkIDs}},
		{"shift the sorted run", `UPDATE chunks SET ordinal = ordinal + $3
			WHERE topic_id = $1 AND level = 1 AND ordinal >= $2 AND $3 <> 0`, []any{topicID, spec.L1ShiftFrom, spec.L1ShiftBy}},
		{"insert new chunk rows", `INSERT INTO chunks (` + chunkFields + `) SELECT ` + stagedAsChunk +
			` FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2 ORDER BY ordinal`,
			[]any{topicID, fencingToken, int(spec.Policy.OutputLevel())}},
		{"update topic", `
			UPDATE topics t SET data_prefix = $2, optimized_at = now(),
				min_timestamp_ns = b.min_ts, max_timestamp_ns = b.max_ts,
				chunk_set_version = t.chunk_set_version + 1
			FROM (SELECT min(min_timestamp_ns) AS min_ts, max(max_timestamp_ns) AS max_ts
			      FROM chunks WHERE topic_id = $1) b
			WHERE t.id = $1`, []any{topicID, newPrefix}},
		{"record optimization", `
			INSERT INTO optimizations (topic_id, fencing_token, lease_owner, old_prefix, new_prefix, input_chunks, output_chunks, policy,
				input_bytes, input_arrow_bytes, output_bytes, rows, seconds)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
				(SELECT coalesce(sum(size_bytes), 0) FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2),
				(SELECT coalesce(sum(row_count), 0) FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2),
				CASE WHEN $11::timestamptz IS NULL THEN NULL ELSE greatest(extract(epoch FROM now() - $11::timestamptz), 0) END`,
			[]any{topicID, fencingToken, lease.owner, oldPrefix, plan.FreshPrefix, len(plan.InputChunkIDs), len(staged), string(spec.Policy),
				inputBytes, inputArrowBytes, lease.leasedAt}},
	}
	for _, s := range steps {
		if _, err := tx.Exec(ctx, s.sql, s.args...); err != nil {
			return CommitResult{}, fmt.Errorf("topic %d: %s: %w", topicID, s.what, err)
		}
	}
	if err := deleteRunState(ctx, tx, topicID, fencingToken); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{OldPrefix: oldPrefix, NewPrefix: plan.FreshPrefix, InputChunks: len(plan.InputChunkIDs), OutputChunks: len(staged),
		Policy: spec.Policy}, nil
}

// stagedAsChunk selects chunkFields from a staged chunk as the chunk row Commit inserts: at its
// target ordinal, and at the level of the plan's outputs ($3), whatever was staged.
var stagedAsChunk = strings.NewReplacer("ordinal", "coalesce(target_ordinal, ordinal)", "level", "$3::smallint").
	Replace(chunkFields)

// checkInputs checks step 3 of CommitPlan and returns the chunk rows the commit replaces (the
// plan's InputChunkIDs as the catalog holds them, in catalog order).
func checkInputs(ctx context.Context, tx pgx.Tx, topicID int64, plan PlanRecord, version int64, replaceAll bool) ([]Chunk, error) {
	if replaceAll {
		if version != plan.ChunkSetVersion {
			return nil, fmt.Errorf("topic %d: chunk set version is %d, plan was made at %d: %w",
				topicID, version, plan.ChunkSetVersion, ErrChunkSetChanged)
		}
		current, err := chunksOf(ctx, tx, topicID)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(current))
		for i, ch := range current {
			ids[i] = ch.ID
		}
		if !slices.Equal(ids, plan.InputChunkIDs) {
			return nil, fmt.Errorf("topic %d: %d chunks now, plan read %d (chunk IDs differ): %w",
				topicID, len(ids), len(plan.InputChunkIDs), ErrChunkSetChanged)
		}
		return current, nil
	}
	rows, _ := tx.Query(ctx, `SELECT id, `+chunkFields+` FROM chunks WHERE topic_id = $1 AND id = ANY($2)
		ORDER BY level DESC, ordinal`, topicID, plan.InputChunkIDs)
	inputs, err := pgx.CollectRows(rows, scanChunk)
	if err != nil {
		return nil, fmt.Errorf("topic %d: look up input chunks: %w", topicID, err)
	}
	if len(inputs) != len(plan.InputChunkIDs) {
		return nil, fmt.Errorf("topic %d: %d of the plan's %d input chunks are still there: %w",
			topicID, len(inputs), len(plan.InputChunkIDs), ErrChunkSetChanged)
	}
	return inputs, nil
}

// Optimizations returns the committed optimizations of a topic, oldest first.
func (c *Catalog) Optimizations(ctx context.Context, topicID int64) ([]Optimization, error) {
	rows, _ := c.Pool.Query(ctx, `
		SELECT topic_id, fencing_token, lease_owner, old_prefix, new_prefix, input_chunks, output_chunks, committed_at, policy,
			input_bytes, input_arrow_bytes, output_bytes, rows, seconds
		FROM optimizations WHERE topic_id = $1 ORDER BY committed_at, id`, topicID)
	opts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Optimization])
	if err != nil {
		return nil, fmt.Errorf("catalog: optimizations of topic %d: %w", topicID, err)
	}
	return opts, nil
}

// OptimizationCost is what one committed optimization cost (its optimizations row).
type OptimizationCost struct {
	InputBytes      int64   // object bytes of the input chunks
	InputArrowBytes int64   // Arrow (uncompressed) bytes of the input chunks
	OutputBytes     int64   // object bytes of the output chunks
	Rows            int64   // rows written
	Seconds         float64 // from the lease to the commit (database clock)
}

// RecentCosts returns the costs of the last limit optimizations of policy p (resolved: never
// auto), newest first, leaving out those committed before costs were recorded.
func (c *Catalog) RecentCosts(ctx context.Context, p policy.Policy, limit int) ([]OptimizationCost, error) {
	rows, _ := c.Pool.Query(ctx, `
		SELECT input_bytes, input_arrow_bytes, output_bytes, rows, seconds FROM optimizations
		WHERE policy = $1 AND seconds IS NOT NULL AND input_arrow_bytes IS NOT NULL
		ORDER BY committed_at DESC, id DESC LIMIT $2`, string(p), limit)
	costs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[OptimizationCost])
	if err != nil {
		return nil, fmt.Errorf("catalog: recent costs of %s optimizations: %w", p, err)
	}
	return costs, nil
}
