#!/usr/bin/env bash
# storeopt quick start, second command: every check CI runs.
#
# Builds (once) the Temporal CLI the integration tests start their dev servers from, the Versity S3
# gateway the S3 tests start and the temporal-sql-tool the compose test runs, makes sure PostgreSQL
# runs, then: go vet, the docker-compose.yml check (scripts/compose-check.sh), the workflow
# determinism check (scripts/workflowcheck.sh) and go test over every package. Extra arguments go to `go test`
# (e.g. -run TestX -v ./app); without a package argument all packages (./...) are tested, the
# bench runs on a tiny dataset (scripts/bench-smoke.sh) and the race detector runs over the
# packages that start goroutines (go test -race, below).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STOREOPT_ROOT"

STOREOPT_TEMPORAL_CLI="$(scripts/temporal-cli.sh)"
export STOREOPT_TEMPORAL_CLI
STOREOPT_VERSITYGW="$(scripts/versitygw.sh)"
export STOREOPT_VERSITYGW
STOREOPT_TEMPORAL_SQL_TOOL="$(scripts/temporal-sql-tool.sh)"
export STOREOPT_TEMPORAL_SQL_TOOL
# Prometheus' promtool lints the worker's /metrics, the compose stack's Prometheus configuration
# and the Grafana dashboard's queries (taken once from Debian's prometheus package).
STOREOPT_PROMTOOL="$(scripts/promtool.sh)"
export STOREOPT_PROMTOOL
# The interop check (e2e/interop_test.go) reads topics back with the tools that wrote them:
# nodejs-polars and DuckDB, installed once into the cache. Without npm it is skipped (failed
# under CI).
if STOREOPT_INTEROP_NODE_PATH="$(scripts/interop-deps.sh)"; then
  export STOREOPT_INTEROP_NODE_PATH
else
  log "interop tools not installed: the interop check will skip (fail under CI)"
fi
scripts/ensure-postgres.sh

# The tests are built with the fault-injection points compiled in (package faults); they stay
# inert unless a test sets STOREOPT_FAULTS. Production builds leave the tag out.
tags=(-tags storeopt_faults)
log "go vet ./..."
go vet ./...
go vet "${tags[@]}" ./...

log "docker-compose.yml"
scripts/compose-check.sh

if [[ -x scripts/workflowcheck.sh ]]; then
  log "workflowcheck"
  scripts/workflowcheck.sh
fi

packages=(./...)
for arg in "$@"; do
  case "$arg" in
    ./* | github.com/*) packages=() ;;
  esac
done
log "go test ${*} ${packages[*]}"
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
status=0
STOREOPT_FAULT_SUITE_REPORT="$report" go test "${tags[@]}" -count=1 -timeout 20m "$@" "${packages[@]}" || status=$?
# The whole suite also runs the bench on a tiny dataset (bench/ is a module of its own).
if [[ ${#packages[@]} -gt 0 ]]; then
  scripts/bench-smoke.sh || status=$?
fi
# The whole suite also runs the race detector over the packages whose code starts goroutines or
# shares state between them, or whose tests drive it from several goroutines: activities (ReadSort's
# scans, WriteChunks' reader, merger and encoder, heartbeats), app (the worker, the read bench),
# catalog (concurrent leases and commits), compaction (the write pipeline), faults (hit counters),
# internal/pgtest (databases for parallel tests), mempool (the shared pool), metrics (the
# server), panics (recovering goroutines), starter (progress and worker watch), store (byte
# counters and read observer shared by every activity), topicread (a range set read by the
# Parquet reader's goroutines). Left out:
#   e2e        real processes and dev servers for minutes: under -race it would take longer than
#              the whole suite's budget; its worker code is the packages above;
#   workflows  the SDK's deadlock detector (a workflow task that does not yield for 1 s fails)
#              trips under -race's slowdown; workflow code starts no goroutine of its own;
#   ingest     test-data tooling whose scale tests write large datasets: minutes under -race;
#   parquetio  its tests decode and encode large files (minutes under -race); its shared state
#              (zstd encoder pools) is used by compaction's and activities' tests above;
#   merge, uploads, verify, plan, policy, estimate, chunkstats, internal/arrowtypes,
#              internal/redact, internal/testrows: no goroutine, no state shared between
#              goroutines (merge runs inside compaction's pipeline, tested above);
#   internal/testenv  test infrastructure: its worker is app.RunWorker (app above), its TLS
#              proxy serves e2e only.
if [[ ${#packages[@]} -gt 0 ]]; then
  log "go test -race (packages with goroutines)"
  go test -race "${tags[@]}" -count=1 -timeout 20m ./activities ./app ./catalog ./compaction ./faults \
    ./internal/pgtest ./mempool ./metrics ./panics ./starter ./store ./topicread || status=$?
fi
# The fault suite's summary line (e2e.TestFaultSuite), which go test hides for a passing package.
if [[ -s "$report" ]]; then
  cat "$report"
fi
exit "$status"
