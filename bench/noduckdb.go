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
