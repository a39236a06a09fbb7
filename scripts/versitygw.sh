#!/usr/bin/env bash
# Prints the path of a Versity S3 gateway binary (versitygw), the S3 server of the S3 tests.
# Order: $STOREOPT_VERSITYGW if set, else the cached build ${STOREOPT_CACHE:-~/.cache/storeopt}/bin/versitygw,
# which is built once with `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` (about
# 1.5 minutes on 2 cores; the module stays out of storeopt's go.mod).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cached_go_binary versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION" \
  STOREOPT_VERSITYGW "the Versity S3 gateway" "about 1.5 minutes"
