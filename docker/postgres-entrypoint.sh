#!/bin/sh
# First start: initialise $PGDATA with the superuser $POSTGRES_USER (password $POSTGRES_PASSWORD,
# scram-sha-256 over TCP) and an empty database $POSTGRES_DB. Every start: run the server in the
# foreground on all interfaces, TCP only (no Unix socket: the root filesystem may be read-only).
set -eu
bin=/usr/lib/postgresql/15/bin
user="${POSTGRES_USER:-citedocs}"
db="${POSTGRES_DB:-citedocs}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "POSTGRES_PASSWORD is not set: set it (the same password goes into CITEDOCS_DATABASE_URL)" >&2
    exit 2
  fi
  pwfile="$(mktemp)"
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  "$bin/initdb" -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=peer --auth-host=scram-sha-256 \
    --encoding=UTF8 --no-instructions >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "CREATE DATABASE \"$db\"" | "$bin/postgres" --single -D "$PGDATA" -j postgres >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories='' "$@"
