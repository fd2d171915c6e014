#!/usr/bin/env bash
# Install and start what the tests need beyond Python, when the machine allows it (root + apt):
# Debian chromium for the Playwright browser tests and a PostgreSQL server on loopback.
# Writes .qaeval-test-env with the variables the tests read. Failures only skip those tests
# (each one says why on stderr, and the tests themselves skip with a visible reason).
set -uo pipefail
cd "$(dirname "$0")/.."
ENV_FILE=.qaeval-test-env
# Build the file under a private name and move it into place at the end, so two runs at the
# same time (several shells, CI retries) never leave a truncated file behind.
TMP_ENV=$(mktemp "$ENV_FILE.XXXXXX")
trap 'rm -f "$TMP_ENV"' EXIT
note() { echo "test-services: $*" >&2; }

apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    note "cannot install $* (needs root and apt-get)"
    return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; } || {
    note "apt-get install $* failed"
    return 1
  }
}

# -- chromium for the browser tests -------------------------------------------------------
command -v chromium >/dev/null || apt_install chromium
if command -v chromium >/dev/null; then
  echo "export QAEVAL_CHROMIUM=$(command -v chromium)" >> "$TMP_ENV"
else
  note "no chromium: browser tests will skip"
fi

# -- WordNet 3.0 for METEOR's synonym stage ------------------------------------------------
[ -f /usr/share/wordnet/data.noun ] || apt_install wordnet-base
[ -f /usr/share/wordnet/data.noun ] || note "no WordNet: METEOR synonym tests will skip"

# -- PostgreSQL on 127.0.0.1:$PORT, trust auth, user qaeval --------------------------------
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt_install postgresql; fi
INITDB=$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)
PORT=${QAEVAL_TEST_PG_PORT:-55432}
if [ -n "$INITDB" ]; then
  BIN=$(dirname "$INITDB")
  PGDIR=${QAEVAL_TEST_PG_DIR:-/tmp/qaeval-pg}
  if ! "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" 2>/dev/null; then
    # A stale cluster (machine restarted, server killed) is rebuilt from scratch: test data only.
    rm -rf "$PGDIR"
    mkdir -p "$PGDIR"
    # Test data only, rebuilt after any crash: no fsync (each test creates and drops a
    # database, and every DROP DATABASE waits for a checkpoint: 2.0 s -> 0.7 s per test).
    NO_SYNC="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    START="$BIN/initdb -D $PGDIR/data -U qaeval --auth=trust >$PGDIR/initdb.log 2>&1 && \
$BIN/pg_ctl -D $PGDIR/data -o '-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1 $NO_SYNC' \
-l $PGDIR/log -w start >/dev/null"
    if [ "$(id -u)" = 0 ]; then
      # initdb refuses to run as root: run the server as the postgres system user.
      id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres 2>/dev/null
      chown postgres "$PGDIR" && su postgres -s /bin/sh -c "$START" ||
        note "PostgreSQL did not start (see $PGDIR/initdb.log and $PGDIR/log)"
    else
      sh -c "$START" || note "PostgreSQL did not start (see $PGDIR/initdb.log and $PGDIR/log)"
    fi
  fi
  if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    echo "export QAEVAL_TEST_POSTGRES_URL=postgresql+psycopg2://qaeval@127.0.0.1:$PORT/postgres" \
      >> "$TMP_ENV"
  fi
else
  note "no PostgreSQL server binaries: the postgres-marked tests will skip"
fi

chmod 644 "$TMP_ENV"
mv -f "$TMP_ENV" "$ENV_FILE"
cat "$ENV_FILE"
