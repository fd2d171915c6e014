"""The analyses of loaded :class:`~qaeval_core.analysis.frames.Frames`: agreement, metrics, models.

Each function takes frames (never the store), so one load serves every table of a page, and the
pure functions of :mod:`qaeval_core.analysis.agreement`, :mod:`qaeval_core.analysis.compare` and
:mod:`qaeval_core.analysis.report` get the same inputs wherever they are called from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.agreement import (
    ScorePolicy,
    aggregate_labels,
    alpha_by_group,
    label_count_table,
    pairwise_kappa,
    rater_vs_rest,
)
from qaeval_core.analysis.compare import (
    confusion_table,
    join_scores,
    metric_vs_human,
    model_leaderboard,
    point_statistics,
    ranking_changes,
    worst_disagreements,
)
from qaeval_core.analysis.formatting import format_details
from qaeval_core.analysis.frames import Frames, load_frames
from qaeval_core.analysis.report import Report, build_report
from qaeval_core.errors import NotFoundError

__all__ = [
    "AgreementTables",
    "Leaderboard",
    "MetricView",
    "agreement_tables",
    "dataset_report",
    "human_verdicts",
    "leaderboard",
    "metric_statistics",
    "metric_view",
]


def human_verdicts(frames: Frames, *, score_policy: ScorePolicy = "mean") -> pd.DataFrame:
    """One human verdict per item (majority, LAVE soft score, adjudication when present)."""
    return aggregate_labels(
        frames.labels, frames.adjudications, frames.items[["item_id"]], score=score_policy
    )


@dataclass(frozen=True)
class AgreementTables:
    """The agreement page's numbers (see :mod:`qaeval_core.analysis.agreement` for each column)."""

    alpha: pd.DataFrame
    kappa: pd.DataFrame
    kappa_ordinal: pd.DataFrame
    raters: pd.DataFrame
    label_counts: pd.DataFrame
    summary: dict[str, Any]


def agreement_tables(
    frames: Frames, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> AgreementTables:
    """Alpha overall and per dataset / QA model / rule (bootstrap CIs), kappa per pair on the
    binary label and (linear-weighted) on the 3-point scale, each rater against the rest, and
    how many items have 0, 1, 2, 3+ labels."""
    labels, items = frames.labels, frames.items
    human = human_verdicts(frames)
    judged = human[human["final"].notna()]
    summary = {
        "items": len(items),
        "labels": len(labels),
        "raters": int(labels["rater"].nunique()),
        "multiply_labelled": int((human["n_labels"] >= 2).sum()),
        "disagreements": int(human["disagreement"].sum()),
        "needs_adjudication": int(human["needs_adjudication"].sum()),
        "adjudicated": int(human["adjudicated"].notna().sum()),
        "human_accuracy": float(judged["human_correct"].astype(bool).mean())
        if len(judged)
        else float("nan"),
    }
    return AgreementTables(
        alpha=alpha_by_group(labels, items, n_boot=n_boot, seed=seed, confidence=confidence),
        kappa=pairwise_kappa(labels),
        kappa_ordinal=pairwise_kappa(labels, scale="3-point", weights="linear"),
        raters=rater_vs_rest(labels),
        label_counts=label_count_table(labels, items),
        summary=summary,
    )


def metric_statistics(
    frames: Frames,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    score_policy: ScorePolicy = "mean",
) -> pd.DataFrame:
    """Every loaded metric against the human verdict, with paired bootstrap CIs (long frame)."""
    if frames.scores.empty:
        return pd.DataFrame(
            columns=["metric_id", "statistic", "estimate", "ci_low", "ci_high", "n_items"]
        )
    human = human_verdicts(frames, score_policy=score_policy)
    return metric_vs_human(frames.scores, human, n_boot=n_boot, seed=seed)


@dataclass(frozen=True)
class MetricView:
    """What the metric explorer shows for one metric.

    ``joined``: the metric's scores on human-judged items with the verdict and item columns;
    ``statistics``: point estimates (no bootstrap: the explorer redraws on every click);
    ``confusion``: decision (rows) by human final value (columns); ``worst``: contradictions,
    most confident first, with ``details_text``.
    """

    metric_id: str
    config_hash: str
    joined: pd.DataFrame
    statistics: dict[str, float]
    confusion: pd.DataFrame
    worst: pd.DataFrame


def metric_view(
    frames: Frames,
    metric_id: str,
    *,
    strict: bool = False,
    limit: int | None = 100,
    score_policy: ScorePolicy = "mean",
) -> MetricView:
    """Confusion matrix, score distributions and worst disagreements of one metric."""
    if metric_id not in frames.metric_ids:
        raise NotFoundError(
            f"No scores of metric {metric_id!r} loaded; loaded: "
            f"{', '.join(frames.metric_ids) or 'none'}."
        )
    human = human_verdicts(frames, score_policy=score_policy)
    scores = frames.scores[frames.scores["metric_id"] == metric_id]
    joined = join_scores(scores, human, frames.items)
    has_decision = bool(len(joined)) and joined["decision"].notna().all()
    stats = point_statistics(
        joined["value"].to_numpy(float),
        joined["decision"].to_numpy(dtype=bool) if has_decision else None,
        joined["human_correct"].to_numpy(bool),
        joined["human_score"].to_numpy(float),
    )
    stats["n_items"] = float(len(joined))
    worst = worst_disagreements(
        scores, human, frames.items, metric_id=metric_id, strict=strict, limit=limit
    )
    worst["details_text"] = worst["details"].map(format_details) if len(worst) else []
    config_hash = str(scores["config_hash"].iloc[0]) if len(scores) else ""
    return MetricView(
        metric_id=metric_id,
        config_hash=config_hash,
        joined=joined,
        statistics=stats,
        confusion=confusion_table(scores, human, metric_id),
        worst=worst,
    )


@dataclass(frozen=True)
class Leaderboard:
    """QA-model accuracy per metric next to the humans'.

    ``table``: long (:func:`~qaeval_core.analysis.compare.model_leaderboard`); ``wide``: one row per
    (dataset, model) with the human accuracy and one ``<metric>`` accuracy and
    ``<metric> rank`` column per metric; ``ranking``: rank correlation and flipped pairs.
    """

    table: pd.DataFrame
    wide: pd.DataFrame
    ranking: pd.DataFrame


def leaderboard(frames: Frames, *, min_items: int = 1) -> Leaderboard:
    """Rank the QA models by human accuracy and by each metric's decisions."""
    human = human_verdicts(frames)
    table = model_leaderboard(frames.scores, human, frames.items, min_items=min_items)
    if table.empty:
        return Leaderboard(table, pd.DataFrame(), ranking_changes(table))
    keys = ["dataset", "qa_model"]
    base = table.groupby(keys, sort=False).agg(
        n_items=("n_items", "max"),
        human_accuracy=("human_accuracy", "first"),
        human_rank=("human_rank", "first"),
    )
    acc = table.pivot_table(index=keys, columns="metric_id", values="metric_accuracy")
    rank = table.pivot_table(index=keys, columns="metric_id", values="metric_rank")
    rank = rank.round().astype("Int64")
    rank.columns = [f"{c} rank" for c in rank.columns]
    wide = base.join(acc).join(rank)
    order = ["n_items", "human_accuracy", "human_rank"]
    for metric in acc.columns:
        order += [metric, f"{metric} rank"]
    wide = wide[order].reset_index().sort_values(["dataset", "human_rank", "qa_model"])
    return Leaderboard(table, wide.reset_index(drop=True), ranking_changes(table))


def dataset_report(
    db: store.Store,
    dataset: str,
    *,
    metrics: Sequence[str] | None = None,
    config_hashes: Sequence[str] | None = None,
    score_policy: ScorePolicy = "mean",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Report:
    """:func:`.report.build_report` on one stored dataset (for ``qaeval report``)."""
    frames = load_frames(db, dataset, metrics=metrics, config_hashes=config_hashes)
    report = build_report(
        frames.items,
        frames.labels,
        frames.adjudications,
        frames.scores,
        dataset=dataset,
        score_policy=score_policy,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
    )
    used = frames.configs[frames.configs["used"]]
    report.numbers["settings"]["metric_configs"] = dict(
        zip(used["metric_id"], used["config_hash"], strict=True)
    )
    return report
