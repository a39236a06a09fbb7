#!/usr/bin/env bash
# Starts the Temporal dev server (gRPC 127.0.0.1:7233, Web UI http://127.0.0.1:8233, state kept in
# ${STOREOPT_CACHE}/temporal.db, search attribute StoreoptTopicLocator registered) in the background
# unless something already listens on 7233, then waits until the cluster is SERVING.
# Log: ${STOREOPT_CACHE}/temporal-server.log. Stop it with: kill "$(cat ${STOREOPT_CACHE}/temporal-server.pid)".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

temporal="$("$STOREOPT_ROOT/scripts/temporal-cli.sh")"
mkdir -p "$STOREOPT_CACHE"
logfile="$STOREOPT_CACHE/temporal-server.log"
pidfile="$STOREOPT_CACHE/temporal-server.pid"

if port_open 127.0.0.1 7233; then
  log "something already listens on 127.0.0.1:7233; using it"
else
  log "starting Temporal dev server (log: $logfile)"
  nohup "$temporal" server start-dev \
    --ip 127.0.0.1 --port 7233 --ui-port 8233 \
    --db-filename "$STOREOPT_CACHE/temporal.db" \
    --search-attribute StoreoptTopicLocator=Keyword \
    --log-level warn \
    >"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
fi

for _ in $(seq 1 120); do
  if "$temporal" operator cluster health --address 127.0.0.1:7233 2>/dev/null | grep -q SERVING; then
    log "Temporal is serving at 127.0.0.1:7233; Web UI http://127.0.0.1:8233"
    exit 0
  fi
  if [[ -f "$pidfile" ]] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null && ! port_open 127.0.0.1 7233; then
    tail -n 20 "$logfile" >&2 || true
    die "the Temporal dev server exited (see $logfile)"
  fi
  sleep 0.5
done
die "Temporal at 127.0.0.1:7233 is not SERVING after 60 s (see $logfile)"
