#!/usr/bin/env bash
# The bench (bench/, a module of its own that `go test ./...` does not reach) on a tiny dataset of
# each shape, twice: the first invocation generates the datasets and snapshots their catalogs,
# the second restores the snapshots; both run the read and storeopt jobs and check every output
# (rows, global order, metadata), so a bench that no longer builds, generates or restores fails
# here rather than in the hands of the next person measuring; then the storeopt job on a tiny
# IMU dataset of disjoint chunks (-overlap 0), whose output must all take the copy path, and on
# one of chunks recorded with a page index, whose output must all pass through; then
# the readers bench on the first datasets (topicread only: no DuckDB here), whose window reads
# compare their row counts. Also the bench's unit tests. Built
# without DuckDB (tag noduckdb: no cgo link of a 100 MB library); about 30 s. Needs PostgreSQL at
# 127.0.0.1:5432 (scripts/ensure-postgres.sh). Then a short fleet bench (2 robots for 20 s, auto
# every 5 s, about 40 s) against a Temporal dev server of its own (the Temporal CLI of
# scripts/temporal-cli.sh): compaction keeps up, every topic ends as one sorted run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STOREOPT_ROOT"

data="$(mktemp -d)"
server_pid=""
trap '[[ -z "$server_pid" ]] || kill "$server_pid" 2>/dev/null || true; rm -rf "$data"' EXIT
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

# Disjoint, sorted chunks taken whole: what the copy path writes, every output byte of it.
log "bench smoke (copy path, -overlap 0)"
"$data/bench" -shape imu -size 4000000 -chunks 20 -overlap 0 -runs 1 -jobs storeopt -data "$data/sets" >"$data/out" 2>"$data/err" || {
  cat "$data/err" >&2
  die "bench smoke (copy path) failed"
}
grep -q "storeopt imu: output by path: .*; cpu s/GB is the copy path's" "$data/out" || {
  cat "$data/out" >&2
  die "bench smoke (copy path): the output of disjoint sorted chunks did not all take the copy path"
}
cat "$data/out" >&2

# Disjoint, sorted chunks recorded with a page index, each more than half an output: what the
# pass-through path keeps, every output byte of it.
log "bench smoke (pass-through path, -page-index)"
"$data/bench" -shape imu -size 4000000 -chunks 4 -overlap 0 -page-index -row-group-rows 4096 -max-chunk-size 1200000 \
  -runs 1 -jobs storeopt -data "$data/sets" >"$data/out" 2>"$data/err" || {
  cat "$data/err" >&2
  die "bench smoke (pass-through path) failed"
}
grep -q "storeopt imu: output by path: .*; cpu s/GB is the pass-through path's" "$data/out" || {
  cat "$data/out" >&2
  die "bench smoke (pass-through path): the output of such chunks did not all take the pass-through path"
}
cat "$data/out" >&2

log "bench smoke (readers)"
"$data/bench" -readers -shape all -size 4000000 -chunks 20 -data "$data/sets" >"$data/out" 2>"$data/err" || {
  cat "$data/err" >&2
  die "bench smoke (readers) failed"
}
cat "$data/out" >&2

log "bench smoke (fleet)"
temporal="$("$STOREOPT_ROOT/scripts/temporal-cli.sh")"
port=$((20000 + RANDOM % 20000))
"$temporal" server start-dev --ip 127.0.0.1 --port "$port" --ui-port $((port + 1)) --headless \
  --search-attribute StoreoptTopicLocator=Keyword --log-level error >"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 120); do
  "$temporal" operator cluster health --address "127.0.0.1:$port" 2>/dev/null | grep -q SERVING && break
  sleep 0.5
done
"$data/bench" -jobs fleet -fleet-robots 2 -fleet-duration 20s -fleet-schedule 5s -temporal-address "127.0.0.1:$port" \
  -data "$data/sets" >"$data/fleet" 2>"$data/err" || {
  cat "$data/fleet" "$data/err" >&2
  die "bench smoke (fleet) failed"
}
cat "$data/fleet" >&2
