#!/usr/bin/env bash
# Checks docker-compose.yml without a Docker engine: validates it against the compose
# specification's JSON schema and lints it with dclint (npm package, version below, installed once
# into ${STOREOPT_CACHE:-~/.cache/storeopt}/npm/dclint), warnings included. What the services run
# is checked by the Go test e2e.TestComposeServicesOutsideDocker (the schema job with
# temporal-sql-tool, the S3 gateway's script, the namespace job with the temporal CLI, the worker
# and starter with the compose environment).
# Without node/npm this fails under CI=1 and is skipped otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STOREOPT_ROOT"

DCLINT_VERSION="3.1.0"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  [[ -z "${CI:-}" ]] || die "node and npm are needed to lint docker-compose.yml (dclint)"
  log "node/npm not installed: docker-compose.yml not linted (CI fails here)"
  exit 0
fi
prefix="$STOREOPT_CACHE/npm/dclint-$DCLINT_VERSION"
dclint="$prefix/node_modules/.bin/dclint"
if [[ ! -x "$dclint" ]]; then
  mkdir -p "$prefix"
  exec 9>"$prefix/.install.lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [[ ! -x "$dclint" ]]; then
    log "installing dclint $DCLINT_VERSION into $prefix (once)"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "dclint@$DCLINT_VERSION" >&2 \
      || die "installing dclint failed"
  fi
fi
log "dclint docker-compose.yml"
"$dclint" docker-compose.yml --max-warnings 0 --color false
