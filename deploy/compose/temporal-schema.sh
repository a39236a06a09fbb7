#!/bin/sh
# Temporal's persistence on PostgreSQL, set up by the temporalio/admin-tools job of
# docker-compose.yml before the server starts: creates the databases "temporal" and
# "temporal_visibility" and sets up or upgrades their schemas with temporal-sql-tool, using the
# schemas built into the tool (--schema-name), so that they match the tool's server version.
#
# Connection from the tool's own variables: SQL_PLUGIN (postgres12), SQL_HOST, SQL_PORT,
# SQL_USER, SQL_PASSWORD. Safe to run again on every `docker compose up`: `create` ignores a
# database that exists, `setup-schema -v 0.0` leaves a set-up schema alone and `update-schema`
# applies only the versions that are missing (checked against temporal-sql-tool 1.29.1).
set -eu
: "${SQL_HOST:?SQL_HOST must name the PostgreSQL host}"
export SQL_PLUGIN="${SQL_PLUGIN:-postgres12}"

for db in temporal:temporal temporal_visibility:visibility; do
  name="${db%%:*}"
  schema="postgresql/v12/${db#*:}"
  echo "temporal-schema: database $name, schema $schema"
  temporal-sql-tool --db "$name" create
  temporal-sql-tool --db "$name" setup-schema -v 0.0
  temporal-sql-tool --db "$name" update-schema --schema-name "$schema"
done
echo "temporal-schema: done"
