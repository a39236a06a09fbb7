# shellcheck shell=bash
# Common settings of storeopt's scripts; sourced, not run.

STOREOPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STOREOPT_CACHE="${STOREOPT_CACHE:-$HOME/.cache/storeopt}"
TEMPORAL_CLI_VERSION="v1.5.1"
export STOREOPT_ROOT STOREOPT_CACHE TEMPORAL_CLI_VERSION

log() { printf '[storeopt] %s\n' "$*" >&2; }
die() { printf '[storeopt] error: %s\n' "$*" >&2; exit 2; }

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
