"""Calibrate a judge on a dataset in the store (what ``qaeval calibrate`` and the page call).

Steps: read the dataset's items and current human labels (one verdict per item by the policy
of :func:`qaeval_core.agreement.aggregate_labels`: adjudication, else majority; "unclear" and
ties count as not correct), keep at most ``max_labels`` labelled items chosen at random with a
seed (whole questions at a time, so the held-back rest stays truly unseen), score them with the
chosen metrics (reusing stored scores with the same config hash, storing new ones), and run
:func:`~qaeval_core.calibrate.fit.fit_judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.calibrate.fit import DEFAULT_CANDIDATES, CalibrationReport, fit_judge
from qaeval_core.calibrate.protocol import held_out_split
from qaeval_core.errors import ConfigError
from qaeval_core.judge import FeatureSpec, Judge, items_frame
from qaeval_core.metrics.base import Metric, get_metric
from qaeval_core.schema import Item

__all__ = [
    "DEFAULT_METRICS",
    "FEATURE_ONLY",
    "DatasetCalibration",
    "calibrate_dataset",
    "metric_specs",
    "question_groups",
]

#: ``(column, metric id, params)`` calibrated when no metrics are named: every CPU metric that
#: needs no LLM, plus the answer-shape features of :mod:`qaeval_core.metrics.shape`
#: (experiments/README.md measures them). The neural ones (embeddings, BERTScore, SMILE, A-VERT,
#: extraction) use the packaged MiniLM and take a few minutes per thousand items on a CPU.
DEFAULT_METRICS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("em", "em", {}),
    ("contains", "contains", {}),
    ("f1", "f1", {}),
    ("precision", "precision", {}),
    ("recall", "recall", {}),
    ("word_match", "word_match", {}),
    ("rouge1", "rouge1", {}),
    ("rouge2", "rouge2", {}),
    ("rougeL", "rougeL", {}),
    ("bleu", "bleu", {}),
    ("meteor", "meteor", {}),
    ("vqa_accuracy", "vqa_accuracy", {}),
    ("soft_vqa_accuracy", "soft_vqa_accuracy", {}),
    ("panda", "panda", {}),
    ("embed_cosine", "embed_cosine", {}),
    ("bertscore", "bertscore", {}),
    ("smile", "smile", {}),
    ("smile_paper", "smile_paper", {}),
    ("avert", "avert", {}),
    ("extract_f1", "extract", {"metric": "f1"}),
    ("number_match", "number_match", {}),
    ("number_agree", "number_agree", {}),
    ("brevity", "brevity", {}),
    ("no_hedge", "no_hedge", {}),
)
#: Columns that are calibration inputs, not judges (left out of "best single metric" reports).
FEATURE_ONLY: tuple[str, ...] = ("number_match", "number_agree", "brevity", "no_hedge")


@dataclass
class DatasetCalibration:
    """A fitted judge, its report, and which labelled items were used or held back."""

    judge: Judge
    report: CalibrationReport
    n_labelled: int
    used_item_ids: list[int] = field(default_factory=list)
    unseen_item_ids: list[int] = field(default_factory=list)


def question_groups(items: Sequence[Item]) -> np.ndarray:
    """Group key per item: the question id in ``meta`` (``qid``) when present, else the text."""
    keys = []
    for it in items:
        qid = (it.meta or {}).get("qid")
        keys.append(f"qid:{qid}" if qid not in (None, "") else f"q:{it.question.strip().lower()}")
    return np.asarray(keys, dtype=object)


def metric_specs(metrics: Sequence[str | Metric] | None = None) -> list[tuple[str, Metric]]:
    """``(column, metric)`` pairs: the named metric ids (default parameters) or the defaults."""
    if not metrics:
        return [(col, get_metric(mid, **params)) for col, mid, params in DEFAULT_METRICS]
    out = [(m.id, m) if isinstance(m, Metric) else (m, get_metric(m)) for m in metrics]
    cols = [c for c, _ in out]
    if len(set(cols)) != len(cols):
        raise ConfigError(f"A metric is named twice in {cols}.")
    return out


def calibrate_dataset(
    db: Any,
    dataset: str,
    *,
    metrics: Sequence[str | Metric] | None = None,
    max_labels: int | None = None,
    seed: int = 0,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    n_splits: int = 5,
    n_boot: int = 2000,
    name: str | None = None,
    store_scores: bool = True,
    progress: Callable[[str], None] | None = None,
) -> DatasetCalibration:
    """Fit a judge on (at most ``max_labels`` of) a stored dataset's human labels."""
    from qaeval_core import analysis
    from qaeval_core.store import repo

    say = progress or (lambda _msg: None)
    frames = analysis.load_frames(db, dataset, metrics=())  # labels only: scores below
    verdicts = analysis.human_verdicts(frames)
    verdicts = verdicts[verdicts["final"].notna()]
    if verdicts.empty:
        raise ConfigError(
            f"Dataset {dataset!r} has no human labels yet; label some items (or import a file "
            "with labels) before calibrating."
        )
    correct = dict(zip(verdicts["item_id"], verdicts["human_correct"].astype(bool), strict=True))
    items = [it for it in repo.load_items(db, dataset) if it.meta["item_id"] in correct]
    groups = question_groups(items)
    n_labelled = len(items)
    if max_labels is not None and max_labels < n_labelled:
        if max_labels < 20:
            raise ConfigError(f"--max-labels {max_labels} is too few to calibrate; use >= 20.")
        train, _ = held_out_split(n_labelled, max_labels, groups=groups, seed=seed)
    else:
        train = np.arange(n_labelled)
    used = [items[i] for i in train]
    used_ids = [int(it.meta["item_id"]) for it in used]
    unseen = sorted(set(int(it.meta["item_id"]) for it in items) - set(used_ids))
    y = np.array([correct[i] for i in used_ids])
    if y.all() or not y.any():
        raise ConfigError(
            f"The {len(y)} labels chosen are all {'correct' if y.all() else 'incorrect'}; "
            "calibration needs both. Label more items or raise --max-labels."
        )
    say(f"{len(used)} of {n_labelled} labelled items used for fitting ({int(y.sum())} correct).")

    specs_in = metric_specs(metrics)
    stored = analysis.load_scores(db, dataset, [(m.id, m.config_hash()) for _, m in specs_in])
    score_cols, decision_cols, new_rows = {}, {}, []
    for column, metric in specs_in:
        chash = metric.config_hash()
        have = stored[(stored["metric_id"] == metric.id) & (stored["config_hash"] == chash)]
        have = have.drop_duplicates("item_id", keep="last").set_index("item_id")
        if set(used_ids) <= set(have.index):
            say(f"{column}: reusing stored scores.")
            score_cols[column] = have.loc[used_ids, "value"].to_numpy(dtype=float)
            thr = getattr(metric, "threshold", None)
            decision_cols[column] = (
                metric.decide(score_cols[column])
                if thr is not None
                else have.loc[used_ids, "decision"].fillna(False).to_numpy(dtype=bool)
            )
            continue
        say(f"{column}: scoring {len(used)} items ...")
        res = metric.score_batch(used)
        score_cols[column] = np.asarray(res.scores, dtype=float)
        decision_cols[column] = np.asarray(res.decisions, dtype=bool)
        new_rows += [
            {
                "item_id": iid,
                "metric_id": metric.id,
                "config_hash": chash,
                "value": float(v),
                "decision": bool(d),
                "details": det,
            }
            for iid, v, d, det in zip(used_ids, res.scores, res.decisions, res.details, strict=True)
        ]
    if store_scores and new_rows:
        repo.add_scores(db, new_rows)
    scores = pd.DataFrame(score_cols)
    # Answer-shape inputs are not judges: leave them out of the uncalibrated baselines.
    decisions = pd.DataFrame({c: v for c, v in decision_cols.items() if c not in FEATURE_ONLY})
    specs = [FeatureSpec.from_metric(m, column) for column, m in specs_in]
    say(f"Comparing {', '.join(candidates)} by {n_splits}-fold CV grouped by question ...")
    judge, report = fit_judge(
        scores,
        y,
        specs,
        candidates=candidates,
        groups=groups[train],
        texts=items_frame(used),
        default_decisions=decisions,
        n_splits=n_splits,
        seed=seed,
        n_boot=n_boot,
        name=name,
        fitted_on={
            "dataset": dataset,
            "n_labelled_available": n_labelled,
            "label_rule": "adjudicated, else majority of current labels; correct = clearly "
            "correct (2); unclear and ties count as not correct",
            "max_labels": max_labels,
        },
    )
    return DatasetCalibration(judge, report, n_labelled, used_ids, unseen)
