package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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

var (
	quotedKVPassword = regexp.MustCompile(`password\s*=\s*'(?:[^'\\]|\\.)*'`)
	plainKVPassword  = regexp.MustCompile(`password\s*=\s*[^\s']\S*`)
	urlPassword      = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*://[^:@/]*:)([^@]*)@`)
)

// RedactURL returns databaseURL with its password (URL user info or key=value "password")
// replaced by "xxxxx", for logs and error messages.
func RedactURL(databaseURL string) string {
	if u, err := url.Parse(databaseURL); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	s := urlPassword.ReplaceAllString(databaseURL, "${1}xxxxx@")
	s = quotedKVPassword.ReplaceAllLiteralString(s, "password=xxxxx")
	return plainKVPassword.ReplaceAllLiteralString(s, "password=xxxxx")
}

// passwordOf returns the password written in databaseURL, or "" if it has none.
func passwordOf(databaseURL string) string {
	if u, err := url.Parse(databaseURL); err == nil && u.Scheme != "" {
		p, _ := u.User.Password()
		return p
	}
	if m := urlPassword.FindStringSubmatch(databaseURL); m != nil {
		return m[2]
	}
	if cfg, err := pgconn.ParseConfig(databaseURL); err == nil {
		return cfg.Password
	}
	return ""
}

// redactedError hides the password of a connection string from an error message while keeping
// the wrapped chain for errors.Is / errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactError(databaseURL string, err error) error {
	pw := passwordOf(databaseURL)
	msg := err.Error()
	if pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
		msg = strings.ReplaceAll(msg, url.PathEscape(pw), "xxxxx")
		msg = strings.ReplaceAll(msg, url.QueryEscape(pw), "xxxxx")
	}
	return &redactedError{msg: msg, err: err}
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
