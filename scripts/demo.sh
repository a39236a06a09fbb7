#!/usr/bin/env bash
# storeopt quick start, first command: a complete optimization on this machine.
#
#  1. builds (once) the Temporal CLI, makes sure PostgreSQL runs and starts the Temporal dev server
#     (left running: Web UI http://127.0.0.1:8233);
#  2. migrates the catalog and ingests the demo dataset under a fresh sequence name: three topics of
#     many small Parquet chunks (about 550 MB at DEMO_SCALE=1; DEMO_SCALE=0.1 for a quick look);
#  3. starts a worker in the background (log in demo-data/), runs one optimization pass with
#     `starter store-optimizer --scope sequence:<the demo's sequence>` and stops the worker;
#  4. prints per topic: chunks, bytes and seconds to read the whole topic, before and after.
#
# Environment: DEMO_SCALE (default 1), STOREOPT_DATABASE_URL, STOREOPT_STORE_URL (default
# file://<repo>/demo-data/store), STOREOPT_MEMORY_POOL_SIZE, STOREOPT_CACHE. Exit status: that of
# the optimization pass (1 if a topic failed), 2 on a setup error.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STOREOPT_ROOT"

scale="${DEMO_SCALE:-1}"
data="$STOREOPT_ROOT/demo-data"
export STOREOPT_DATABASE_URL="${STOREOPT_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/storeopt?sslmode=disable}"
export STOREOPT_STORE_URL="${STOREOPT_STORE_URL:-file://$data/store}"
mkdir -p "$data" bin

scripts/temporal-cli.sh >/dev/null
scripts/ensure-postgres.sh
scripts/dev-server.sh

log "building worker and starter"
go build -o bin/ ./worker ./starter

bin/starter migrate
sequence="demo_$(date -u +%Y%m%dT%H%M%S)"
log "ingesting the demo dataset as sequence $sequence (scale $scale)"
SECONDS=0
bin/starter ingest --preset demo --scale "$scale" --sequence "$sequence"
log "ingested in ${SECONDS}s"
before="$data/$sequence-before.json"
bin/starter report --sequence "$sequence" --json >"$before"

worker_log="$data/worker-$sequence.log"
log "starting a worker (log: $worker_log)"
bin/worker >"$worker_log" 2>&1 &
worker_pid=$!
stop_worker() {
  if kill -0 "$worker_pid" 2>/dev/null; then
    kill -TERM "$worker_pid" 2>/dev/null || true
    wait "$worker_pid" 2>/dev/null || true
  fi
}
trap stop_worker EXIT

# Scoped to the demo's sequence: the catalog database may hold other topics (earlier demos, other
# checkouts whose stores are elsewhere), which this pass must neither touch nor fail on.
log "running one optimization pass over sequence $sequence"
SECONDS=0
status=0
bin/starter store-optimizer --scope "sequence:$sequence" || status=$?
log "optimization pass finished in ${SECONDS}s (exit status $status)"
stop_worker
if [[ $status -ge 2 ]]; then
  tail -n 20 "$worker_log" >&2 || true
  exit "$status"
fi

echo
echo "Before/after for sequence $sequence (read = fetch and decode every chunk with pqarrow):"
bin/starter report --sequence "$sequence" --before "$before"
echo
echo "Temporal Web UI: http://127.0.0.1:8233  (workflow IDs storeopt-run-… and storeopt-topic:${STOREOPT_TASK_QUEUE:-storeopt}:$sequence/…;"
echo "  a topic of 1 MiB or less has no workflow of its own: it is in the run's OptimizeSmallTopics batch)"
echo "The dev server keeps running; stop it with: kill \$(cat $STOREOPT_CACHE/temporal-server.pid)"
exit "$status"
