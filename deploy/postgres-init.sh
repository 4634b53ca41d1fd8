#!/bin/sh
# Runs once, when the Postgres volume is first initialised (docker-entrypoint-initdb.d), as the
# superuser. Each part gets its own role with the least it needs:
#   partner_api_owner   owns the service's database and its schema: the migration job only
#   partner_api_app     reads and writes rows (the API and the worker): no DDL, no TRUNCATE; the
#                       migrations take UPDATE and DELETE on the ledger and the audit trail away
#   partner_api_search  reads the inventory (the search process): SELECT on `domains` only, which
#                       the migrations grant
#   partner_api_ui_gate appends to the audit trail (the operators' Temporal UI gate): INSERT on
#                       `operator_actions` only, which the migrations grant
#   temporal            owns Temporal's own databases (it creates them at setup), nothing else
# Passwords come from the environment (docker-compose.yml requires each), passed to psql as
# variables and quoted by it (:'name'), so any character in them is taken as it is.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_password="$PARTNER_API_OWNER_PASSWORD" \
  -v app_password="$PARTNER_API_APP_PASSWORD" \
  -v search_password="$PARTNER_API_SEARCH_PASSWORD" \
  -v ui_gate_password="$PARTNER_API_UI_GATE_PASSWORD" \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE partner_api_owner LOGIN PASSWORD :'owner_password';
CREATE ROLE partner_api_app LOGIN PASSWORD :'app_password';
CREATE ROLE partner_api_search LOGIN PASSWORD :'search_password';
CREATE ROLE partner_api_ui_gate LOGIN PASSWORD :'ui_gate_password';
CREATE ROLE temporal LOGIN CREATEDB PASSWORD :'temporal_password';
CREATE DATABASE partner_api OWNER partner_api_owner;
REVOKE ALL ON DATABASE partner_api FROM PUBLIC;
GRANT CONNECT ON DATABASE partner_api TO partner_api_app, partner_api_search, partner_api_ui_gate;
SQL
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname partner_api <<'SQL'
ALTER SCHEMA public OWNER TO partner_api_owner;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO partner_api_app, partner_api_search, partner_api_ui_gate;
-- Whatever the migrations create from now on (the search role gets its one table by migration).
ALTER DEFAULT PRIVILEGES FOR ROLE partner_api_owner IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO partner_api_app;
ALTER DEFAULT PRIVILEGES FOR ROLE partner_api_owner IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO partner_api_app;
SQL
