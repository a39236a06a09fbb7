//go:build !noduckdb

package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"
)

// hasDuckDB is true in the full bench binary; the job binary (build tag noduckdb) that runs the
// read and storeopt jobs does not link DuckDB, whose static library and initialisation add about
// 35 MiB to the resident set of every process that links it.
const hasDuckDB = true

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// duckdbJob sorts the topic with DuckDB (threads = cores, memory not limited) into one file.
func duckdbJob(ctx context.Context, spec jobSpec) (jobResult, error) {
	t := newPhaseTimer()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return jobResult{}, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return jobResult{}, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET temp_directory = "+sqlString(filepath.Join(spec.OutputDir, "spill"))); err != nil {
		return jobResult{}, err
	}
	out := filepath.Join(spec.OutputDir, "sorted.parquet")
	t.done("open")
	if err := copySorted(ctx, conn, sqlString(spec.InputGlob), out); err != nil {
		return jobResult{}, err
	}
	t.done("copy")
	return jobResult{OutputFiles: []string{out}, Phases: t.phases}, nil
}

// copySorted writes the rows of read_parquet(files) (a SQL glob or list) sorted by timestamp_ns
// into the Parquet file out, as the duckdb job does.
func copySorted(ctx context.Context, conn *sql.Conn, files, out string) error {
	q := fmt.Sprintf("COPY (SELECT * FROM read_parquet(%s) ORDER BY timestamp_ns) TO %s (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1048576)",
		files, sqlString(out))
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// sqlList renders files as a DuckDB list of string literals.
func sqlList(files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = sqlString(f)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// duckdbSort sorts files with DuckDB into out and returns its rows and timestamp range.
func duckdbSort(ctx context.Context, files []string, out string) (rows, lo, hi int64, err error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET temp_directory = "+sqlString(filepath.Join(filepath.Dir(out), "spill"))); err != nil {
		return 0, 0, 0, err
	}
	if err := copySorted(ctx, conn, sqlList(files), out); err != nil {
		return 0, 0, 0, err
	}
	err = conn.QueryRowContext(ctx, "SELECT count(*), min(timestamp_ns), max(timestamp_ns) FROM read_parquet("+sqlString(out)+")").Scan(&rows, &lo, &hi)
	return rows, lo, hi, err
}

// duckdbWindow counts, with a fresh DuckDB (no cache of an earlier read), the rows of files with
// from <= timestamp_ns < to, aggregating every column so that DuckDB reads them all.
func duckdbWindow(ctx context.Context, files []string, from, to int64) (int64, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	q := fmt.Sprintf("SELECT count(*), max(hash(COLUMNS(*))) FROM read_parquet(%s) WHERE timestamp_ns >= %d AND timestamp_ns < %d",
		sqlList(files), from, to)
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("%.200s: %w", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	var n int64
	dest := make([]any, len(cols))
	dest[0] = &n
	for i := 1; i < len(dest); i++ {
		dest[i] = new(any)
	}
	if !rows.Next() {
		return 0, fmt.Errorf("no result: %v", rows.Err())
	}
	if err := rows.Scan(dest...); err != nil {
		return 0, err
	}
	return n, rows.Err()
}
