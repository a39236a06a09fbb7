#!/usr/bin/env bash
# Prints the path of a temporal-sql-tool binary of Temporal server v1.29.1, the tool the
# temporalio/admin-tools image runs in docker-compose.yml's temporal-schema job; the compose test
# runs that job's script with it against a PostgreSQL server of its own.
# Order: $STOREOPT_TEMPORAL_SQL_TOOL if set, else the cached build
# ${STOREOPT_CACHE:-~/.cache/storeopt}/bin/temporal-sql-tool, which is built once with
# `go install go.temporal.io/server/cmd/tools/sql@v1.29.1` (a few minutes on 2 cores, most
# modules shared with the Temporal CLI's build; the module stays out of storeopt's go.mod).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cached_go_binary temporal-sql-tool go.temporal.io/server/cmd/tools/sql "$TEMPORAL_SERVER_VERSION" \
  STOREOPT_TEMPORAL_SQL_TOOL "temporal-sql-tool" "a few minutes"
