# shellcheck shell=bash
# Common settings of storeopt's scripts; sourced, not run.

STOREOPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STOREOPT_CACHE="${STOREOPT_CACHE:-$HOME/.cache/storeopt}"
TEMPORAL_CLI_VERSION="v1.5.1"
VERSITYGW_VERSION="v1.8.0"
# The Temporal server version of the CLI's dev server and of docker-compose.yml's images.
TEMPORAL_SERVER_VERSION="v1.29.1"
export STOREOPT_ROOT STOREOPT_CACHE TEMPORAL_CLI_VERSION VERSITYGW_VERSION TEMPORAL_SERVER_VERSION

log() { printf '[storeopt] %s\n' "$*" >&2; }
die() { printf '[storeopt] error: %s\n' "$*" >&2; exit 2; }

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# cached_go_binary NAME MODULE_PATH VERSION ENV_VAR WHAT MINUTES: prints the path of the binary NAME
# of the Go command MODULE_PATH@VERSION (go install names it after the last path element; it is
# cached as NAME). Order: $ENV_VAR if set, else the cached build
# $STOREOPT_CACHE/bin/NAME, which is built once with `go install MODULE_PATH@VERSION` from a
# directory outside the repository (the module stays out of storeopt's go.mod), one build at a
# time even when several scripts start together. WHAT and MINUTES only word the messages.
cached_go_binary() {
  local name="$1" module="$2" version="$3" env_var="$4" what="$5" minutes="$6"
  local override="${!env_var:-}"
  if [[ -n "$override" ]]; then
    [[ -x "$override" ]] || die "$env_var=$override is not an executable"
    echo "$override"
    return 0
  fi
  local bindir="$STOREOPT_CACHE/bin"
  local bin="$bindir/$name"
  if [[ -x "$bin" ]]; then
    echo "$bin"
    return 0
  fi
  command -v go >/dev/null || die "go is not installed: it is needed to build $what"
  mkdir -p "$bindir"
  (
    exec 9>"$bindir/.$name-build.lock"
    if command -v flock >/dev/null; then flock 9; fi
    if [[ ! -x "$bin" ]]; then
      log "building $what $version into $bin (once; $minutes)"
      tmp="$(mktemp -d)"
      trap 'rm -rf "$tmp"' EXIT
      (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$tmp" go install "$module@$version") >&2 \
        || die "building $what failed"
      mv "$tmp/${module##*/}" "$bin"
    fi
  ) || exit $?
  echo "$bin"
}
