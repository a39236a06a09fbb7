#!/bin/sh
# The S3 object store of docker-compose.yml: the Versity S3 gateway (versity/versitygw image) on a
# posix directory, S3_ROOT (default /data, a volume), whose folders are the buckets. Creates the
# bucket S3_BUCKET (default storeopt) as a folder, then serves S3 on S3_LISTEN (default :7070)
# with a health endpoint at /health. Root credentials come from ROOT_ACCESS_KEY and
# ROOT_SECRET_KEY, read by the gateway itself.
set -eu
: "${ROOT_ACCESS_KEY:?ROOT_ACCESS_KEY must be set}" "${ROOT_SECRET_KEY:?ROOT_SECRET_KEY must be set}"
root="${S3_ROOT:-/data}"
mkdir -p "$root/${S3_BUCKET:-storeopt}"
exec versitygw --port "${S3_LISTEN:-:7070}" --health /health --quiet posix "$root"
