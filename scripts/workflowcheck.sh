#!/usr/bin/env bash
# Checks storeopt's workflow code for non-determinism (clocks, random numbers, goroutines, map
# iteration, I/O) with go.temporal.io/sdk/contrib/tools/workflowcheck. Exits non-zero on findings
# or when the tool cannot be built.
#
# Usage: scripts/workflowcheck.sh [packages...]   (default: ./workflows/...)
#
# The tool runs with `go run pkg@version`, which builds it outside our go.mod (cached by Go after
# the first run). If that cannot build it, it is installed once into
# ${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin. GOFLAGS=-mod=mod is only used to build the tool,
# never while it loads our packages, so the check cannot rewrite go.mod or go.sum.
set -euo pipefail

version=v0.6.0
tool=go.temporal.io/sdk/contrib/tools/workflowcheck
bin="${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin"
installed="$bin/workflowcheck-$version"

cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
	set -- ./workflows/...
fi

if [ -x "$installed" ]; then
	exec "$installed" "$@"
fi
# -V=full only prints the version: this tells "cannot build" apart from "found something".
if go run "$tool@$version" -V=full >/dev/null 2>&1; then
	exec go run "$tool@$version" "$@"
fi
echo "workflowcheck: go run $tool@$version failed; installing it into $bin" >&2
mkdir -p "$bin"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
GOFLAGS=-mod=mod GOBIN="$tmp" go install "$tool@$version"
mv "$tmp/workflowcheck" "$installed"
"$installed" "$@"
