# Shared by scripts/install.sh and scripts/start.sh: numbered step lines, and a command run with
# a "still working" line every QAEVAL_HEARTBEAT_S seconds (default 15) so that a step pip keeps
# quiet for a minute or more (resolving, building) never looks hung.

# step N TOTAL TEXT: the line that opens a step.
step() { printf '\n==> [%s/%s] %s\n' "$1" "$2" "$3"; }

# with_heartbeat WHAT CMD...: run CMD; while it runs, say every few seconds that WHAT goes on.
# CMD's exit status is returned.
with_heartbeat() {
  local what=$1 every=${QAEVAL_HEARTBEAT_S:-15} started=$SECONDS pid rc
  shift
  "$@" &
  pid=$!
  while ! wait_for "$pid" "$every"; do
    printf '    ... still %s (%d s)\n' "$what" "$((SECONDS - started))"
  done
  rc=0
  wait "$pid" || rc=$?
  return "$rc"
}

# wait_for PID SECONDS: true once PID has ended, false when SECONDS passed first.
wait_for() {
  local pid=$1 left=$(($2 * 10))
  while [ "$left" -gt 0 ]; do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
    left=$((left - 1))
  done
  ! kill -0 "$pid" 2>/dev/null
}
