#!/usr/bin/env bash
# Prints the path of a Temporal CLI v1.5.1 binary (server start-dev, workflow, operator…).
# Order: $STOREOPT_TEMPORAL_CLI if set, else the cached build ${STOREOPT_CACHE:-~/.cache/storeopt}/bin/temporal,
# which is built once with `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` (about
# 7 minutes on 2 cores; the module stays out of storeopt's go.mod).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cached_go_binary temporal github.com/temporalio/cli/cmd/temporal "$TEMPORAL_CLI_VERSION" \
  STOREOPT_TEMPORAL_CLI "the Temporal CLI" "several minutes"
