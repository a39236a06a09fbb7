package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/policy"
)

// EnqueueUnoptimized queues every finalized topic that needs a full compaction (never optimized,
// or with L0 chunks) and is not queued yet nor quarantined (see RecordFailure), and returns how
// many it added. It is EnqueueTopics with the Full policy and every topic in scope.
func (c *Catalog) EnqueueUnoptimized(ctx context.Context) (added int, err error) {
	return c.EnqueueTopics(ctx, Trigger{Policy: policy.Full})
}

// Enqueue queues one finalized topic (optimized or not: a manual scope). Queuing a queued topic
// changes nothing. Errors: ErrNotFound if the topic does not exist or is not finalized.
func (c *Catalog) Enqueue(ctx context.Context, topicID int64) error {
	if _, err := c.finalizedTopic(ctx, c.Pool, topicID); err != nil {
		return fmt.Errorf("catalog: enqueue: %w", err)
	}
	_, err := c.Pool.Exec(ctx, `INSERT INTO optimization_queue (topic_id) VALUES ($1) ON CONFLICT (topic_id) DO NOTHING`, topicID)
	if pgErrorCode(err) == sqlstateForeignKeyViolation { // deleted in between
		return fmt.Errorf("catalog: enqueue topic %d: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("catalog: enqueue topic %d: %w", topicID, err)
	}
	return nil
}

// finalizedTopic returns the topic if it exists and is finalized, else an error wrapping
// ErrNotFound that says which.
func (c *Catalog) finalizedTopic(ctx context.Context, q querier, topicID int64) (Topic, error) {
	t, err := topicRow(ctx, q, topicID)
	if err != nil {
		return Topic{}, err
	}
	if t.FinalizedAt == nil {
		return Topic{}, fmt.Errorf("topic %d (%q) is not finalized (ingestion still running): %w", topicID, t.Locator, ErrNotFound)
	}
	return t, nil
}

// topicRow returns the topic, or an error wrapping ErrNotFound when it does not exist.
func topicRow(ctx context.Context, q querier, topicID int64) (Topic, error) {
	rows, _ := q.Query(ctx, `SELECT `+topicColumns+` FROM topics t WHERE t.id = $1`, topicID)
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Topic])
	if errors.Is(err, pgx.ErrNoRows) {
		return Topic{}, fmt.Errorf("topic %d does not exist: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return Topic{}, fmt.Errorf("topic %d: %w", topicID, err)
	}
	return t, nil
}

// ListQueued returns up to limit queued topics with topic id > afterTopicID, ordered by topic
// id, for paging (pass the last id of a page to get the next), whatever their policy. limit must
// be positive. A topic quarantined while it was queued (its third failure came from the run that
// queued it) is left out: it keeps its queue row, and is listed again once its quarantine is
// cleared.
func (c *Catalog) ListQueued(ctx context.Context, afterTopicID int64, limit int) ([]QueuedTopic, error) {
	return c.listQueued(ctx, afterTopicID, limit, "", policy.Scope{})
}

// ListQueuedFor is ListQueued restricted to the topics queued with policy p and inside scope (a
// scoped run touches nothing outside its scope).
func (c *Catalog) ListQueuedFor(ctx context.Context, afterTopicID int64, limit int, p policy.Policy, scope policy.Scope) ([]QueuedTopic, error) {
	return c.listQueued(ctx, afterTopicID, limit, p, scope)
}

func (c *Catalog) listQueued(ctx context.Context, afterTopicID int64, limit int, p policy.Policy, scope policy.Scope) ([]QueuedTopic, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("catalog: list queued topics: limit %d must be positive: %w", limit, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, `
		SELECT q.topic_id, t.locator, `+queueBytes+`, q.debt_l0_chunks FROM optimization_queue q JOIN topics t ON t.id = q.topic_id
		WHERE q.topic_id > $1 AND `+listable("$3", "$4", "$5")+`
		ORDER BY q.topic_id LIMIT $2`, afterTopicID, limit, string(p), scopeSequences(scope), scopeTopics(scope))
	queued, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueuedTopic])
	if err != nil {
		return nil, fmt.Errorf("catalog: list queued topics after %d: %w", afterTopicID, err)
	}
	return queued, nil
}

// ListQueuedByDebt is ListQueuedFor in order of debt: the topics with the most L0 chunks when
// they were queued first (QueuedTopic.Debt, recorded by EnqueueTopics), ties in topic ID order,
// so that a run takes a backlog from its worst end. The cursor is the last topic of the previous
// page, its Debt and TopicID; afterTopicID 0 is the first page. The order is that of the queue
// rows as the run's EnqueueTopics left them: a topic queued again by a run beside it with another
// count may be listed twice (the second time it is skipped) or not at all (the next run takes it).
func (c *Catalog) ListQueuedByDebt(ctx context.Context, afterDebt int, afterTopicID int64, limit int, p policy.Policy, scope policy.Scope) ([]QueuedTopic, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("catalog: list queued topics by debt: limit %d must be positive: %w", limit, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, `
		SELECT q.topic_id, t.locator, `+queueBytes+`, q.debt_l0_chunks FROM optimization_queue q JOIN topics t ON t.id = q.topic_id
		WHERE ($2 = 0 OR q.debt_l0_chunks < $1 OR (q.debt_l0_chunks = $1 AND q.topic_id > $2)) AND `+listable("$4", "$5", "$6")+`
		ORDER BY q.debt_l0_chunks DESC, q.topic_id LIMIT $3`,
		afterDebt, afterTopicID, limit, string(p), scopeSequences(scope), scopeTopics(scope))
	queued, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueuedTopic])
	if err != nil {
		return nil, fmt.Errorf("catalog: list queued topics by debt after topic %d (debt %d): %w", afterTopicID, afterDebt, err)
	}
	return queued, nil
}

// queueBytes estimates the input bytes of the compaction of the queued topic q (aliased t):
// the bytes of all its chunks for the full policy, of its L0 chunks for the others (a leveled
// compaction also reads the part of the sorted run its L0 chunks overlap, which this leaves out).
const queueBytes = `(SELECT coalesce(sum(c.size_bytes), 0)::bigint FROM chunks c
	WHERE c.topic_id = t.id AND (q.policy = 'full' OR c.level = 0))`

// listable returns the SQL condition that the queue row q of topic t is listed for a run of the
// policy given as parameter pol (” = any) and the scope given as parameters seqs and topics (see
// inScope): queued with that policy, inside the scope, not quarantined.
func listable(pol, seqs, topics string) string {
	return `(` + pol + ` = '' OR q.policy = ` + pol + `) AND ` + inScope(seqs, topics) + `
		AND NOT EXISTS (SELECT 1 FROM topic_failures f WHERE f.topic_id = q.topic_id AND f.quarantined_at IS NOT NULL)`
}

// QueueTotals returns how many topics ListQueuedFor(…, p, scope) lists in all and the sum of
// their QueuedTopic.Bytes: what a run of that policy and scope has before it, for its progress.
func (c *Catalog) QueueTotals(ctx context.Context, p policy.Policy, scope policy.Scope) (topics int, bytes int64, err error) {
	err = c.Pool.QueryRow(ctx, `
		SELECT count(*), coalesce(sum(`+queueBytes+`), 0)::bigint FROM optimization_queue q JOIN topics t ON t.id = q.topic_id
		WHERE `+listable("$1", "$2", "$3"), string(p), scopeSequences(scope), scopeTopics(scope)).Scan(&topics, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("catalog: queue totals for %q: %w", p, err)
	}
	return topics, bytes, nil
}

// IsQueued reports whether the topic has a queue row (leased or not).
func (c *Catalog) IsQueued(ctx context.Context, topicID int64) (bool, error) {
	var queued bool
	err := c.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM optimization_queue WHERE topic_id = $1)`, topicID).Scan(&queued)
	if err != nil {
		return false, fmt.Errorf("catalog: is topic %d queued: %w", topicID, err)
	}
	return queued, nil
}

// QueueLength returns the number of queued topics, leased or not.
func (c *Catalog) QueueLength(ctx context.Context) (int, error) {
	var n int
	if err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM optimization_queue`).Scan(&n); err != nil {
		return 0, fmt.Errorf("catalog: queue length: %w", err)
	}
	return n, nil
}

// queueRow is the lease part of an optimization_queue row; the strings are "" when not leased.
type queueRow struct {
	owner, token, freshPrefix string
	leasedAt                  *time.Time
}

// lockQueueRow reads the topic's queue row, locking it FOR UPDATE or FOR SHARE. found is false
// when the topic is not queued.
func lockQueueRow(ctx context.Context, tx pgx.Tx, topicID int64, forUpdate bool) (row queueRow, found bool, err error) {
	const selectRow = `SELECT coalesce(lease_owner, ''), coalesce(fencing_token, ''), coalesce(fresh_prefix, ''), leased_at
		FROM optimization_queue WHERE topic_id = $1 `
	query := selectRow + "FOR SHARE"
	if forUpdate {
		query = selectRow + "FOR UPDATE"
	}
	err = tx.QueryRow(ctx, query, topicID).Scan(&row.owner, &row.token, &row.freshPrefix, &row.leasedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return queueRow{}, false, nil
	}
	if err != nil {
		return queueRow{}, false, fmt.Errorf("topic %d: read queue row: %w", topicID, err)
	}
	return row, true, nil
}

// checkLease locks the topic's queue row (FOR SHARE, or FOR UPDATE) and returns it if it is held
// by fencingToken, else an error wrapping ErrLeaseLost.
func checkLease(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string, forUpdate bool) (queueRow, error) {
	row, found, err := lockQueueRow(ctx, tx, topicID, forUpdate)
	switch {
	case err != nil:
		return queueRow{}, err
	case !found:
		return queueRow{}, fmt.Errorf("topic %d: run %q: topic is no longer queued: %w", topicID, fencingToken, ErrLeaseLost)
	case row.token != fencingToken:
		return queueRow{}, fmt.Errorf("topic %d: run %q: queue row is held by run %q (owner %q): %w",
			topicID, fencingToken, row.token, row.owner, ErrLeaseLost)
	}
	return row, nil
}

// AcquireLease gives the topic's optimization to the run fencingToken (Temporal run ID) of the
// workflow owner (workflow ID), which will write its output under freshPrefix. The topic is
// queued if it was not (a manually started optimization). If the run already holds the lease
// (a retried call), the lease is returned unchanged, with the fresh prefix of the first call.
// A lease held by another run is never taken here: the error is a *LeasedError (wrapping
// ErrLeased) with the holder's lease as read under the queue row's lock, and nothing changes. Only
// a holder that is gone may lose its lease, through TakeOverLease
// (docs/design.md#one-optimization-per-topic): another run, a batch of tiny topics or a topic
// workflow beside this one may be alive and about to commit.
// Errors: ErrNotFound if the topic does not exist or is not finalized; ErrInvalid for empty or
// non-UTF-8 arguments. It is AcquireLeaseFor with the Full policy.
func (c *Catalog) AcquireLease(ctx context.Context, topicID int64, owner, fencingToken, freshPrefix string) (Lease, error) {
	return c.AcquireLeaseFor(ctx, topicID, owner, fencingToken, freshPrefix, policy.Full)
}

// AcquireLeaseFor is AcquireLease for a compaction of policy p (resolved: not Auto), which the
// queue row records: Full requires a finalized topic, Tiered and Leveled also lease live ones.
func (c *Catalog) AcquireLeaseFor(ctx context.Context, topicID int64, owner, fencingToken, freshPrefix string, p policy.Policy) (Lease, error) {
	l, err := c.takeLease(ctx, topicID, "", owner, fencingToken, freshPrefix, p, true)
	if err != nil {
		return Lease{}, fmt.Errorf("catalog: acquire lease on topic %d for run %q: %w", topicID, fencingToken, err)
	}
	return l, nil
}

// AcquireQueuedLease is AcquireLeaseFor for a run that listed the topic from the queue: a topic
// that is no longer queued (another run committed its optimization, or released it, since this
// run listed it) is not queued again, and the error wraps ErrNotQueued. The check and the lease
// are one transaction, so a commit just before cannot be followed by a second optimization.
func (c *Catalog) AcquireQueuedLease(ctx context.Context, topicID int64, owner, fencingToken, freshPrefix string, p policy.Policy) (Lease, error) {
	l, err := c.takeLease(ctx, topicID, "", owner, fencingToken, freshPrefix, p, false)
	if err != nil {
		return Lease{}, fmt.Errorf("catalog: acquire lease on queued topic %d for run %q: %w", topicID, fencingToken, err)
	}
	return l, nil
}

// TakeOverLease is a compare-and-swap of the topic's lease: if, under the queue row's lock, the
// row is still held by the run holderToken, the lease goes to the run fencingToken of owner with
// freshPrefix and policy p, the holder's plan and staged chunks are deleted, and the holder's fresh
// prefix (read from that locked row) is returned in Lease.PreviousFreshPrefix: the only prefix a
// caller may delete as the holder's partial output. The caller calls it only once it knows the
// holder is gone (its workflow run closed; docs/design.md#one-optimization-per-topic). If the run
// fencingToken already holds the lease (a retried takeover), the lease is returned unchanged. If
// the row is held by anyone else, not leased, or not queued any more, nothing changes and the
// error wraps ErrLeaseChanged. Other errors are AcquireLeaseFor's.
func (c *Catalog) TakeOverLease(ctx context.Context, topicID int64, holderToken, owner, fencingToken, freshPrefix string, p policy.Policy) (Lease, error) {
	if err := checkNonEmptyText("holder's fencing token", holderToken); err != nil {
		return Lease{}, fmt.Errorf("catalog: take over lease on topic %d: %w", topicID, err)
	}
	l, err := c.takeLease(ctx, topicID, holderToken, owner, fencingToken, freshPrefix, p, false)
	if err != nil {
		return Lease{}, fmt.Errorf("catalog: take over lease on topic %d from run %q for run %q: %w",
			topicID, holderToken, fencingToken, err)
	}
	return l, nil
}

// takeLease is AcquireLeaseFor (holderToken "": the row must be free or already ours; queue: a
// topic not queued is queued), AcquireQueuedLease (queue false) and TakeOverLease (the row must be
// holderToken's or already ours), in one transaction that holds the queue row's lock from the
// decision to the update.
func (c *Catalog) takeLease(ctx context.Context, topicID int64, holderToken, owner, fencingToken, freshPrefix string,
	p policy.Policy, queue bool) (Lease, error) {
	for _, f := range []struct{ name, value string }{
		{"lease owner", owner}, {"fencing token", fencingToken}, {"fresh prefix", freshPrefix},
	} {
		if err := checkNonEmptyText(f.name, f.value); err != nil {
			return Lease{}, err
		}
	}
	var lease Lease
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		t, err := c.leasableTopic(ctx, tx, topicID, p)
		if err != nil {
			return err
		}
		if queue {
			if _, err := tx.Exec(ctx, `INSERT INTO optimization_queue (topic_id, policy) VALUES ($1, $2)
				ON CONFLICT (topic_id) DO NOTHING`, topicID, string(p)); err != nil {
				return fmt.Errorf("topic %d: queue: %w", topicID, err)
			}
		}
		row, found, err := lockQueueRow(ctx, tx, topicID, true)
		switch {
		case err != nil:
			return err
		case !found && holderToken != "":
			return fmt.Errorf("topic %d: no longer queued: %w", topicID, ErrLeaseChanged)
		case !found && !queue:
			return fmt.Errorf("topic %d (%q): %w", topicID, t.Locator, ErrNotQueued)
		case !found:
			return fmt.Errorf("topic %d: queue row deleted concurrently (committed or released), retry", topicID)
		}
		lease = Lease{TopicID: topicID, Locator: t.Locator, OldPrefix: t.DataPrefix}
		switch {
		case row.token == fencingToken: // a retry of this run: the same lease back
			lease.Owner, lease.FencingToken, lease.FreshPrefix, lease.LeasedAt = row.owner, row.token, row.freshPrefix, *row.leasedAt
			return nil
		case holderToken == "" && row.token != "":
			holder := lease
			holder.Owner, holder.FencingToken, holder.FreshPrefix, holder.LeasedAt = row.owner, row.token, row.freshPrefix, *row.leasedAt
			return &LeasedError{Holder: holder}
		case holderToken != "" && row.token != holderToken:
			current := "not leased"
			if row.token != "" {
				current = fmt.Sprintf("held by run %q (owner %q)", row.token, row.owner)
			}
			return fmt.Errorf("topic %d: queue row is %s: %w", topicID, current, ErrLeaseChanged)
		}
		err = tx.QueryRow(ctx, `
			UPDATE optimization_queue SET lease_owner = $2, fencing_token = $3, fresh_prefix = $4, leased_at = now(),
				policy = $5
			WHERE topic_id = $1 RETURNING leased_at`, topicID, owner, fencingToken, freshPrefix, string(p)).Scan(&lease.LeasedAt)
		if err != nil {
			return fmt.Errorf("topic %d: take lease: %w", topicID, err)
		}
		// Plans of other runs are dead; their staged chunks go with them (foreign key cascade).
		if _, err := tx.Exec(ctx, `DELETE FROM plans WHERE topic_id = $1 AND fencing_token <> $2`, topicID, fencingToken); err != nil {
			return fmt.Errorf("topic %d: drop plans of previous runs: %w", topicID, err)
		}
		lease.Owner, lease.FencingToken, lease.FreshPrefix = owner, fencingToken, freshPrefix
		lease.PreviousFreshPrefix = row.freshPrefix
		return nil
	})
	if err != nil {
		return Lease{}, err
	}
	return lease, nil
}

// LeaseOf returns the current lease of a topic. Errors: ErrNotFound if the topic is not queued or
// its queue row is not leased.
func (c *Catalog) LeaseOf(ctx context.Context, topicID int64) (Lease, error) {
	lease := Lease{TopicID: topicID}
	var owner, token, fresh *string
	var leasedAt *time.Time
	err := c.Pool.QueryRow(ctx, `
		SELECT t.locator, t.data_prefix, q.lease_owner, q.fencing_token, q.fresh_prefix, q.leased_at
		FROM optimization_queue q JOIN topics t ON t.id = q.topic_id WHERE q.topic_id = $1`, topicID).
		Scan(&lease.Locator, &lease.OldPrefix, &owner, &token, &fresh, &leasedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("catalog: lease of topic %d: topic not queued: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("catalog: lease of topic %d: %w", topicID, err)
	}
	if token == nil {
		return Lease{}, fmt.Errorf("catalog: lease of topic %d (%q): queued but not leased: %w", topicID, lease.Locator, ErrNotFound)
	}
	lease.Owner, lease.FencingToken, lease.FreshPrefix, lease.LeasedAt = *owner, *token, *fresh, *leasedAt
	return lease, nil
}

// ReleaseLease gives up the run's lease: if the topic's queue row is held by fencingToken, it
// deletes the row and the run's plan and staged chunks in one transaction and returns
// released=true with the run's fresh prefix (whose objects the caller deletes). If the row is
// gone or held by another run, nothing changes and released is false.
func (c *Catalog) ReleaseLease(ctx context.Context, topicID int64, fencingToken string) (released bool, freshPrefix string, err error) {
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		row, found, err := lockQueueRow(ctx, tx, topicID, true)
		if err != nil || !found || row.token != fencingToken || fencingToken == "" {
			return err
		}
		if err := deleteRunState(ctx, tx, topicID, fencingToken); err != nil {
			return err
		}
		released, freshPrefix = true, row.freshPrefix
		return nil
	})
	if err != nil {
		return false, "", fmt.Errorf("catalog: release lease on topic %d for run %q: %w", topicID, fencingToken, err)
	}
	return released, freshPrefix, nil
}

// GiveBackLease gives up the run's lease but keeps the topic queued: if the topic's queue row is
// held by fencingToken, it deletes the run's plan and staged chunks and clears the row's lease in
// one transaction, so that another optimization (a topic workflow of its own) leases it afresh,
// and returns given=true with the run's fresh prefix (whose objects the caller deletes first,
// while the lease is still ours). If the row is gone or held by another run, nothing changes.
func (c *Catalog) GiveBackLease(ctx context.Context, topicID int64, fencingToken string) (given bool, freshPrefix string, err error) {
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		row, found, err := lockQueueRow(ctx, tx, topicID, true)
		if err != nil || !found || row.token != fencingToken || fencingToken == "" {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM plans WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken); err != nil {
			return fmt.Errorf("topic %d: delete plan of run %q: %w", topicID, fencingToken, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken); err != nil {
			return fmt.Errorf("topic %d: delete staged chunks of run %q: %w", topicID, fencingToken, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE optimization_queue SET lease_owner = NULL, fencing_token = NULL,
			fresh_prefix = NULL, leased_at = NULL WHERE topic_id = $1`, topicID); err != nil {
			return fmt.Errorf("topic %d: clear lease: %w", topicID, err)
		}
		given, freshPrefix = true, row.freshPrefix
		return nil
	})
	if err != nil {
		return false, "", fmt.Errorf("catalog: give back lease on topic %d for run %q: %w", topicID, fencingToken, err)
	}
	return given, freshPrefix, nil
}

// deleteRunState deletes the topic's queue row and the run's plan and staged chunks.
func deleteRunState(ctx context.Context, tx pgx.Tx, topicID int64, fencingToken string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM plans WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken); err != nil {
		return fmt.Errorf("topic %d: delete plan of run %q: %w", topicID, fencingToken, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM staged_chunks WHERE topic_id = $1 AND fencing_token = $2`, topicID, fencingToken); err != nil {
		return fmt.Errorf("topic %d: delete staged chunks of run %q: %w", topicID, fencingToken, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM optimization_queue WHERE topic_id = $1`, topicID); err != nil {
		return fmt.Errorf("topic %d: dequeue: %w", topicID, err)
	}
	return nil
}
