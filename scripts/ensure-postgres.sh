#!/usr/bin/env bash
# Makes sure PostgreSQL accepts connections at $PGHOST:$PGPORT (127.0.0.1:5432) and that the
# catalog database ($STOREOPT_DB_NAME, default storeopt) exists. Starts the local cluster with
# pg_ctlcluster when it is down (Debian/Ubuntu layout). The catalog schema itself is created by
# `starter migrate` / the worker.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

host="${PGHOST:-127.0.0.1}"
port="${PGPORT:-5432}"
user="${PGUSER:-postgres}"
db="${STOREOPT_DB_NAME:-storeopt}"

ready() { pg_isready -q -h "$host" -p "$port"; }

if ! ready; then
  command -v pg_ctlcluster >/dev/null || die "PostgreSQL is not running at $host:$port and pg_ctlcluster is not available; start it (or use docker-compose)"
  version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)"
  [[ -n "$version" ]] || die "no cluster under /etc/postgresql"
  log "starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 60); do ready && break; sleep 0.5; done
  ready || die "PostgreSQL did not become ready at $host:$port"
fi

exists="$(psql -h "$host" -p "$port" -U "$user" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" \
  || die "cannot query PostgreSQL at $host:$port as $user"
if [[ "$exists" != "1" ]]; then
  log "creating database $db"
  # Two runs starting at once (a developer's and CI's) may both see it missing: the loser's
  # CREATE fails, which is fine when the database exists afterwards.
  if ! psql -h "$host" -p "$port" -U "$user" -d postgres -qc "CREATE DATABASE \"$db\"" 2>/dev/null; then
    exists="$(psql -h "$host" -p "$port" -U "$user" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" || true
    [[ "$exists" == "1" ]] || die "cannot create database $db"
  fi
fi
