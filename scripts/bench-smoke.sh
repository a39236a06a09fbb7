#!/usr/bin/env bash
# The bench (bench/, a module of its own that `go test ./...` does not reach) on a tiny dataset of
# each shape, twice: the first invocation generates the datasets and snapshots their catalogs,
# the second restores the snapshots; both run the read and storeopt jobs and check every output
# (rows, global order, metadata), so a bench that no longer builds, generates or restores fails
# here rather than in the hands of the next person measuring. Also the bench's unit tests. Built
# without DuckDB (tag noduckdb: no cgo link of a 100 MB library); about 30 s. Needs PostgreSQL at
# 127.0.0.1:5432 (scripts/ensure-postgres.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STOREOPT_ROOT"

data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT
go -C bench vet -tags noduckdb .
go -C bench test -tags noduckdb -count=1 .
go -C bench build -tags noduckdb -o "$data/bench" .
for pass in generate restore; do
  log "bench smoke ($pass)"
  "$data/bench" -shape all -size 4000000 -chunks 20 -runs 1 -jobs read,storeopt -data "$data/sets" >"$data/out" 2>"$data/err" || {
    cat "$data/err" >&2
    die "bench smoke ($pass) failed"
  }
done
cat "$data/out" >&2
