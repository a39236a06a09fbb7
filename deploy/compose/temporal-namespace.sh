#!/bin/sh
# The namespace storeopt runs in, set up by the temporalio/admin-tools job of docker-compose.yml
# once the server answers (the server image, unlike the deprecated auto-setup image, creates no
# namespace): waits until the frontend at TEMPORAL_ADDRESS is healthy, creates the namespace
# TEMPORAL_NAMESPACE (retention NAMESPACE_RETENTION, default 72h) unless it exists, and registers
# storeopt's search attribute StoreoptTopicLocator (Keyword) unless it is there. Safe to run
# again. Uses the temporal CLI of the image (or of PATH).
set -eu
address="${TEMPORAL_ADDRESS:?TEMPORAL_ADDRESS must name the Temporal frontend}"
namespace="${TEMPORAL_NAMESPACE:-default}"
attempts="${WAIT_ATTEMPTS:-90}"

# retry WHAT COMMAND...: runs COMMAND until it succeeds, every 2 s, at most $attempts times.
retry() {
  what="$1"
  shift
  i=1
  until "$@" >/dev/null 2>&1; do
    if [ "$i" -ge "$attempts" ]; then
      echo "temporal-namespace: $what: still failing after $attempts attempts:" >&2
      "$@" >&2 || true
      exit 1
    fi
    i=$((i + 1))
    sleep 2
  done
}

has_search_attribute() {
  temporal operator search-attribute list --address "$address" --namespace "$namespace" 2>/dev/null | grep -q StoreoptTopicLocator
}

retry "wait for Temporal at $address" temporal operator cluster health --address "$address"
if temporal operator namespace describe --address "$address" --namespace "$namespace" >/dev/null 2>&1; then
  echo "temporal-namespace: namespace $namespace exists"
else
  retry "create namespace $namespace" temporal operator namespace create --address "$address" \
    --namespace "$namespace" --retention "${NAMESPACE_RETENTION:-72h}"
  echo "temporal-namespace: namespace $namespace created"
fi
# A new namespace takes a few seconds to reach every frontend cache: retried.
if has_search_attribute; then
  echo "temporal-namespace: search attribute StoreoptTopicLocator exists"
else
  retry "register search attribute StoreoptTopicLocator" temporal operator search-attribute create \
    --address "$address" --namespace "$namespace" --name StoreoptTopicLocator --type Keyword
  echo "temporal-namespace: search attribute StoreoptTopicLocator registered"
fi
