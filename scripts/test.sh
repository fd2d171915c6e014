#!/usr/bin/env bash
# One command for the whole test suite: install into .venv, provide the real parts the tests
# use (Debian chromium for browser tests, a PostgreSQL server), then run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/test-services.sh || true   # best effort: tests skip with a visible reason otherwise
if [ -f .qaeval-test-env ]; then
  # shellcheck disable=SC1091
  . ./.qaeval-test-env
fi
.venv/bin/ruff check qaeval_core app tests migrations bench scripts experiments
.venv/bin/ruff format --check qaeval_core app tests migrations bench scripts experiments
# Two workers by default (CI has 2 cores; QAEVAL_TEST_WORKERS=0 runs in one process): tests that
# start many processes or a browser share one worker's queue, and the groups start heaviest
# first in the order tests/conftest.py gives (--no-loadscope-reorder keeps that order).
exec .venv/bin/python -m pytest -ra --durations=15 -n "${QAEVAL_TEST_WORKERS:-2}" \
  --dist loadgroup --no-loadscope-reorder "$@"
