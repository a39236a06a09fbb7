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
	q := fmt.Sprintf("COPY (SELECT * FROM read_parquet(%s) ORDER BY timestamp_ns) TO %s (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1048576)",
		sqlString(spec.InputGlob), sqlString(out))
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return jobResult{}, fmt.Errorf("%s: %w", q, err)
	}
	t.done("copy")
	return jobResult{OutputFiles: []string{out}, Phases: t.phases}, nil
}
