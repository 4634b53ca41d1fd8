#!/bin/sh
# Runs once, when the Postgres volume is first initialised (docker-entrypoint-initdb.d), as the
# superuser. Each part gets its own role with the least it needs:
#   partner_api_owner   owns the service's database and its schema: the migration job only
#   partner_api_app     reads and writes rows (the API and the worker): no DDL, no TRUNCATE
#   partner_api_search  reads rows (the search process): SELECT only
#   temporal            owns Temporal's own databases (it creates them at setup), nothing else
# Passwords come from the environment (docker-compose.yml requires each).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres <<SQL
CREATE ROLE partner_api_owner LOGIN PASSWORD '${PARTNER_API_OWNER_PASSWORD}';
CREATE ROLE partner_api_app LOGIN PASSWORD '${PARTNER_API_APP_PASSWORD}';
CREATE ROLE partner_api_search LOGIN PASSWORD '${PARTNER_API_SEARCH_PASSWORD}';
CREATE ROLE temporal LOGIN CREATEDB PASSWORD '${TEMPORAL_DB_PASSWORD}';
CREATE DATABASE partner_api OWNER partner_api_owner;
REVOKE ALL ON DATABASE partner_api FROM PUBLIC;
GRANT CONNECT ON DATABASE partner_api TO partner_api_app, partner_api_search;
SQL
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname partner_api <<SQL
ALTER SCHEMA public OWNER TO partner_api_owner;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO partner_api_app, partner_api_search;
-- Whatever the migrations create from now on.
ALTER DEFAULT PRIVILEGES FOR ROLE partner_api_owner IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO partner_api_app;
ALTER DEFAULT PRIVILEGES FOR ROLE partner_api_owner IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO partner_api_app;
ALTER DEFAULT PRIVILEGES FOR ROLE partner_api_owner IN SCHEMA public GRANT SELECT ON TABLES TO partner_api_search;
SQL
