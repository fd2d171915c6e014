"""Shared pieces of the calibration experiments: data loading, the per-dataset score cache and
the held-out accuracy of a model fitted on N labels.

Scores are cached per dataset in ``experiments/cache/scores_<dataset>.parquet`` with a JSON
sidecar recording each metric column's config hash and the data file's SHA-256, so a rerun
only recomputes a metric whose configuration (or the data) changed. ``experiments/cache`` is
excluded from git through ``.git/info/exclude``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.calibrate.inputs import DEFAULT_METRICS, FEATURE_ONLY
from qaeval_core.calibrate.protocol import held_out_split
from qaeval_core.metrics.base import Metric, get_metric
from qaeval_core.schema import Item, join_models

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cache"
RESULTS = HERE / "results"
SHARED = HERE.parents[1] / "shared" / "data"
DATASETS = ("kamalloo_nq301", "answer_matching_mmlu_pro")

#: (column, metric id, params): the calibration defaults (every CPU metric with no LLM, plus
#: the answer-shape features), so the experiment measures exactly what `qaeval calibrate` fits.
METRICS = DEFAULT_METRICS


@dataclass
class Data:
    """The labelled rows of one shared file, as items, labels and question groups."""

    name: str
    rows: list[dict[str, Any]]
    items: list[Item]
    y: np.ndarray
    groups: np.ndarray
    sha256: str


def load_data(name: str) -> Data:
    """Rows with a binary human label; group = question id (``meta.qid``) or question text."""
    path = SHARED / f"{name}.jsonl"
    raw = path.read_bytes()
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if (r.get("human") or {}).get("label") is not None]
    items = [
        Item(
            question=r["question"],
            references=tuple(str(x) for x in r["references"]),
            candidate=r["candidate"] or "",
            choices=tuple(r["choices"]) if r.get("choices") else None,
            id=r["id"],
            dataset=name,
            qa_model=join_models(r.get("model")),
            meta=r.get("meta") or {},
        )
        for r in rows
    ]
    y = np.array([int(r["human"]["label"]) == 1 for r in rows])
    groups = np.array(
        [
            f"qid:{(r.get('meta') or {}).get('qid')}"
            if (r.get("meta") or {}).get("qid") not in (None, "")
            else f"q:{r['question'].strip().lower()}"
            for r in rows
        ],
        dtype=object,
    )
    return Data(name, rows, items, y, groups, hashlib.sha256(raw).hexdigest())


def build_metric(metric_id: str, params: dict[str, Any]) -> Metric:
    return get_metric(metric_id, **params)


def cached_scores(data: Data, *, log: Any = print, rescore: bool = True) -> pd.DataFrame:
    """Score columns ``<col>``, ``<col>__dec`` (default decision) and SMILE subscores.

    ``rescore=False`` keeps a cached column whose metric's configuration has changed since it
    was computed (said in the log) instead of scoring it again: for experiments that study
    something downstream of the inputs on a busy machine."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"scores_{data.name}.parquet"
    meta_path = path.with_suffix(".json")
    frame = pd.read_parquet(path) if path.exists() else pd.DataFrame(index=range(len(data.y)))
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if meta.get("data_sha256") != data.sha256 or len(frame) != len(data.y):
        frame, meta = pd.DataFrame(index=range(len(data.y))), {}
    meta["data_sha256"] = data.sha256
    hashes = meta.setdefault("config_hash", {})
    timings = meta.setdefault("seconds", {})
    for col, mid, params in METRICS:
        try:
            metric = build_metric(mid, params)
        except Exception as exc:  # a metric that is not there yet is skipped, and said so
            log(f"  {col}: unavailable ({exc})")
            continue
        h = metric.config_hash()
        if hashes.get(col) == h and col in frame.columns:
            continue
        if not rescore and col in frame.columns:
            log(f"  {col}: cached scores kept (computed with config {hashes.get(col)}, now {h})")
            continue
        log(f"  {col}: scoring {len(data.items)} items ...")
        t0 = time.time()
        res = metric.score_batch(data.items)
        timings[col] = round(time.time() - t0, 1)
        frame[col] = np.asarray(res.scores, dtype=float)
        frame[f"{col}__dec"] = np.asarray(res.decisions, dtype=bool)
        if mid in ("smile", "smile_paper"):
            frame[f"{col}__semantic"] = [float(d.get("semantic", 0.0)) for d in res.details]
            frame[f"{col}__lexical"] = [float(d.get("lexical", 0.0)) for d in res.details]
        hashes[col] = h
        frame.to_parquet(path)
        meta_path.write_text(json.dumps(meta, indent=1))
        log(f"  {col}: {timings[col]} s")
    ped = CACHE / f"pedants_{data.name}.csv"
    if ped.exists():
        p = pd.read_csv(ped)
        by_id = p.drop_duplicates("id").set_index("id")
        ids = [it.id for it in data.items]
        frame["pedants"] = by_id.loc[ids, "pedants_score"].to_numpy(dtype=float)
        frame["pedants__dec"] = by_id.loc[ids, "pedants_correct"].to_numpy(dtype=bool)
    else:
        log(f"  pedants: no {ped.name}; run experiments/pedants_anchor.py in the anchor venv")
    return frame


__all__ = [
    "DATASETS",
    "FEATURE_ONLY",
    "METRICS",
    "Data",
    "cached_scores",
    "fixed_accuracy",
    "held_out_accuracy",
    "load_data",
    "mean_sd",
    "write_result",
]


def score_columns(frame: pd.DataFrame, *, include_pedants: bool = False) -> list[str]:
    cols = [c for c, _, _ in METRICS if c in frame.columns]
    if include_pedants and "pedants" in frame.columns:
        cols.append("pedants")
    return cols


def held_out_accuracy(
    make_model: Any,
    X: pd.DataFrame,
    columns: list[str],
    data: Data,
    *,
    size: int = 300,
    seeds: range = range(5),
    grouped: bool = False,
) -> list[float]:
    """Accuracy on the rows not used for fitting, one value per seed: a fresh ``make_model()``
    fitted on ``size`` labels drawn by whole question (``calibration.py``'s protocol), with the
    question groups passed to ``fit`` when ``grouped`` (the stacker's inner CV uses them)."""
    y, g = data.y, data.groups
    out = []
    for seed in seeds:
        tr, te = held_out_split(len(y), size, groups=g, seed=seed)
        extra = {"groups": g[tr]} if grouped else {}
        model = make_model().fit(X[columns].iloc[tr], y[tr], **extra)
        out.append(float(np.mean(model.predict(X[columns].iloc[te]) == y[te])))
    return out


def fixed_accuracy(
    decisions: np.ndarray, data: Data, *, size: int = 300, seeds: range = range(5)
) -> list[float]:
    """Accuracy of decisions fixed in advance (an uncalibrated judge) on the same held-out rows
    :func:`held_out_accuracy` measures, one value per seed."""
    out = []
    for seed in seeds:
        _, te = held_out_split(len(data.y), size, groups=data.groups, seed=seed)
        out.append(float(np.mean(decisions[te] == data.y[te])))
    return out


def mean_sd(values: list[float]) -> str:
    """Accuracies as the tables print them: "mean ± sd" in percent."""
    return f"{100 * np.mean(values):.1f} ± {100 * np.std(values):.1f}"


def write_result(name: str, lines: list[str]) -> None:
    """Write ``results/<name>`` (a markdown table) and print it."""
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(text)
    print(text)
