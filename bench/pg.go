package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// server creates and drops the bench's databases through an admin connection URL.
type server struct {
	adminURL string
	created  []string // databases created by this invocation, dropped by dropAll
}

// randomSuffix returns 8 random hex digits.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// databaseURL returns adminURL with its database replaced by name.
func (s *server) databaseURL(name string) (string, error) {
	u, err := url.Parse(s.adminURL)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("-pg %q is not a postgres:// URL", s.adminURL)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// create creates database name, as a copy of template when template is not empty, and returns
// its URL. CREATE DATABASE … TEMPLATE copies files: it is quick, but nobody may be connected to
// the template.
func (s *server) create(ctx context.Context, name, template string) (string, error) {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := s.exec(ctx, sql); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	s.created = append(s.created, name)
	return s.databaseURL(name)
}

// drop drops database name (closing other sessions to it).
func (s *server) drop(ctx context.Context, name string) error {
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	for i, n := range s.created {
		if n == name {
			s.created = append(s.created[:i], s.created[i+1:]...)
			break
		}
	}
	return nil
}

// dropAll drops every database this invocation created and has not dropped yet.
func (s *server) dropAll(ctx context.Context) {
	for len(s.created) > 0 {
		name := s.created[len(s.created)-1]
		if err := s.drop(ctx, name); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			s.created = s.created[:len(s.created)-1]
		}
	}
}

// snapshotTable is one table of a catalog snapshot: its name and the columns saved.
type snapshotTable struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
}

// snapshotCatalog saves the rows of every table of the public schema (goose's version table
// excepted: Migrate fills it; generated columns left out: PostgreSQL computes them) into
// dir/<table>.copy in COPY text format, and returns the tables.
func snapshotCatalog(ctx context.Context, databaseURL, dir string) ([]snapshotTable, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("snapshot catalog: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, _ := conn.Query(ctx, `
		SELECT c.table_name, array_agg(c.column_name::text ORDER BY c.ordinal_position)
		FROM information_schema.columns c
		JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.table_name <> 'goose_db_version'
			AND c.is_generated = 'NEVER'
		GROUP BY c.table_name ORDER BY c.table_name`)
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[snapshotTable])
	if err != nil {
		return nil, fmt.Errorf("snapshot catalog: list tables: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, t := range tables {
		if err := copyOut(ctx, conn, t, filepath.Join(dir, t.Name+".copy")); err != nil {
			return nil, fmt.Errorf("snapshot catalog: table %s: %w", t.Name, err)
		}
	}
	return tables, nil
}

func columnList(t snapshotTable) string {
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(cols, ", ")
}

func copyOut(ctx context.Context, conn *pgx.Conn, t snapshotTable, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = conn.PgConn().CopyTo(ctx, w, "COPY "+pgx.Identifier{t.Name}.Sanitize()+" ("+columnList(t)+") TO STDOUT")
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// restoreCatalog loads a snapshot written by snapshotCatalog into a migrated, empty catalog and
// moves every identity sequence past the restored IDs. Foreign keys are not checked while
// loading (session_replication_role = replica, superuser only), so the table order is free.
func restoreCatalog(ctx context.Context, databaseURL, dir string, tables []snapshotTable) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("restore catalog: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SET session_replication_role = replica"); err != nil {
		return fmt.Errorf("restore catalog: %w", err)
	}
	for _, t := range tables {
		// A migration may have seeded the table (compaction_debt_settings' one row): the
		// snapshot's rows replace what it holds.
		if _, err := conn.Exec(ctx, "DELETE FROM "+pgx.Identifier{t.Name}.Sanitize()); err != nil {
			return fmt.Errorf("restore catalog: table %s: %w", t.Name, err)
		}
		if err := copyIn(ctx, conn, t, filepath.Join(dir, t.Name+".copy")); err != nil {
			return fmt.Errorf("restore catalog: table %s: %w (the catalog schema may have changed since the dataset was generated: rerun with -regen)", t.Name, err)
		}
	}
	rows, _ := conn.Query(ctx, `
		SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = 'public' AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`)
	type serial struct{ Table, Column string }
	serials, err := pgx.CollectRows(rows, pgx.RowToStructByPos[serial])
	if err != nil {
		return fmt.Errorf("restore catalog: list identity columns: %w", err)
	}
	for _, s := range serials {
		tbl, col := pgx.Identifier{s.Table}.Sanitize(), pgx.Identifier{s.Column}.Sanitize()
		_, err := conn.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(`+col+`) FROM `+tbl+`), 0) + 1, false)`,
			tbl, s.Column)
		if err != nil {
			return fmt.Errorf("restore catalog: reset sequence of %s.%s: %w", s.Table, s.Column, err)
		}
	}
	return nil
}

func copyIn(ctx context.Context, conn *pgx.Conn, t snapshotTable, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = conn.PgConn().CopyFrom(ctx, bufio.NewReaderSize(f, 1<<20), "COPY "+pgx.Identifier{t.Name}.Sanitize()+" ("+columnList(t)+") FROM STDIN")
	return err
}
