#!/usr/bin/env bash
# Prints the path of a Temporal CLI v1.5.1 binary (server start-dev, workflow, operator…).
# Order: $STOREOPT_TEMPORAL_CLI if set, else the cached build ${STOREOPT_CACHE:-~/.cache/storeopt}/bin/temporal,
# which is built once with `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` (about
# 7 minutes on 2 cores; the module stays out of storeopt's go.mod).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -n "${STOREOPT_TEMPORAL_CLI:-}" ]]; then
  [[ -x "$STOREOPT_TEMPORAL_CLI" ]] || die "STOREOPT_TEMPORAL_CLI=$STOREOPT_TEMPORAL_CLI is not an executable"
  echo "$STOREOPT_TEMPORAL_CLI"
  exit 0
fi

bindir="$STOREOPT_CACHE/bin"
bin="$bindir/temporal"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go is not installed: it is needed to build the Temporal CLI"
mkdir -p "$bindir"
# One build at a time, even when several scripts start together.
exec 9>"$bindir/.temporal-build.lock"
if command -v flock >/dev/null; then flock 9; fi
if [[ ! -x "$bin" ]]; then
  log "building Temporal CLI $TEMPORAL_CLI_VERSION into $bin (once; several minutes)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # Built from a directory outside the repository, so storeopt's go.mod is not touched.
  (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$tmp" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION") >&2 \
    || die "building the Temporal CLI failed"
  mv "$tmp/temporal" "$bin"
fi
echo "$bin"
