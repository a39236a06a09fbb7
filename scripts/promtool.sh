#!/usr/bin/env bash
# Prints the path of a promtool binary, Prometheus' checker, which the metrics tests use to lint
# the worker's /metrics (promtool check metrics), the compose stack's Prometheus configuration
# (check config) and the Grafana dashboard's queries (check rules). Order: $STOREOPT_PROMTOOL if
# set, else the cached copy ${STOREOPT_CACHE:-~/.cache/storeopt}/bin/promtool, else promtool on
# PATH, else it is taken once from Debian's prometheus package (apt-get download, about 19 MB;
# nothing is installed: only the promtool binary is extracted into the cache).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -n "${STOREOPT_PROMTOOL:-}" ]]; then
  [[ -x "$STOREOPT_PROMTOOL" ]] || die "STOREOPT_PROMTOOL=$STOREOPT_PROMTOOL is not an executable"
  echo "$STOREOPT_PROMTOOL"
  exit 0
fi
bindir="$STOREOPT_CACHE/bin"
bin="$bindir/promtool"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi
if command -v promtool >/dev/null; then
  command -v promtool
  exit 0
fi
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
  || die "promtool not found and no apt-get/dpkg-deb to take it from Debian's prometheus package"
mkdir -p "$bindir"
(
  exec 9>"$bindir/.promtool.lock"
  if command -v flock >/dev/null; then flock 9; fi
  if [[ ! -x "$bin" ]]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp" # apt's download user must be able to write there
    log "taking promtool from Debian's prometheus package into $bin (once)"
    if ! (cd "$tmp" && apt-get download prometheus) >&2; then
      log "apt-get download failed; updating the package lists once"
      apt-get update >&2 || die "apt-get update failed"
      (cd "$tmp" && apt-get download prometheus) >&2 || die "apt-get download prometheus failed"
    fi
    dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x" || die "extracting the prometheus package failed"
    mv "$tmp/x/usr/bin/promtool" "$bin"
    log "$("$bin" --version 2>&1 | head -1)"
  fi
) || exit $?
echo "$bin"
