#!/usr/bin/env bash
# Install and start what the tests need beyond Python, when the machine allows it (root + apt):
# Debian chromium for the Playwright browser tests and a PostgreSQL server on loopback.
# Writes .qaeval-test-env with the variables the tests read. Failures only skip those tests.
set -uo pipefail
cd "$(dirname "$0")/.."
: > .qaeval-test-env
apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 || {
      apt-get update -qq >/dev/null 2>&1 && \
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; }
  fi
}
command -v chromium >/dev/null || apt_install chromium
if command -v chromium >/dev/null; then
  echo "export QAEVAL_CHROMIUM=$(command -v chromium)" >> .qaeval-test-env
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt_install postgresql; fi
INITDB=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | head -1)
if [ -n "$INITDB" ]; then
  BIN=$(dirname "$INITDB")
  PGDIR=/tmp/qaeval-pg
  PORT=${QAEVAL_TEST_PG_PORT:-55432}
  if ! "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; then
    rm -rf "$PGDIR"; mkdir -p "$PGDIR"
    RUN=()
    if [ "$(id -u)" = 0 ]; then chown postgres "$PGDIR" 2>/dev/null && RUN=(su postgres -s /bin/sh -c); fi
    if [ ${#RUN[@]} -gt 0 ]; then
      "${RUN[@]}" "$BIN/initdb -D $PGDIR/data -U qaeval --auth=trust >/dev/null" && \
      "${RUN[@]}" "$BIN/pg_ctl -D $PGDIR/data -o '-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1' -l $PGDIR/log start -w >/dev/null"
    else
      "$BIN/initdb" -D "$PGDIR/data" -U qaeval --auth=trust >/dev/null && \
      "$BIN/pg_ctl" -D "$PGDIR/data" -o "-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1" -l "$PGDIR/log" start -w >/dev/null
    fi
  fi
  if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    echo "export QAEVAL_TEST_POSTGRES_URL=postgresql+psycopg2://qaeval@127.0.0.1:$PORT/postgres" >> .qaeval-test-env
  fi
fi
cat .qaeval-test-env
