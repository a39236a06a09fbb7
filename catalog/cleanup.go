package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cleanup routine deletes the objects of data prefixes nothing references any more (old
// prefixes of optimized topics, partial output of failed runs, orphans) after a retention period.
//
// A prefix is referenced when a topic's data_prefix, a chunk's object key (a topic's chunks may
// live under several prefixes once it is compacted while live), a queue row's fresh_prefix (a
// live lease) or a plan's fresh_prefix is that prefix. Every writer records its prefix in the catalog before it
// writes the prefix's first object (ingestion creates the topic first, Lease stores the fresh
// prefix first), so a prefix that cleanup found in a listing of the store and then finds
// unreferenced in a later statement is not in use by anyone who could still commit it.

// referenced returns an SQL expression that is true when something in the catalog references
// the prefix p (an SQL expression).
func referenced(p string) string {
	return `(EXISTS (SELECT 1 FROM topics WHERE data_prefix = ` + p + `)
		OR EXISTS (SELECT 1 FROM chunks WHERE key_prefix = ` + p + `)
		OR EXISTS (SELECT 1 FROM optimization_queue WHERE fresh_prefix = ` + p + `)
		OR EXISTS (SELECT 1 FROM plans WHERE fresh_prefix = ` + p + `))`
}

// MarkResult says what MarkUnreferenced did with one page of prefixes.
type MarkResult struct {
	Referenced int // prefixes the catalog references (never deleted)
	Marked     int // unreferenced prefixes marked now (first time seen unreferenced)
	Unmarked   int // referenced prefixes whose earlier mark was removed
	Pending    int // unreferenced prefixes marked by an earlier pass
}

// MarkUnreferenced records the cleanup state of a page of prefixes listed from the store (each
// "tp_<ULID>", without the trailing "/"), in one transaction: a referenced prefix loses its mark
// if it had one; an unreferenced prefix is marked with the database clock unless it is marked
// already. The caller must list the store before calling, so that every lease whose objects it
// saw is visible here. Errors: ErrInvalid for a prefix PostgreSQL text cannot hold.
func (c *Catalog) MarkUnreferenced(ctx context.Context, prefixes []string) (MarkResult, error) {
	for _, p := range prefixes {
		if err := checkNonEmptyText("prefix", p); err != nil {
			return MarkResult{}, fmt.Errorf("catalog: mark prefixes: %w", err)
		}
	}
	var res MarkResult
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		var referencedPrefixes, unreferenced []string
		rows, _ := tx.Query(ctx, `SELECT l.p, `+referenced("l.p")+` FROM unnest($1::text[]) AS l(p)`, prefixes)
		var p string
		var ref bool
		_, err := pgx.ForEachRow(rows, []any{&p, &ref}, func() error {
			if ref {
				referencedPrefixes = append(referencedPrefixes, p)
			} else {
				unreferenced = append(unreferenced, p)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("look up references: %w", err)
		}
		res.Referenced = len(referencedPrefixes)
		tag, err := tx.Exec(ctx, `DELETE FROM cleanup_marks WHERE prefix = ANY($1)`, referencedPrefixes)
		if err != nil {
			return fmt.Errorf("unmark referenced prefixes: %w", err)
		}
		res.Unmarked = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, `INSERT INTO cleanup_marks (prefix) SELECT unnest($1::text[])
			ON CONFLICT (prefix) DO NOTHING`, unreferenced)
		if err != nil {
			return fmt.Errorf("mark unreferenced prefixes: %w", err)
		}
		res.Marked = int(tag.RowsAffected())
		res.Pending = len(unreferenced) - res.Marked
		return nil
	})
	if err != nil {
		return MarkResult{}, fmt.Errorf("catalog: mark prefixes: %w", err)
	}
	return res, nil
}

// LeasedPrefixes returns which of prefixes are the fresh prefix of a live lease (a queue row):
// an optimization may be writing under them right now.
func (c *Catalog) LeasedPrefixes(ctx context.Context, prefixes []string) (map[string]bool, error) {
	rows, _ := c.Pool.Query(ctx, `SELECT fresh_prefix FROM optimization_queue WHERE fresh_prefix = ANY($1)`, prefixes)
	leased := map[string]bool{}
	var p string
	if _, err := pgx.ForEachRow(rows, []any{&p}, func() error { leased[p] = true; return nil }); err != nil {
		return nil, fmt.Errorf("catalog: leased prefixes: %w", err)
	}
	return leased, nil
}

// CleanupMark is one row of cleanup_marks.
type CleanupMark struct {
	Prefix   string    // "tp_<ULID>"
	MarkedAt time.Time // database clock when cleanup first saw it unreferenced
}

// CleanupMarks returns up to limit marks with prefix > afterPrefix in prefix order, for paging.
// limit must be positive.
func (c *Catalog) CleanupMarks(ctx context.Context, afterPrefix string, limit int) ([]CleanupMark, error) {
	return c.marks(ctx, `SELECT prefix, marked_at FROM cleanup_marks WHERE prefix > $1 ORDER BY prefix LIMIT $2`,
		afterPrefix, limit)
}

// DueMarks returns up to limit marks with prefix > afterPrefix, in prefix order, that are at least
// retention old by the database clock (now() - marked_at >= retention): the prefixes
// DeleteMarked may delete. limit must be positive, retention not negative.
func (c *Catalog) DueMarks(ctx context.Context, retention time.Duration, afterPrefix string, limit int) ([]CleanupMark, error) {
	if retention < 0 {
		return nil, fmt.Errorf("catalog: due cleanup marks: retention %s is negative: %w", retention, ErrInvalid)
	}
	return c.marks(ctx, `SELECT prefix, marked_at FROM cleanup_marks
		WHERE prefix > $1 AND now() - marked_at >= $3 * interval '1 microsecond'
		ORDER BY prefix LIMIT $2`, afterPrefix, limit, retention.Microseconds())
}

func (c *Catalog) marks(ctx context.Context, query, afterPrefix string, limit int, args ...any) ([]CleanupMark, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("catalog: cleanup marks: limit %d must be positive: %w", limit, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, query, append([]any{afterPrefix, limit}, args...)...)
	marks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[CleanupMark])
	if err != nil {
		return nil, fmt.Errorf("catalog: cleanup marks after %q: %w", afterPrefix, err)
	}
	return marks, nil
}

// PendingMarks returns how many marks are younger than retention by the database clock.
func (c *Catalog) PendingMarks(ctx context.Context, retention time.Duration) (int, error) {
	var n int
	err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM cleanup_marks
		WHERE now() - marked_at < $1 * interval '1 microsecond'`, retention.Microseconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("catalog: count pending cleanup marks: %w", err)
	}
	return n, nil
}

// DeleteOutcome says what DeleteMarked did with one prefix.
type DeleteOutcome int

const (
	// DeleteNotMarked: the prefix has no mark (another cleanup deleted or unmarked it).
	DeleteNotMarked DeleteOutcome = iota
	// DeleteNotDue: the mark is younger than the retention duration.
	DeleteNotDue
	// DeleteUnmarked: the prefix is referenced again; its mark was removed, nothing deleted.
	DeleteUnmarked
	// DeleteDone: the objects were deleted and the mark removed.
	DeleteDone
)

// DeleteMarked decides, in one transaction that holds the prefix's mark row locked, whether the
// marked prefix may go: its mark must be at least retention old by the database clock and nothing
// may reference it (checked again here). Then deleteObjects is called inside the transaction and,
// when it succeeds, the mark is removed. A referenced prefix is unmarked instead. If
// deleteObjects fails, its error is returned wrapped and the mark stays (a later pass retries).
// Concurrent calls for the same prefix are serialized by the row lock; the loser sees
// DeleteNotMarked. deleteObjects must not be nil; retention must not be negative.
func (c *Catalog) DeleteMarked(ctx context.Context, prefix string, retention time.Duration,
	deleteObjects func(context.Context) error) (DeleteOutcome, error) {
	if deleteObjects == nil || retention < 0 {
		return DeleteNotMarked, fmt.Errorf("catalog: delete prefix %s: nil delete function or negative retention %s: %w",
			prefix, retention, ErrInvalid)
	}
	outcome := DeleteNotMarked
	err := c.inTx(ctx, func(tx pgx.Tx) error {
		var due bool
		err := tx.QueryRow(ctx, `SELECT now() - marked_at >= $2 * interval '1 microsecond' FROM cleanup_marks
			WHERE prefix = $1 FOR UPDATE`, prefix, retention.Microseconds()).Scan(&due)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock mark: %w", err)
		}
		if !due {
			outcome = DeleteNotDue
			return nil
		}
		var ref bool
		if err := tx.QueryRow(ctx, `SELECT `+referenced("$1::text"), prefix).Scan(&ref); err != nil {
			return fmt.Errorf("look up references: %w", err)
		}
		if !ref {
			if err := deleteObjects(ctx); err != nil {
				return fmt.Errorf("delete objects: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cleanup_marks WHERE prefix = $1`, prefix); err != nil {
			return fmt.Errorf("remove mark: %w", err)
		}
		outcome = DeleteDone
		if ref {
			outcome = DeleteUnmarked
		}
		return nil
	})
	if err != nil {
		return DeleteNotMarked, fmt.Errorf("catalog: delete prefix %s: %w", prefix, err)
	}
	return outcome, nil
}

// ReplacedObject is an object of a chunk that a commit replaced (a row of replaced_objects).
type ReplacedObject struct {
	ObjectKey  string
	ReplacedAt time.Time // database clock of the commit
}

// DueReplacedObjects returns up to limit replaced objects with key > afterKey, in key order, that
// were replaced at least retention ago by the database clock: the objects DeleteReplacedObject
// may delete (their prefix may still be referenced: a live topic's ingestion prefix). limit must
// be positive, retention not negative.
func (c *Catalog) DueReplacedObjects(ctx context.Context, retention time.Duration, afterKey string, limit int) ([]ReplacedObject, error) {
	if limit <= 0 || retention < 0 {
		return nil, fmt.Errorf("catalog: due replaced objects: limit %d or retention %s: %w", limit, retention, ErrInvalid)
	}
	rows, _ := c.Pool.Query(ctx, `SELECT object_key, replaced_at FROM replaced_objects
		WHERE object_key > $1 AND now() - replaced_at >= $3 * interval '1 microsecond'
		ORDER BY object_key LIMIT $2`, afterKey, limit, retention.Microseconds())
	objs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ReplacedObject])
	if err != nil {
		return nil, fmt.Errorf("catalog: due replaced objects after %q: %w", afterKey, err)
	}
	return objs, nil
}

// PendingReplacedObjects returns how many replaced objects are younger than retention.
func (c *Catalog) PendingReplacedObjects(ctx context.Context, retention time.Duration) (int, error) {
	var n int
	err := c.Pool.QueryRow(ctx, `SELECT count(*) FROM replaced_objects
		WHERE now() - replaced_at < $1 * interval '1 microsecond'`, retention.Microseconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("catalog: count pending replaced objects: %w", err)
	}
	return n, nil
}

// DeleteReplacedObject deletes one replaced object once it is due, in one transaction that holds
// its row locked: the row must be at least retention old by the database clock, and when no chunk
// row names the key (checked here: it never does, keys are never reused, but a hostile catalog
// could), deleteObject is called inside the transaction; when it succeeds the row is removed.
// deleted is false when the row is gone (another cleanup took it) or not due. If deleteObject
// fails, its error is returned wrapped and the row stays (a later pass retries).
func (c *Catalog) DeleteReplacedObject(ctx context.Context, key string, retention time.Duration,
	deleteObject func(context.Context) error) (deleted bool, err error) {
	if deleteObject == nil || retention < 0 {
		return false, fmt.Errorf("catalog: delete replaced object %s: nil delete function or negative retention %s: %w",
			key, retention, ErrInvalid)
	}
	err = c.inTx(ctx, func(tx pgx.Tx) error {
		var due, named bool
		err := tx.QueryRow(ctx, `SELECT now() - replaced_at >= $2 * interval '1 microsecond',
				EXISTS (SELECT 1 FROM chunks WHERE object_key = $1)
			FROM replaced_objects WHERE object_key = $1 FOR UPDATE`, key, retention.Microseconds()).Scan(&due, &named)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !due) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock row: %w", err)
		}
		if !named {
			if err := deleteObject(ctx); err != nil {
				return fmt.Errorf("delete object: %w", err)
			}
			deleted = true
		}
		_, err = tx.Exec(ctx, `DELETE FROM replaced_objects WHERE object_key = $1`, key)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("catalog: delete replaced object %s: %w", key, err)
	}
	return deleted, nil
}
