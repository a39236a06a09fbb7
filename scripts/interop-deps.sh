#!/usr/bin/env bash
# Prints the node_modules folder holding the real Parquet tools of the interop check
# (e2e/interop_test.go): nodejs-polars and DuckDB's Node API as pinned by
# e2e/testdata/interop/package-lock.json. They are installed once with `npm ci` into
# ${STOREOPT_CACHE:-~/.cache/storeopt}/interop/<hash of the lock file>/ (about 40 MB, 20 s) and
# reused while the lock file does not change.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

src="$STOREOPT_ROOT/e2e/testdata/interop"
command -v npm >/dev/null || die "npm is not installed: it is needed for the interop check's polars and DuckDB"
hash="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
dir="$STOREOPT_CACHE/interop/$hash"
if [[ ! -d "$dir/node_modules" ]]; then
  mkdir -p "$STOREOPT_CACHE/interop"
  exec 9>"$STOREOPT_CACHE/interop/.install.lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [[ ! -d "$dir/node_modules" ]]; then
    log "installing the interop check's Node.js packages into $dir (once)"
    tmp="$(mktemp -d "$STOREOPT_CACHE/interop/.tmp.XXXXXX")"
    cp "$src/package.json" "$src/package-lock.json" "$tmp/"
    (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error) >&2 || { rm -rf "$tmp"; die "npm ci of the interop packages failed"; }
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
fi
echo "$dir/node_modules"
