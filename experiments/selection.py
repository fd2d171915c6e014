"""Cross-validated choice of SMILE's weight w and of the A-VERT configuration.

    .venv/bin/python experiments/selection.py

SMILE: the cached per-item semantic and lexical subscores (default ``code`` variant) give
``w * s_semantic + (1 - w) * s_lexical`` for every ``w`` without rescoring; each ``w`` gets a
threshold fitted inside each training fold (5 folds grouped by question, all labelled rows).
The subscores are those of the reference that won at the default w; with several references
the max over references at another w could pick another one (an approximation, and the reason
``select_smile_weight`` takes subscores rather than rescoring).
A-VERT: no second ranking model is available offline, so the candidates are the packaged MiniLM
with and without the enhancement templates and the refusal group; each is judged at its own
argmax decision. Output: ``experiments/results/selection.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, cached_scores, load_data
from qaeval_core.calibrate.select import select_avert_model, select_smile_weight
from qaeval_core.metrics.base import get_metric

RESULTS = Path(__file__).resolve().parent / "results"
AVERT_VARIANTS = {
    "minilm, templates, refusal group (default)": {},
    "minilm, no templates": {"enhance": False},
    "minilm, no refusal group": {"refusal": False},
}


def avert_decisions(data, name: str, params: dict) -> np.ndarray:
    """A-VERT's own (argmax) decisions for one configuration, cached."""
    metric = get_metric("avert", **params)
    path = CACHE / f"avert_dec_{data.name}_{metric.config_hash()}.npy"
    if path.exists():
        return np.load(path)
    print(f"  scoring A-VERT ({name}) ...", flush=True)
    decisions = np.asarray(metric.score_batch(data.items).decisions, dtype=bool)
    np.save(path, decisions)
    return decisions


def main() -> None:
    lines = []
    for ds in DATASETS:
        data = load_data(ds)
        f = cached_scores(data, log=lambda m: print(m, flush=True))
        sel = select_smile_weight(
            f["smile__semantic"], f["smile__lexical"], data.y, groups=data.groups, default=0.5
        )
        t = sel.table.sort_values("candidate")
        lines.append(f"\n### {ds}: SMILE weight w (5-fold CV, threshold refitted per fold)\n")
        lines.append("| w | " + " | ".join(f"{w:g}" for w in t["candidate"]) + " |")
        lines.append("|---|" + "---|" * len(t))
        lines.append(
            "| CV accuracy (%) | " + " | ".join(f"{100 * a:.1f}" for a in t["accuracy"]) + " |"
        )
        lines.append(f"\nChosen w = {sel.best:g} (default 0.5 kept unless > 0.5 point better).")
        cands = {name: avert_decisions(data, name, p) for name, p in AVERT_VARIANTS.items()}
        sel_a = select_avert_model(cands, data.y, groups=data.groups)
        lines.append(f"\n### {ds}: A-VERT configuration (5-fold CV at its own decision)\n")
        lines.append("| configuration | CV accuracy (%) | balanced accuracy (%) |")
        lines.append("|---|---|---|")
        for r in sel_a.table.itertuples():
            lines.append(
                f"| {r.candidate} | {100 * r.accuracy:.1f} | {100 * r.balanced_accuracy:.1f} |"
            )
        lines.append(f"\nChosen: {sel_a.best}.")
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "selection.md").write_text(text, "utf-8")
    print(text)


if __name__ == "__main__":
    main()
