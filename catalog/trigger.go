package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/policy"
)

// Trigger says which topics a run queues: those that need a compaction of Policy (one named SQL
// predicate per policy, the policy value's Trigger over the facts below, used by EnqueueTopics
// and NeedsCompaction alike), inside Scope, not quarantined.
type Trigger struct {
	Policy policy.Policy
	// MinChunks is the L0 chunk count at which a topic is queued (OceanBase's
	// minor_compact_trigger); 0 = policy.DefaultMinChunks. Full ignores it.
	MinChunks int
	// MaxChunkSizeBytes is the target size of one output chunk, bytes; 0 = 256000000.
	MaxChunkSizeBytes int64
	Scope             policy.Scope
}

func (tr Trigger) normalized() (Trigger, error) {
	if tr.Policy == "" {
		tr.Policy = policy.Full
	}
	if _, err := policy.Parse(string(tr.Policy)); err != nil {
		return tr, fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	if tr.MinChunks <= 0 {
		tr.MinChunks = policy.DefaultMinChunks
	}
	if tr.MaxChunkSizeBytes <= 0 {
		tr.MaxChunkSizeBytes = policy.DefaultMaxChunkSizeBytes
	}
	return tr, nil
}

// SQL facts of the topic aliased t, with the trigger's parameters in the row aliased p
// (triggerParams).
const (
	l0Count = `(SELECT count(*) FROM chunks c WHERE c.topic_id = t.id AND c.level = 0)`
	l0Bytes = `(SELECT coalesce(sum(c.size_bytes), 0) FROM chunks c WHERE c.topic_id = t.id AND c.level = 0)`
	// joinable: a small L0 chunk that is not already a tiered output (its blocks name sources).
	joinable    = `(c.size_bytes < p.small AND coalesce(c.blocks -> 0 ->> 'source', '') = '')`
	smallPairL0 = `EXISTS (SELECT 1 FROM (
		SELECT ` + joinable + ` AS small, lag(` + joinable + `) OVER (ORDER BY c.ordinal) AS prev_small
		FROM chunks c WHERE c.topic_id = t.id AND c.level = 0) s WHERE s.small AND s.prev_small)`
	finalized = `t.finalized_at IS NOT NULL`
)

// facts are the SQL facts of the topic aliased t that the policies build their triggers from.
var facts = policy.TriggerSQL{
	L0Count:     l0Count,
	L0Bytes:     l0Bytes,
	AnyL0:       `EXISTS (SELECT 1 FROM chunks c WHERE c.topic_id = t.id AND c.level = 0)`,
	SmallPairL0: smallPairL0,
	Finalized:   finalized,
	Unoptimized: `t.optimized_at IS NULL`,
	MinChunks:   `p.min_chunks`,
	MaxSize:     `p.max_size`,
}

// needs returns the predicate of policy p (known: normalized) over the topic aliased t.
func needs(p policy.Policy) string {
	c, _ := policy.Of(p)
	return c.Trigger(facts)
}

// resolved returns an SQL expression naming the policy a compaction of p (known: normalized)
// applies to the topic aliased t (Auto's choice of Tiered or Leveled).
func resolved(p policy.Policy) string {
	c, _ := policy.Of(p)
	return c.Applies(facts)
}

// inScope returns the SQL condition that the topic aliased t is inside the scope given as the
// text[] parameters seqs (sequence locators) and topics (topic locators); both empty = all.
func inScope(seqs, topics string) string {
	return `((cardinality(` + seqs + `::text[]) = 0 AND cardinality(` + topics + `::text[]) = 0)
		OR t.locator = ANY(` + topics + `::text[])
		OR EXISTS (SELECT 1 FROM sequences sq WHERE sq.id = t.sequence_id AND sq.locator = ANY(` + seqs + `::text[])))`
}

// triggerParams is the FROM item that names the trigger's parameters $1 (MinChunks), $2 (small
// chunk bytes) and $3 (MaxChunkSizeBytes) for the predicates.
const triggerParams = `(SELECT $1::int AS min_chunks, $2::bigint AS small, $3::bigint AS max_size) p`

func scopeSequences(s policy.Scope) []string { return nonNil(s.Sequences) }
func scopeTopics(s policy.Scope) []string    { return nonNil(s.Topics) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const notQuarantined = `NOT EXISTS (SELECT 1 FROM topic_failures f WHERE f.topic_id = t.id AND f.quarantined_at IS NOT NULL)`

// EnqueueTopics queues every topic that needs a compaction of tr.Policy, is inside tr.Scope and
// is not quarantined, recording the policy on the queue row (a queued but unleased topic takes the
// newer run's policy), and returns how many topics it newly queued. Errors: ErrInvalid for an
// unknown policy.
func (c *Catalog) EnqueueTopics(ctx context.Context, tr Trigger) (added int, err error) {
	if tr, err = tr.normalized(); err != nil {
		return 0, fmt.Errorf("catalog: enqueue topics: %w", err)
	}
	params := []any{tr.MinChunks, policy.SmallChunkBytes(tr.MaxChunkSizeBytes), tr.MaxChunkSizeBytes}
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		if tr.Policy != policy.Full { // full has no L0 count trigger
			if err := recordTriggerMinChunks(ctx, tx, tr.MinChunks); err != nil {
				return err
			}
		}
		rows, _ := tx.Query(ctx, `
			INSERT INTO optimization_queue (topic_id, policy, debt_l0_chunks)
			SELECT t.id, $4, `+l0Count+` FROM topics t CROSS JOIN `+triggerParams+`
			WHERE `+needs(tr.Policy)+` AND `+inScope("$5", "$6")+` AND `+notQuarantined+`
			ORDER BY t.id
			ON CONFLICT (topic_id) DO UPDATE SET policy = EXCLUDED.policy, debt_l0_chunks = EXCLUDED.debt_l0_chunks
				WHERE optimization_queue.lease_owner IS NULL AND (optimization_queue.policy <> EXCLUDED.policy
					OR optimization_queue.debt_l0_chunks <> EXCLUDED.debt_l0_chunks)
			RETURNING topic_id, xmax = 0`,
			append(params, string(tr.Policy), scopeSequences(tr.Scope), scopeTopics(tr.Scope))...)
		var ids []int64
		var id int64
		var inserted bool
		if _, err := pgx.ForEachRow(rows, []any{&id, &inserted}, func() error {
			if inserted {
				ids = append(ids, id)
			}
			return nil
		}); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		// The INSERT decided from its snapshot: an optimization that committed while it ran
		// (deleting its queue row) left its topic looking unoptimized, and the topic was queued
		// again. Checked once more with a snapshot taken after the insert, such a row is dropped,
		// so that no run optimizes the topic a second time.
		tag, err := tx.Exec(ctx, `
			DELETE FROM optimization_queue q USING topics t CROSS JOIN `+triggerParams+`
			WHERE q.topic_id = t.id AND q.topic_id = ANY($4) AND NOT `+needs(tr.Policy),
			append(params, ids)...)
		if err != nil {
			return err
		}
		added = len(ids) - int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("catalog: enqueue topics for %s compaction: %w", tr.Policy, err)
	}
	return added, nil
}

// NeedsCompaction evaluates tr's predicate for one topic (its scope is ignored) and returns the
// policy a compaction applies to it now (Auto resolved to Tiered or Leveled) and whether the
// topic needs one. Errors: ErrNotFound for an unknown topic, ErrInvalid for an unknown policy.
func (c *Catalog) NeedsCompaction(ctx context.Context, topicID int64, tr Trigger) (policy.Policy, bool, error) {
	tr, err := tr.normalized()
	if err != nil {
		return "", false, fmt.Errorf("catalog: topic %d: %w", topicID, err)
	}
	var p string
	var need bool
	err = c.Pool.QueryRow(ctx, `SELECT `+resolved(tr.Policy)+`, `+needs(tr.Policy)+` FROM topics t CROSS JOIN `+triggerParams+` WHERE t.id = $4`,
		tr.MinChunks, policy.SmallChunkBytes(tr.MaxChunkSizeBytes), tr.MaxChunkSizeBytes, topicID).Scan(&p, &need)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("catalog: topic %d: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return "", false, fmt.Errorf("catalog: does topic %d need %s compaction: %w", topicID, tr.Policy, err)
	}
	return policy.Policy(p), need, nil
}

// ResolvePolicy returns what p means for the topic now: p itself, or for Auto, Leveled when the
// topic is finalized or its L0 bytes reach maxChunkSizeBytes (0 = default), Tiered otherwise.
func (c *Catalog) ResolvePolicy(ctx context.Context, topicID int64, p policy.Policy, maxChunkSizeBytes int64) (policy.Policy, error) {
	res, _, err := c.NeedsCompaction(ctx, topicID, Trigger{Policy: p, MaxChunkSizeBytes: maxChunkSizeBytes})
	return res, err
}

// leasableTopic returns the topic if a compaction of policy p may lease it: it exists and, for a
// policy of finalized topics only ("" and Full), is finalized. Errors wrap ErrNotFound and say which.
func (c *Catalog) leasableTopic(ctx context.Context, q querier, topicID int64, p policy.Policy) (Topic, error) {
	if pc, ok := policy.Of(p); p == "" || ok && pc.FinalizedOnly() {
		return c.finalizedTopic(ctx, q, topicID)
	}
	return topicRow(ctx, q, topicID)
}

// LevelCounts are a topic's chunks and bytes per level.
type LevelCounts struct {
	L0Chunks, L1Chunks int
	L0Bytes, L1Bytes   int64
}

// Levels returns the chunk counts and bytes per level of every topic, keyed by topic ID.
func (c *Catalog) Levels(ctx context.Context) (map[int64]LevelCounts, error) {
	rows, _ := c.Pool.Query(ctx, `
		SELECT topic_id,
			count(*) FILTER (WHERE level = 0), count(*) FILTER (WHERE level = 1),
			coalesce(sum(size_bytes) FILTER (WHERE level = 0), 0), coalesce(sum(size_bytes) FILTER (WHERE level = 1), 0)
		FROM chunks GROUP BY topic_id`)
	out := map[int64]LevelCounts{}
	var id int64
	var lc LevelCounts
	_, err := pgx.ForEachRow(rows, []any{&id, &lc.L0Chunks, &lc.L1Chunks, &lc.L0Bytes, &lc.L1Bytes}, func() error {
		out[id] = lc
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: chunk levels: %w", err)
	}
	return out, nil
}

// NeedingTopic is a topic that a run of a trigger would queue (TopicsNeedingCompaction).
type NeedingTopic struct {
	TopicID int64
	Locator string
	// Policy is the policy a compaction applies to it now (Auto resolved).
	Policy policy.Policy
}

// TopicsNeedingCompaction returns, in topic ID order after afterTopicID, at most limit topics
// that EnqueueTopics(tr) would queue (tr's predicate, inside its scope, not quarantined), with
// the policy each one's compaction applies, without queueing anything: what a dry run plans.
// Errors: ErrInvalid for an unknown policy or a limit that is not positive.
func (c *Catalog) TopicsNeedingCompaction(ctx context.Context, tr Trigger, afterTopicID int64, limit int) ([]NeedingTopic, error) {
	tr, err := tr.normalized()
	if err == nil && limit <= 0 {
		err = fmt.Errorf("limit %d must be positive: %w", limit, ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: topics needing compaction: %w", err)
	}
	rows, _ := c.Pool.Query(ctx, `
		SELECT t.id, t.locator, `+resolved(tr.Policy)+` FROM topics t CROSS JOIN `+triggerParams+`
		WHERE t.id > $4 AND `+needs(tr.Policy)+` AND `+inScope("$5", "$6")+` AND `+notQuarantined+`
		ORDER BY t.id LIMIT $7`,
		tr.MinChunks, policy.SmallChunkBytes(tr.MaxChunkSizeBytes), tr.MaxChunkSizeBytes, afterTopicID,
		scopeSequences(tr.Scope), scopeTopics(tr.Scope), limit)
	topics, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NeedingTopic])
	if err != nil {
		return nil, fmt.Errorf("catalog: topics needing %s compaction after %d: %w", tr.Policy, afterTopicID, err)
	}
	return topics, nil
}
