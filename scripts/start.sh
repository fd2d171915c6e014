#!/usr/bin/env bash
# One command for a new user: install into .venv, create the demo store, start the app.
set -euo pipefail
cd "$(dirname "$0")/.."
QAEVAL_EXTRAS=${QAEVAL_EXTRAS:-models,postgres,onnx,dev} bash scripts/install.sh
.venv/bin/qaeval demo
exec .venv/bin/qaeval app "$@"
