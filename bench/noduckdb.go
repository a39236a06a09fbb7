//go:build noduckdb

package main

import (
	"context"
	"errors"
)

// hasDuckDB is false in the job binary, built with the tag noduckdb (see duckdb.go).
const hasDuckDB = false

func duckdbJob(context.Context, jobSpec) (jobResult, error) {
	return jobResult{}, errors.New("this bench binary was built without DuckDB (tag noduckdb)")
}

func duckdbSort(context.Context, []string, string) (rows, lo, hi int64, err error) {
	return 0, 0, 0, errors.New("this bench binary was built without DuckDB (tag noduckdb)")
}

func duckdbWindow(context.Context, []string, int64, int64) (int64, error) {
	return 0, errors.New("this bench binary was built without DuckDB (tag noduckdb)")
}
