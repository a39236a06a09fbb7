package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Compaction debt is what ingestion has written that compaction has not caught up with yet: the
// L0 chunks and bytes of every topic, how long the oldest chunk nobody has compacted has waited,
// and what compaction wrote per byte ingested. The catalog computes it from its own rows
// (migration 00006: the view topic_compaction_debt, the function storeopt_write_signal); see
// docs/operations.md#compaction-debt.

// WriteThresholds are the write signal's thresholds: at DelayL0Chunks L0 chunks a topic's
// writers are asked to slow down (state "delay", a delay growing linearly up to MaxDelay), at
// StopL0Chunks to stop (state "stop"), as ClickHouse's parts_to_delay_insert and
// parts_to_throw_insert or Paimon's num-sorted-run.stop-trigger.
type WriteThresholds struct {
	DelayL0Chunks int
	StopL0Chunks  int
	MaxDelay      time.Duration
}

// DefaultWriteThresholds are the thresholds of a new catalog.
var DefaultWriteThresholds = WriteThresholds{DelayL0Chunks: 64, StopL0Chunks: 256, MaxDelay: time.Second}

// Validate returns an error naming what is wrong with th.
func (th WriteThresholds) Validate() error {
	if th.DelayL0Chunks < 1 || th.StopL0Chunks <= th.DelayL0Chunks || th.MaxDelay < 0 || th.MaxDelay > time.Hour {
		return fmt.Errorf("write signal thresholds: delay at %d L0 chunks, stop at %d, max delay %s: need 1 ≤ delay < stop and a max delay of 0 to 1h: %w",
			th.DelayL0Chunks, th.StopL0Chunks, th.MaxDelay, ErrInvalid)
	}
	return nil
}

// SetWriteThresholds stores the write signal's thresholds (the worker does at start).
func (c *Catalog) SetWriteThresholds(ctx context.Context, th WriteThresholds) error {
	if err := th.Validate(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	_, err := c.Pool.Exec(ctx, `UPDATE compaction_debt_settings SET delay_l0_chunks = $1, stop_l0_chunks = $2,
		max_delay_ms = $3, updated_at = now()`, th.DelayL0Chunks, th.StopL0Chunks, th.MaxDelay.Milliseconds())
	if err != nil {
		return fmt.Errorf("catalog: set write signal thresholds: %w", err)
	}
	return nil
}

// WriteThresholds returns the write signal's thresholds.
func (c *Catalog) WriteThresholds(ctx context.Context) (WriteThresholds, error) {
	var th WriteThresholds
	var ms int64
	err := c.Pool.QueryRow(ctx, `SELECT delay_l0_chunks, stop_l0_chunks, max_delay_ms FROM compaction_debt_settings`).
		Scan(&th.DelayL0Chunks, &th.StopL0Chunks, &ms)
	if err != nil {
		return WriteThresholds{}, fmt.Errorf("catalog: write signal thresholds: %w", err)
	}
	th.MaxDelay = time.Duration(ms) * time.Millisecond
	return th, nil
}

// recordTriggerMinChunks stores the L0 chunk count of a run's trigger, which DebtTotals counts
// the topics over.
func recordTriggerMinChunks(ctx context.Context, q querier, minChunks int) error {
	if _, err := q.Exec(ctx, `UPDATE compaction_debt_settings SET trigger_min_chunks = $1
		WHERE trigger_min_chunks <> $1`, minChunks); err != nil {
		return fmt.Errorf("record trigger: %w", err)
	}
	return nil
}

// Write states of the write signal (topic_compaction_debt.write_state).
const (
	WriteOK    = "ok"
	WriteDelay = "delay"
	WriteStop  = "stop"
)

// WriteStates lists the write states, in order of severity.
var WriteStates = []string{WriteOK, WriteDelay, WriteStop}

// WriteSignal is what storeopt_write_signal returns for one topic.
type WriteSignal struct {
	TopicID  int64
	L0Chunks int
	// State is WriteOK, WriteDelay or WriteStop.
	State string
	// Delay is how long a writer should wait before its next chunk (MaxDelay at WriteStop).
	Delay time.Duration
}

// WriteSignalOf calls storeopt_write_signal for the topic, as an ingestion service would. Errors:
// ErrNotFound for an unknown locator.
func (c *Catalog) WriteSignalOf(ctx context.Context, locator string) (WriteSignal, error) {
	var s WriteSignal
	var ms int64
	err := c.Pool.QueryRow(ctx, `SELECT topic_id, l0_chunks, write_state, delay_ms FROM storeopt_write_signal($1)`, locator).
		Scan(&s.TopicID, &s.L0Chunks, &s.State, &ms)
	if err == pgx.ErrNoRows {
		return WriteSignal{}, fmt.Errorf("catalog: write signal of %q: no such topic: %w", locator, ErrNotFound)
	}
	if err != nil {
		return WriteSignal{}, fmt.Errorf("catalog: write signal of %q: %w", locator, err)
	}
	s.Delay = time.Duration(ms) * time.Millisecond
	return s, nil
}

// DebtTotals is the compaction debt of the whole catalog: sums and extremes over its topics, no
// list that grows with them.
type DebtTotals struct {
	Topics int
	// L0Chunks and L0Bytes are waiting for a compaction into the sorted run (tiered outputs
	// included); UncompactedChunks of them are as ingestion wrote them.
	L0Chunks, L0Bytes, UncompactedChunks int64
	// MaxTopicL0Chunks is the most L0 chunks one topic has.
	MaxTopicL0Chunks int
	// TopicsOverTrigger have at least TriggerMinChunks L0 chunks (the latest run's trigger).
	TopicsOverTrigger, TriggerMinChunks int
	// TopicsByState counts the topics in each write state (WriteStates).
	TopicsByState map[string]int
	// OldestUncompactedAge is the age of the oldest uncompacted L0 chunk (0 when there is none),
	// by the database's clock.
	OldestUncompactedAge time.Duration
	// IngestedBytes is what ingestion appended, ever; CompactionWrittenBytes what committed
	// compactions wrote (their output objects), ever.
	IngestedBytes, CompactionWrittenBytes int64
}

// WriteAmplification is the bytes compactions wrote per byte ingested (0 before anything was
// ingested).
func (d DebtTotals) WriteAmplification() float64 {
	if d.IngestedBytes <= 0 {
		return 0
	}
	return float64(d.CompactionWrittenBytes) / float64(d.IngestedBytes)
}

// DebtTotals measures the compaction debt of every topic in one snapshot.
func (c *Catalog) DebtTotals(ctx context.Context) (DebtTotals, error) {
	d := DebtTotals{TopicsByState: map[string]int{}}
	var ok, delayed, stopped int
	var ageSeconds float64
	err := c.Pool.QueryRow(ctx, `
		SELECT count(*)::int, coalesce(sum(d.l0_chunks), 0)::bigint, coalesce(sum(d.l0_bytes), 0)::bigint,
			coalesce(sum(d.uncompacted_chunks), 0)::bigint, coalesce(max(d.l0_chunks), 0)::int,
			count(*) FILTER (WHERE d.l0_chunks >= s.trigger_min_chunks)::int, s.trigger_min_chunks,
			count(*) FILTER (WHERE d.write_state = 'ok')::int, count(*) FILTER (WHERE d.write_state = 'delay')::int,
			count(*) FILTER (WHERE d.write_state = 'stop')::int,
			coalesce(extract(epoch FROM now() - min(d.oldest_uncompacted_at)), 0)::float8,
			(SELECT coalesce(sum(bytes), 0)::bigint FROM topic_ingest_totals),
			(SELECT coalesce(sum(output_bytes), 0)::bigint FROM optimizations)
		FROM topic_compaction_debt d CROSS JOIN compaction_debt_settings s
		GROUP BY s.trigger_min_chunks`).Scan(
		&d.Topics, &d.L0Chunks, &d.L0Bytes, &d.UncompactedChunks, &d.MaxTopicL0Chunks,
		&d.TopicsOverTrigger, &d.TriggerMinChunks, &ok, &delayed, &stopped, &ageSeconds,
		&d.IngestedBytes, &d.CompactionWrittenBytes)
	if err == pgx.ErrNoRows { // no topic at all
		return c.emptyDebt(ctx)
	}
	if err != nil {
		return DebtTotals{}, fmt.Errorf("catalog: compaction debt: %w", err)
	}
	d.TopicsByState[WriteOK], d.TopicsByState[WriteDelay], d.TopicsByState[WriteStop] = ok, delayed, stopped
	d.OldestUncompactedAge = time.Duration(max(ageSeconds, 0) * float64(time.Second))
	return d, nil
}

func (c *Catalog) emptyDebt(ctx context.Context) (DebtTotals, error) {
	d := DebtTotals{TopicsByState: map[string]int{WriteOK: 0, WriteDelay: 0, WriteStop: 0}}
	err := c.Pool.QueryRow(ctx, `SELECT trigger_min_chunks,
			(SELECT coalesce(sum(output_bytes), 0)::bigint FROM optimizations) FROM compaction_debt_settings`).
		Scan(&d.TriggerMinChunks, &d.CompactionWrittenBytes)
	if err != nil {
		return DebtTotals{}, fmt.Errorf("catalog: compaction debt: %w", err)
	}
	return d, nil
}

// TopicDebt is one topic's row of topic_compaction_debt.
type TopicDebt struct {
	TopicID   int64
	Locator   string
	Finalized bool
	L0Chunks  int
	L0Bytes   int64
	// UncompactedChunks are L0 chunks as ingestion wrote them; OldestUncompactedAge is the age
	// of the oldest of them (0 when there is none).
	UncompactedChunks    int
	OldestUncompactedAge time.Duration
	WriteState           string
	Delay                time.Duration
}

// WorstTopics returns at most limit topics with the most debt first: by L0 chunks, then L0
// bytes, then the age of their oldest uncompacted chunk (the order a run under auto takes them
// in). Topics without L0 chunks are left out.
func (c *Catalog) WorstTopics(ctx context.Context, limit int) ([]TopicDebt, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("catalog: worst topics: limit %d must be positive: %w", limit, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, `
		SELECT topic_id, locator, finalized, l0_chunks, l0_bytes, uncompacted_chunks,
			coalesce(extract(epoch FROM now() - oldest_uncompacted_at), 0)::float8, write_state, delay_ms
		FROM topic_compaction_debt WHERE l0_chunks > 0
		ORDER BY l0_chunks DESC, l0_bytes DESC, oldest_uncompacted_at, topic_id LIMIT $1`, limit)
	var out []TopicDebt
	var td TopicDebt
	var age float64
	var ms int64
	_, err := pgx.ForEachRow(rows, []any{&td.TopicID, &td.Locator, &td.Finalized, &td.L0Chunks, &td.L0Bytes,
		&td.UncompactedChunks, &age, &td.WriteState, &ms}, func() error {
		td.OldestUncompactedAge = time.Duration(max(age, 0) * float64(time.Second))
		td.Delay = time.Duration(ms) * time.Millisecond
		out = append(out, td)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: worst topics: %w", err)
	}
	return out, nil
}
