#!/usr/bin/env bash
# Starts and stops the real services the test suite needs, on loopback only.
#   eval "$(bash scripts/ci-services.sh start)"   # prints export lines on stdout
#   bash scripts/ci-services.sh stop
#   bash scripts/ci-services.sh restart           # pg_ctl restart -m fast (the fault test's own cluster)
# Logs go to stderr so that stdout stays evaluable.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PGDATA_DIR="${LOCUS_PG_DIR:-/tmp/locus-ci-pg}"
# Below the kernel's ephemeral port range (32768-60999 on Linux), so no outgoing connection can hold it when the cluster starts.
PGPORT="${LOCUS_PG_PORT:-25432}"
log() { printf '[ci-services] %s\n' "$*" >&2; }

pg_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
    log "PostgreSQL not found; installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  printf '%s' "$dir"
}

as_postgres() {
  # initdb and the server refuse to run as root.
  if [ "$(id -u)" = "0" ]; then
    su postgres -s /bin/bash -c "$*"
  else
    bash -c "$*"
  fi
}

start_pg() {
  local bin
  bin=$(pg_bin)
  stop_pg || true
  rm -rf "$PGDATA_DIR"
  mkdir -p "$PGDATA_DIR"
  [ "$(id -u)" = "0" ] && chown postgres:postgres "$PGDATA_DIR"
  as_postgres "'$bin/initdb' -D '$PGDATA_DIR' -U locus --auth=trust -E UTF8 >/dev/null"
  as_postgres "'$bin/pg_ctl' -D '$PGDATA_DIR' -l '$PGDATA_DIR/server.log' -o \"-c listen_addresses=127.0.0.1 -p $PGPORT -k /tmp -c fsync=off\" -w start >/dev/null"
  as_postgres "'$bin/createdb' -h 127.0.0.1 -p $PGPORT -U locus locus_test"
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT"
  echo "export LOCUS_TEST_PG_URL=postgres://locus@127.0.0.1:$PGPORT/locus_test"
}

stop_pg() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$bin" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
    as_postgres "'$bin/pg_ctl' -D '$PGDATA_DIR' -m fast -w stop >/dev/null" || true
    log "PostgreSQL stopped"
  fi
}

restart_pg() {
  # A fast restart (what an operator's restart or a failover looks like to clients): every session is
  # ended with "terminating connection due to administrator command", then the server comes back.
  local bin
  bin=$(pg_bin)
  as_postgres "'$bin/pg_ctl' -D '$PGDATA_DIR' -l '$PGDATA_DIR/server.log' -m fast -w restart >/dev/null"
  log "PostgreSQL restarted"
}

case "${1:-}" in
  start) start_pg ;;
  stop) stop_pg ;;
  restart) restart_pg ;;
  *) echo "usage: ci-services.sh start|stop|restart" >&2; exit 2 ;;
esac
: "$ROOT"
