package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/storeopt/storeopt/internal/redact"
)

// Catalog is the PostgreSQL catalog. It is safe for concurrent use.
type Catalog struct {
	Pool *pgxpool.Pool
}

// Open connects to the catalog database at databaseURL (a postgres:// URL or a key=value
// connection string), checks the connection with a ping and returns the catalog. It does not
// migrate: call Migrate first. Errors never contain the password of databaseURL.
func Open(ctx context.Context, databaseURL string) (*Catalog, error) {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, redactError(databaseURL, fmt.Errorf("catalog: open %s: %w", RedactURL(databaseURL), err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, redactError(databaseURL, fmt.Errorf("catalog: connect to %s: %w", RedactURL(databaseURL), err))
	}
	return &Catalog{Pool: pool}, nil
}

// Close closes every connection of the catalog. The catalog must not be used afterwards.
func (c *Catalog) Close() {
	c.Pool.Close()
}

// RedactURL returns databaseURL with its secrets (URL user info password, password query
// parameter, key=value password) replaced by "xxxxx", for logs and error messages.
func RedactURL(databaseURL string) string { return redact.URL(databaseURL) }

// redactedError hides the secrets of a connection string from an error message while keeping
// the wrapped chain for errors.Is / errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactError(databaseURL string, err error) error {
	return &redactedError{msg: redact.Message(err.Error(), databaseURL), err: err}
}

// checkText refuses a string PostgreSQL TEXT cannot hold (invalid UTF-8 or a NUL byte), with an
// error wrapping ErrInvalid that names the field and shows the value quoted.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("catalog: %s %q is not valid UTF-8 (PostgreSQL text refuses it): %w", field, s, ErrInvalid)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("catalog: %s %q contains a NUL byte (PostgreSQL text refuses it): %w", field, s, ErrInvalid)
	}
	return nil
}

// checkNonEmptyText is checkText that also refuses "".
func checkNonEmptyText(field, s string) error {
	if s == "" {
		return fmt.Errorf("catalog: %s is empty: %w", field, ErrInvalid)
	}
	return checkText(field, s)
}

// pgErrorCode returns the SQLSTATE of err if it is a PostgreSQL error, else "".
func pgErrorCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

const (
	sqlstateForeignKeyViolation = "23503"
	sqlstateUniqueViolation     = "23505"
	sqlstateCheckViolation      = "23514"
)

// inTx runs fn in one transaction (read committed; consistency comes from row locks).
func (c *Catalog) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, c.Pool, pgx.TxOptions{}, fn)
}
