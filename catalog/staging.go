package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
)

// SavePlan stores the plan of the run p.FencingToken for topic p.TopicID, replacing the run's
// previous plan. If the stored plan differs (body, fresh prefix, chunk set version or inputs),
// the run's staged chunks are deleted: they were written for the old plan. p.FreshPrefix must be
// the lease's fresh prefix. Errors: ErrLeaseLost if the run no longer holds the topic's lease;
// ErrInvalid for an empty body, a foreign fresh prefix or non-UTF-8 strings.
func (c *Catalog) SavePlan(ctx context.Context, p PlanRecord) error {
	what := fmt.Sprintf("catalog: save plan of topic %d for run %q", p.TopicID, p.FencingToken)
	if err := checkNonEmptyText("fresh prefix", p.FreshPrefix); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(p.Body) == 0 {
		return fmt.Errorf("%s: empty plan body: %w", what, ErrInvalid)
	}
	inputs := p.InputChunkIDs
	if inputs == nil {
		inputs = []int64{}
	}
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		lease, err := checkLease(ctx, tx, p.TopicID, p.FencingToken, false)
		if err != nil {
			return err
		}
		if lease.freshPrefix != p.FreshPrefix {
			return fmt.Errorf("plan fresh prefix %q is not the lease's %q: %w", p.FreshPrefix, lease.freshPrefix, ErrInvalid)
		}
		old, err := loadPlan(ctx, tx, p.TopicID, p.FencingToken, true)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return err
		case !samePlan(old, p):
			if _, err := tx.Exec(ctx, `DELETE FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2`,
				p.TopicID, p.FencingToken); err != nil {
				return fmt.Errorf("delete chunks staged for the previous plan: %w", err)
			}
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO plans (topic_id, fencing_token, fresh_prefix, chunk_set_version, input_chunk_ids, body)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (topic_id, fencing_token) DO UPDATE SET
				fresh_prefix = EXCLUDED.fresh_prefix, chunk_set_version = EXCLUDED.chunk_set_version,
				input_chunk_ids = EXCLUDED.input_chunk_ids, body = EXCLUDED.body, created_at = now()`,
			p.TopicID, p.FencingToken, p.FreshPrefix, p.ChunkSetVersion, inputs, p.Body)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func samePlan(a, b PlanRecord) bool {
	return a.FreshPrefix == b.FreshPrefix && a.ChunkSetVersion == b.ChunkSetVersion &&
		slices.Equal(a.InputChunkIDs, b.InputChunkIDs) && bytes.Equal(a.Body, b.Body)
}

// LoadPlan returns the plan the run fencingToken saved for the topic. Errors: ErrNotFound.
func (c *Catalog) LoadPlan(ctx context.Context, topicID int64, fencingToken string) (PlanRecord, error) {
	var p PlanRecord
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		p, err = loadPlan(ctx, tx, topicID, fencingToken, false)
		return err
	})
	if err != nil {
		return PlanRecord{}, fmt.Errorf("catalog: %w", err)
	}
	return p, nil
}

func loadPlan(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string, forUpdate bool) (PlanRecord, error) {
	const selectPlan = `SELECT topic_id, fencing_token, fresh_prefix, chunk_set_version, input_chunk_ids, body
		FROM plans WHERE topic_id = $1 AND fencing_token = $2`
	query := selectPlan
	if forUpdate {
		query = selectPlan + " FOR UPDATE"
	}
	rows, _ := tx.Query(ctx, query, topicID, fencingToken)
	p, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[PlanRecord])
	if errors.Is(err, pgx.ErrNoRows) {
		return PlanRecord{}, fmt.Errorf("topic %d: no plan saved by run %q: %w", topicID, fencingToken, ErrNotFound)
	}
	if err != nil {
		return PlanRecord{}, fmt.Errorf("topic %d: load plan of run %q: %w", topicID, fencingToken, err)
	}
	return p, nil
}

// StageChunk records an output chunk written by the run fencingToken for topic s.TopicID,
// replacing what was staged at the same (output) ordinal (a retried write); s.TargetOrdinal and
// s.Level say where Commit puts it. The run must have saved its
// plan first. Errors: ErrLeaseLost if the run no longer holds the lease; ErrNotFound if it has no
// plan; ErrInvalid for an empty digest or bad fields.
func (c *Catalog) StageChunk(ctx context.Context, fencingToken string, s StagedChunk) error {
	what := fmt.Sprintf("topic %d: run %q: staged chunk %d (%q)", s.TopicID, fencingToken, s.Ordinal, s.ObjectKey)
	args, err := chunkArgs(what, s.Chunk)
	if err != nil {
		return err
	}
	if len(s.Digest) == 0 {
		return fmt.Errorf("catalog: %s: empty digest: %w", what, ErrInvalid)
	}
	taken := s.Taken
	if taken == nil {
		taken = []byte{}
	}
	if t := s.TargetOrdinal; t != nil && (*t < 0 || *t > math.MaxInt32) {
		return fmt.Errorf("catalog: %s: target ordinal %d out of range: %w", what, *t, ErrInvalid)
	}
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := checkLease(ctx, tx, s.TopicID, fencingToken, false); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO staged_chunks (`+chunkFields+`, fencing_token, digest, taken, target_ordinal)
			VALUES (`+chunkFieldParams+`, $14, $15, $16, $17)
			ON CONFLICT (topic_id, fencing_token, ordinal) DO UPDATE SET
				object_key = EXCLUDED.object_key, size_bytes = EXCLUDED.size_bytes, row_count = EXCLUDED.row_count,
				arrow_size_bytes = EXCLUDED.arrow_size_bytes, min_timestamp_ns = EXCLUDED.min_timestamp_ns,
				max_timestamp_ns = EXCLUDED.max_timestamp_ns, timestamp_null_count = EXCLUDED.timestamp_null_count,
				column_stats = EXCLUDED.column_stats, level = EXCLUDED.level, blocks = EXCLUDED.blocks,
				footer_bytes = EXCLUDED.footer_bytes,
				digest = EXCLUDED.digest, taken = EXCLUDED.taken, target_ordinal = EXCLUDED.target_ordinal`,
			append(args, fencingToken, s.Digest, taken, s.TargetOrdinal)...)
		if pgErrorCode(err) == sqlstateForeignKeyViolation {
			return fmt.Errorf("no plan saved by this run: %w", ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("catalog: stage %s: %w", what, err)
	}
	return nil
}

// StagedChunks returns the chunks the run fencingToken staged for the topic, ordered by ordinal.
func (c *Catalog) StagedChunks(ctx context.Context, topicID int64, fencingToken string) ([]StagedChunk, error) {
	return stagedChunksOf(ctx, c.Pool, topicID, fencingToken)
}

func stagedChunksOf(ctx context.Context, q querier, topicID int64, fencingToken string) ([]StagedChunk, error) {
	rows, _ := q.Query(ctx, `SELECT `+chunkFields+`, target_ordinal, digest, taken FROM staged_chunks
		WHERE topic_id = $1 AND fencing_token = $2 ORDER BY ordinal`, topicID, fencingToken)
	staged, err := pgx.CollectRows(rows, scanStagedChunk)
	if err != nil {
		return nil, fmt.Errorf("catalog: topic %d: staged chunks of run %q: %w", topicID, fencingToken, err)
	}
	return staged, nil
}
