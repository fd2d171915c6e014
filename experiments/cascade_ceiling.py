"""How far the packaged LLM can lift the judge: the LLM on every row, two prompts (issue 22).

``cascade.py`` fits the cascade the way ``qaeval calibrate --llm`` does (the LLM on the band the
cheap judge doubts, the share chosen by CV). This asks what the cascade could reach at best with
this model: the LLM read on *every* row (share 100%), combined with the cheap judge by a logistic
on the 300 calibration labels, with the NAQT prompt, LAVE's prompt, or both. It reads the GPU
verdicts (``llm_verdicts_offload.py``: the packaged GGUF through transformers in bfloat16, which
agree with llama.cpp's to a median 0.01, see bench/README) and also compares them with the
llama.cpp verdicts on the rows both computed. Same protocol as ``cascade.py`` (5 seeds, N = 300).

    .venv/bin/python experiments/cascade_ceiling.py
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from cascade import LLM_PARAMS, llm_probabilities, tier1
from common import DATASETS, Data, cached_scores, load_data, write_result
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

GPU = {"runtime": "transformers", "device": "cuda"}


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def verdicts(**params: str) -> Callable[[Data], np.ndarray]:
    def read(data: Data) -> np.ndarray:
        LLM_PARAMS.clear()
        LLM_PARAMS.update(params)
        try:
            return llm_probabilities(data)[0]
        finally:
            LLM_PARAMS.clear()

    return read


def main() -> None:
    rows = []
    for name in DATASETS:
        data = load_data(name)
        scores = cached_scores(data, log=lambda *a: None, rescore=False)
        y = data.y
        naqt, lave = verdicts(**GPU)(data), verdicts(**GPU, prompt="lave")(data)
        cpu = verdicts()(data)
        both = np.isfinite(cpu)
        seeds = []
        for seed in range(5):
            fit = tier1(data, scores, seed)
            tr, te = fit["tr"], fit["te"]
            cal = np.c_[logit(fit["p_cal"]), logit(naqt[tr]), logit(lave[tr])]
            test = np.c_[logit(fit["p_te"]), logit(naqt[te]), logit(lave[te])]
            acc = {"cheap": float(np.mean((fit["p_te"] >= 0.5) == y[te]))}
            grid = np.linspace(0.05, 0.95, 91)
            best = grid[np.argmax([np.mean((naqt[tr] >= t) == y[tr]) for t in grid])]
            acc["llm alone (threshold fitted)"] = float(np.mean((naqt[te] >= best) == y[te]))
            for label, cols in (
                ("cheap + LLM (NAQT)", [0, 1]),
                ("cheap + LLM (LAVE)", [0, 2]),
                ("cheap + LLM (both prompts)", [0, 1, 2]),
            ):
                model = LogisticRegression().fit(cal[:, cols], y[tr])
                acc[label] = float(np.mean(model.predict(test[:, cols]) == y[te]))
            seeds.append(acc)
        frame = pd.DataFrame(seeds)
        row = {"dataset": name}
        row |= {
            k: f"{100 * v:.1f} ± {100 * s:.1f}"
            for (k, v), s in zip(frame.mean().items(), frame.std(ddof=0), strict=True)
        }
        row["ROC AUC NAQT / LAVE (all rows)"] = (
            f"{roc_auc_score(y, naqt):.3f} / {roc_auc_score(y, lave):.3f}"
        )
        row["GPU vs llama.cpp (rows both)"] = (
            f"n={int(both.sum())}, median abs dP {np.median(abs(cpu[both] - naqt[both])):.3f}, "
            f"same side {np.mean((cpu[both] >= 0.5) == (naqt[both] >= 0.5)):.1%}"
        )
        rows.append(row)
    names = [r["dataset"] for r in rows]
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += [
        f"| {key} | " + " | ".join(str(r[key]) for r in rows) + " |"
        for key in rows[0]
        if key != "dataset"
    ]
    write_result(
        "cascade_ceiling.md",
        [
            "The LLM on every row (share 100%), combined with the cheap judge by a logistic "
            "fitted on the 300 calibration labels; test accuracy, mean ± sd over 5 seeds. "
            "Verdicts: the packaged Qwen2.5-Coder-1.5B GGUF through transformers, bfloat16, "
            "on an NVIDIA H200.",
            "",
            *lines,
        ],
    )


if __name__ == "__main__":
    main()
