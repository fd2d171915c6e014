"""Scores of stored datasets: score with metrics, or apply a calibrated judge.

* :func:`score_dataset` scores a stored dataset and saves one score per item and metric
  configuration, skipping items already scored under the same config hash, so adding a metric
  or new items only computes what is missing.
* :func:`judge_dataset` applies a calibrated judge to a stored dataset, reusing every stored
  input score with the judge's config hash and storing the ones it had to compute, so judging
  a scored dataset scores nothing again. A row whose stored input carries an ``"error"`` in
  its details (the metric raised on it, or gave a non-finite score the scoring loop replaced)
  gets ``judge_reason == "judge_error"``, exactly as when the judge scores a file: the stored
  0.0 is not a real input, so people must decide that row.
* An item a metric gave *no verdict* (NaN, ``details["no_verdict"]``: an LLM endpoint failed
  on it) gets no stored score at all, so the next run scores it again; the summary counts it
  (``"no_verdict"``, with the first ``"reason"``), and the judge treats its missing input as
  ``judge_error``.

Metrics always run through :func:`qaeval_core.scoring.run_jobs` (one loop, one NaN policy).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from qaeval_core import store
from qaeval_core.analysis import load_scores
from qaeval_core.jsonable import to_jsonable
from qaeval_core.judge import COLUMN_PREFIX, Judge
from qaeval_core.metrics.base import NO_VERDICT, Metric, MetricResult
from qaeval_core.metrics.specs import resolve_metrics
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, run_jobs

__all__ = ["judge_dataset", "score_dataset", "score_rows", "stored_scores"]


def _item_id(item: Item) -> int:
    return int(item.meta["item_id"])


def score_rows(
    label: str, metric: Metric, items: Sequence[Item], result: MetricResult
) -> list[dict]:
    """Store rows for one metric's results (non-finite scores were already replaced by the
    scoring loop's NaN policy, with the reason in the details); an item without a verdict (a
    NaN the policy kept) gets no row, so a later run scores it again."""
    chash = metric.config_hash()
    return [
        {
            "item_id": _item_id(it),
            "metric_id": metric.id,
            "config_hash": chash,
            "value": float(value),
            "decision": bool(decision),
            "details": to_jsonable({**det, "label": label}),
        }
        for it, value, decision, det in zip(
            items, result.scores.tolist(), result.decisions.tolist(), result.details, strict=True
        )
        if math.isfinite(value)
    ]


def stored_scores(db: store.Store, dataset: str, metrics: Iterable[Metric]) -> pd.DataFrame:
    """Stored scores of exactly these metric configurations, one row per (config, item)."""
    pairs = list(dict.fromkeys((m.id, m.config_hash()) for m in metrics))
    stored = load_scores(db, dataset, pairs)
    return stored.drop_duplicates(["metric_id", "config_hash", "item_id"], keep="last")


def _stored_ids(stored: pd.DataFrame, metric: Metric) -> set[int]:
    mine = stored[
        (stored["metric_id"] == metric.id) & (stored["config_hash"] == metric.config_hash())
    ]
    return set(mine["item_id"].astype(int).tolist())


def _score_missing(
    db: store.Store,
    dataset: str,
    named: Sequence[tuple[str, Metric]],
    items: Sequence[Item],
    *,
    rescore: bool,
    batch_size: int | None,
    progress: bool,
) -> dict[str, dict[str, Any]]:
    """Score and store, per metric, the items that have no stored score under its config hash
    (all of them with ``rescore``). Returns per label what was scored and skipped."""
    stored = stored_scores(db, dataset, [m for _, m in named]) if not rescore else None
    jobs, summary = [], {}
    for label, metric in named:
        done = _stored_ids(stored, metric) if stored is not None else set()
        pending = [it for it in items if _item_id(it) not in done]
        jobs.append(ScoringJob(label, metric, pending))
        summary[label] = {
            "metric_id": metric.id,
            "config_hash": metric.config_hash(),
            "scored": len(pending),
            "skipped": len(items) - len(pending),
        }

    def save(job: ScoringJob, result: MetricResult) -> None:
        store.add_scores(db, score_rows(job.label, job.metric, job.items, result))
        missing = [d.get(NO_VERDICT) for d in result.details if d.get(NO_VERDICT)]
        if missing:
            summary[job.label]["no_verdict"] = len(missing)
            summary[job.label]["reason"] = str(missing[0])

    run_jobs(
        jobs, batch_size=batch_size, progress=progress, desc=f"scoring {dataset}", on_result=save
    )
    return summary


def score_dataset(
    db: store.Store,
    dataset: str,
    metrics: Iterable[str | Metric] | str,
    *,
    rescore: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
    """Score a stored dataset and save the scores (value, decision, details, config hash).

    Items that already have a score for the same metric id and config hash are skipped unless
    ``rescore``; a changed parameter or metric version gives a new hash, so both versions stay
    side by side. Returns per metric label ``{"metric_id", "config_hash", "scored",
    "skipped"}``.
    """
    named = resolve_metrics(metrics)
    items = store.load_items(db, dataset)
    return _score_missing(
        db, dataset, named, items, rescore=rescore, batch_size=batch_size, progress=progress
    )


def _stored_error(details: Any) -> str | None:
    """The ``"error"`` a stored score's details carry (a dict, or its JSON text), else None."""
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return None
    if isinstance(details, dict) and details.get("error"):
        return str(details["error"])
    return None


def judge_dataset(
    db: store.Store,
    dataset: str,
    judge: Judge,
    *,
    rescore: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """A calibrated judge on a stored dataset: every item's stored fields plus
    ``judge_score``, ``judge_correct`` and ``judge_<column>`` per input.

    Input scores stored under the judge's config hashes are reused; missing ones are computed
    and stored first (so a second run scores nothing). Rows with a stored input error get
    ``judge_reason == "judge_error"`` (as :meth:`Judge.input_scores` reports for a file).
    Returns the frame and, per input column, what was scored and skipped.
    """
    frame = store.list_items(db, dataset)
    by_id = {_item_id(it): it for it in store.load_items(db, dataset)}
    ids = [int(i) for i in frame["item_id"]]
    items = [by_id[i] for i in ids]
    named = list(judge.metrics().items())
    summary = _score_missing(
        db, dataset, named, items, rescore=rescore, batch_size=batch_size, progress=progress
    )
    stored = stored_scores(db, dataset, [m for _, m in named])
    matrix = {}
    errors: list[str | None] = [None] * len(ids)
    for column, metric in named:
        mine = stored[
            (stored["metric_id"] == metric.id) & (stored["config_hash"] == metric.config_hash())
        ].set_index("item_id")
        matrix[column] = mine["value"].reindex(ids).astype(float).to_numpy()
        details = mine["details"].to_dict()  # a list, not Series.map: pandas turns None to NaN
        for k, err in enumerate(_stored_error(details.get(i)) for i in ids):
            if err is None and not math.isfinite(matrix[column][k]):
                why = summary.get(column, {}).get("reason")
                err = f"no verdict: {why}" if why else "no stored score (no verdict)"
            if err is not None:  # the "<column>: <error>" notes of judge.outcomes.row_errors
                note = f"{column}: {err}"
                errors[k] = note if errors[k] is None else f"{errors[k]}; {note}"
    scores = pd.DataFrame(matrix, columns=judge.columns, index=frame.index)
    decided = judge.judge_scores(scores, items, errors=errors)
    out = pd.concat([frame, decided, scores.add_prefix(COLUMN_PREFIX)], axis=1)
    return out, summary
