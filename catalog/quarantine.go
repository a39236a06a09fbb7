package catalog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/policy"
)

// DefaultQuarantineAfter is how many consecutive failures of a topic with the same error type and
// message put it in quarantine when the caller gives no threshold.
const DefaultQuarantineAfter = 3

// FailureRecord is the current failure streak of one topic (a row of topic_failures).
type FailureRecord struct {
	TopicID       int64
	Locator       string
	ErrorType     string // error type of the failures (e.g. "StoreoptInputError")
	Message       string // message of the latest failure
	Failures      int    // consecutive failures with this error type and message
	FirstFailedAt time.Time
	LastFailedAt  time.Time
	// QuarantinedAt is when the streak reached the threshold (database clock); nil while the
	// topic is not quarantined.
	QuarantinedAt *time.Time
}

// Reason is the quarantine reason shown to operators: "<error type>: <message>".
func (f FailureRecord) Reason() string { return f.ErrorType + ": " + f.Message }

// prefixInMessage matches data prefixes, which differ between runs of the same failure (a run's
// fresh prefix): failures are compared with them replaced by "tp_*".
var prefixInMessage = regexp.MustCompile(`tp_[0-9A-HJKMNP-TV-Z]{26}`)

// failureSignature is what two failures must share, besides the error type, to count as the same.
func failureSignature(message string) string {
	return prefixInMessage.ReplaceAllLiteralString(message, "tp_*")
}

const failureColumns = `f.topic_id, t.locator, f.error_type, f.message, f.failures, f.first_failed_at,
	f.last_failed_at, f.quarantined_at`

// RecordFailure counts one failed optimization of a topic by the run fencingToken with error
// type errorType and message message, and returns the topic's streak afterwards. A failure with
// the same error type and message (data prefixes aside) as the streak's extends it; another
// failure starts a new streak of 1. Once a streak reaches quarantineAfter (≤ 0:
// DefaultQuarantineAfter), the topic is quarantined (QuarantinedAt set) until a committed
// optimization or ClearQuarantine ends the streak; a quarantined topic stays quarantined when it
// fails another way. Recording the same run's failure again (a retried call) changes nothing.
// Errors: ErrNotFound if the topic does not exist; ErrInvalid for empty or non-UTF-8 strings.
func (c *Catalog) RecordFailure(ctx context.Context, topicID int64, fencingToken, errorType, message string,
	quarantineAfter int) (FailureRecord, error) {
	for _, f := range []struct{ name, value string }{
		{"fencing token", fencingToken}, {"error type", errorType}, {"error message", message},
	} {
		if err := checkNonEmptyText(f.name, f.value); err != nil {
			return FailureRecord{}, fmt.Errorf("catalog: record failure of topic %d: %w", topicID, err)
		}
	}
	if quarantineAfter <= 0 {
		quarantineAfter = DefaultQuarantineAfter
	}
	sig := failureSignature(message)
	var rec FailureRecord
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO topic_failures
			(topic_id, error_type, signature, message, failures, last_fencing_token, quarantined_at)
			VALUES ($1, $2, $3, $4, 1, $5, CASE WHEN $6::int <= 1 THEN now() END)
			ON CONFLICT (topic_id) DO NOTHING`, topicID, errorType, sig, message, fencingToken, quarantineAfter)
		if pgErrorCode(err) == sqlstateForeignKeyViolation {
			return fmt.Errorf("topic %d does not exist: %w", topicID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("insert failure: %w", err)
		}
		// The row exists now (ours, or an earlier streak's): extend or restart it under its lock.
		_, err = tx.Exec(ctx, `
			WITH old AS (SELECT * FROM topic_failures WHERE topic_id = $1 FOR UPDATE),
			next AS (SELECT CASE WHEN old.last_fencing_token = $5 THEN old.failures
			                     WHEN old.error_type = $2 AND old.signature = $3 THEN old.failures + 1
			                     ELSE 1 END AS failures
			         FROM old)
			UPDATE topic_failures f SET
				failures = next.failures,
				first_failed_at = CASE WHEN next.failures = 1 AND f.last_fencing_token <> $5 THEN now() ELSE f.first_failed_at END,
				last_failed_at = CASE WHEN f.last_fencing_token = $5 THEN f.last_failed_at ELSE now() END,
				error_type = $2, signature = $3, message = $4, last_fencing_token = $5,
				quarantined_at = coalesce(f.quarantined_at, CASE WHEN next.failures >= $6::int THEN now() END)
			FROM next WHERE f.topic_id = $1`, topicID, errorType, sig, message, fencingToken, quarantineAfter)
		if err != nil {
			return fmt.Errorf("count failure: %w", err)
		}
		rec, err = failureOf(ctx, tx, topicID)
		return err
	})
	if err != nil {
		return FailureRecord{}, fmt.Errorf("catalog: record failure of topic %d (run %q): %w", topicID, fencingToken, err)
	}
	return rec, nil
}

func failureOf(ctx context.Context, q querier, topicID int64) (FailureRecord, error) {
	rows, _ := q.Query(ctx, `SELECT `+failureColumns+` FROM topic_failures f JOIN topics t ON t.id = f.topic_id
		WHERE f.topic_id = $1`, topicID)
	rec, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[FailureRecord])
	if errors.Is(err, pgx.ErrNoRows) {
		return FailureRecord{}, fmt.Errorf("topic %d has no failure record: %w", topicID, ErrNotFound)
	}
	if err != nil {
		return FailureRecord{}, fmt.Errorf("topic %d: read failure record: %w", topicID, err)
	}
	return rec, nil
}

// FailureOf returns the topic's current failure streak. Errors: ErrNotFound when the topic has
// none (never failed, or its last optimization succeeded, or its quarantine was cleared).
func (c *Catalog) FailureOf(ctx context.Context, topicID int64) (FailureRecord, error) {
	rec, err := failureOf(ctx, c.Pool, topicID)
	if err != nil {
		return FailureRecord{}, fmt.Errorf("catalog: %w", err)
	}
	return rec, nil
}

// Quarantined returns up to limit quarantined topics with topic id > afterTopicID, in topic id
// order (pass the last id of a page to get the next). limit must be positive.
func (c *Catalog) Quarantined(ctx context.Context, afterTopicID int64, limit int) ([]FailureRecord, error) {
	return c.QuarantinedIn(ctx, policy.Scope{}, afterTopicID, limit)
}

// QuarantinedIn is Quarantined limited to the topics inside scope (the zero Scope = all), the
// same scope predicate EnqueueTopics uses. limit must be positive.
func (c *Catalog) QuarantinedIn(ctx context.Context, scope policy.Scope, afterTopicID int64, limit int) ([]FailureRecord, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("catalog: quarantined topics: limit %d must be positive: %w", limit, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, `SELECT `+failureColumns+` FROM topic_failures f JOIN topics t ON t.id = f.topic_id
		WHERE f.quarantined_at IS NOT NULL AND f.topic_id > $1 AND `+inScope("$3", "$4")+`
		ORDER BY f.topic_id LIMIT $2`, afterTopicID, limit, scopeSequences(scope), scopeTopics(scope))
	recs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FailureRecord])
	if err != nil {
		return nil, fmt.Errorf("catalog: quarantined topics after %d: %w", afterTopicID, err)
	}
	return recs, nil
}

// QuarantinedCount returns the number of quarantined topics.
func (c *Catalog) QuarantinedCount(ctx context.Context) (int, error) {
	return c.QuarantinedCountIn(ctx, policy.Scope{})
}

// QuarantinedCountIn returns the number of quarantined topics inside scope (the zero Scope = all).
func (c *Catalog) QuarantinedCountIn(ctx context.Context, scope policy.Scope) (int, error) {
	var n int
	if err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM topic_failures f JOIN topics t ON t.id = f.topic_id
		WHERE f.quarantined_at IS NOT NULL AND `+inScope("$1", "$2"),
		scopeSequences(scope), scopeTopics(scope)).Scan(&n); err != nil {
		return 0, fmt.Errorf("catalog: count quarantined topics: %w", err)
	}
	return n, nil
}

// ClearQuarantine ends the topic's failure streak (and its quarantine, if any): the next run
// queues it again. cleared is false when the topic had no failure record.
func (c *Catalog) ClearQuarantine(ctx context.Context, topicID int64) (cleared bool, err error) {
	tag, err := c.Pool.Exec(ctx, `DELETE FROM topic_failures WHERE topic_id = $1`, topicID)
	if err != nil {
		return false, fmt.Errorf("catalog: clear quarantine of topic %d: %w", topicID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ClearAllQuarantines lifts every quarantine (ending those topics' failure streaks) and returns
// how many topics it released. Streaks below the threshold are kept.
func (c *Catalog) ClearAllQuarantines(ctx context.Context) (int, error) {
	tag, err := c.Pool.Exec(ctx, `DELETE FROM topic_failures WHERE quarantined_at IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("catalog: clear all quarantines: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
