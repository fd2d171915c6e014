"""Where automatic judges agree with people: the statistics of the SMILE and PANDA tables.

Pure functions on pandas frames. Inputs:

``scores``
    ``item_id``, ``metric_id``, ``value`` (the raw score) and optionally ``decision`` (bool, the
    metric's call at its threshold; missing decisions are filled from ``thresholds`` when given).
``human``
    the per-item frame of :func:`qaeval_core.analysis.agreement.aggregate_labels` (``item_id``,
    ``final``, ``human_correct``, ``human_score``); items without a verdict are ignored.
``items``
    ``item_id`` plus ``dataset`` / ``qa_model`` (several models joined by " | ", exploded so an
    answer shared by several systems counts for each) and any text columns to show.

Bootstrap intervals are percentile intervals over items, *paired*: every metric is evaluated on
the same resamples (same seed, same item order), so their intervals and differences are
comparable. The bootstrap statistics are vectorised (resample multiplicities times per-item
terms) and tested equal to scikit-learn / scipy on explicitly resampled data.

Why it is one module: every statistic here is computed on the same joined (metric score, human
verdict) table and resampled with the same weights, vectorised over the resamples; the
leaderboard, ranking changes and single-item views read that table too.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import sparse, stats
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    precision_recall_fscore_support,
)

from qaeval_core.analysis.agreement import bootstrap_weights, explode_models
from qaeval_core.errors import QAEvalError
from qaeval_core.stats import competition_ranks

__all__ = [
    "STATISTICS",
    "join_scores",
    "point_statistics",
    "bootstrap_statistics",
    "metric_vs_human",
    "statistics_wide",
    "accuracy_deviation",
    "model_leaderboard",
    "ranking_changes",
    "worst_disagreements",
    "confusion_table",
]

#: The statistics of :func:`metric_vs_human`, in display order.
STATISTICS: tuple[str, ...] = (
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "pearson",
    "spearman",
    "kendall_tau_b",
)
_DECISION_STATS = STATISTICS[:5]


def _require(frame: pd.DataFrame, name: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise QAEvalError(
            f"{name} frame: expected columns {', '.join(columns)}; missing {', '.join(missing)} "
            f"(got {', '.join(map(str, frame.columns)) or 'no columns'})."
        )


def join_scores(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Scores of human-judged items with the human verdict (and item columns) alongside.

    ``decision`` becomes a nullable boolean: the stored decision, else ``value >= threshold``
    when ``thresholds`` names the metric, else missing (decision statistics are then NaN).
    Returns the score columns plus ``final``, ``human_correct``, ``human_score`` and every
    ``items`` column. One score per (item, metric) is kept, the last: pass one configuration per
    metric id (or give each configuration its own id).
    """
    _require(scores, "scores", ("item_id", "metric_id", "value"))
    _require(human, "human", ("item_id", "final", "human_correct", "human_score"))
    frame = scores.copy()
    if "decision" not in frame.columns:
        frame["decision"] = pd.NA
    frame["decision"] = frame["decision"].astype("boolean")
    if thresholds:
        cut = frame["metric_id"].map(dict(thresholds))
        derived = (frame["value"] >= cut).astype("boolean").mask(cut.isna())
        frame["decision"] = frame["decision"].fillna(derived)
    frame["value"] = frame["value"].astype(float)
    frame = frame.drop_duplicates(["item_id", "metric_id"], keep="last")
    verdicts = human.loc[
        human["final"].notna(), ["item_id", "final", "human_correct", "human_score"]
    ]
    frame = frame.merge(verdicts, on="item_id", how="inner")
    if items is not None:
        _require(items, "items", ("item_id",))
        extra = [c for c in items.columns if c == "item_id" or c not in frame.columns]
        frame = frame.merge(items[extra], on="item_id", how="left")
    frame["human_correct"] = frame["human_correct"].astype(bool)
    return frame.reset_index(drop=True)


# -- statistics on one sample ------------------------------------------------------------------
def point_statistics(
    value: np.ndarray, decision: np.ndarray | None, correct: np.ndarray, score: np.ndarray
) -> dict[str, float]:
    """The statistics of one metric on one sample, by scikit-learn and scipy.

    Decision statistics treat "correct" as the positive class; undefined ones (no positive
    prediction, a single human class, a constant score) are NaN.
    """
    out = dict.fromkeys(STATISTICS, float("nan"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if decision is not None and len(decision):
            d = np.asarray(decision, dtype=bool)
            h = np.asarray(correct, dtype=bool)
            out["accuracy"] = float(accuracy_score(h, d))
            if len(np.unique(h)) == 2:
                out["balanced_accuracy"] = float(balanced_accuracy_score(h, d))
            p, r, f, _ = precision_recall_fscore_support(
                h, d, average="binary", pos_label=True, zero_division=np.nan
            )
            out.update(precision=float(p), recall=float(r), f1=float(f))
        x, y = np.asarray(value, dtype=float), np.asarray(score, dtype=float)
        if len(x) >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
            out["pearson"] = float(stats.pearsonr(x, y)[0])
            out["spearman"] = float(stats.spearmanr(x, y)[0])
            out["kendall_tau_b"] = float(stats.kendalltau(x, y, variant="b")[0])
    return out


# -- vectorised statistics over resamples ----------------------------------------------------
def _weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r per row of weights ``w`` (B, n); x and y are (n,) or (B, n)."""
    n = w.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x - (w * x).sum(axis=1, keepdims=True) / n
        yc = y - (w * y).sum(axis=1, keepdims=True) / n
        vx = (w * xc * xc).sum(axis=1)
        vy = (w * yc * yc).sum(axis=1)
        r = (w * xc * yc).sum(axis=1) / np.sqrt(vx * vy)
    scale = n[:, 0] * 1e-12
    r[~((vx > scale) & (vy > scale))] = np.nan
    return np.clip(r, -1.0, 1.0)


def _level_weights(w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weight of each distinct value of x per resample, (B, U), and each item's value index."""
    uniq, inv = np.unique(x, return_inverse=True)
    onehot = sparse.csr_matrix(
        (np.ones(len(x)), (np.arange(len(x)), inv)), shape=(len(x), len(uniq))
    )
    return np.asarray((onehot.T @ w.T).T), inv


def _weighted_ranks(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mid-ranks (1-based, ties averaged) of each item within each resample, (B, n)."""
    wu, inv = _level_weights(w, x)
    cum = np.cumsum(wu, axis=1)
    mid = cum - (wu - 1) / 2
    return mid[:, inv]


def _weighted_kendall_b(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b per resample, O(levels(y) * B * n) instead of O(B * n^2).

    Copies of one item tie in both variables; pairs across levels of y contribute the sign of
    their x difference, counted from cumulative weights over the sorted x values.
    """
    if len(np.unique(y)) > len(np.unique(x)):
        x, y = y, x
    wx, _ = _level_weights(w, x)  # (B, Ux)
    levels, y_inv = np.unique(y, return_inverse=True)
    _, x_inv = np.unique(x, return_inverse=True)
    s = np.zeros(len(w))
    below = np.zeros_like(wx)  # sum over lower y levels of (less - greater) at each x value
    wy = np.zeros((len(w), len(levels)))
    for k in range(len(levels)):
        members = y_inv == k
        wk, _ = _level_weights(w[:, members], x[members])
        # put this level's x-value weights on the common x grid
        grid = np.zeros_like(wx)
        cols = np.unique(x_inv[members])
        grid[:, cols] = wk
        s += (grid * below).sum(axis=1)
        cum = np.cumsum(grid, axis=1)
        total = cum[:, -1:]
        below += 2 * cum - grid - total
        wy[:, k] = grid.sum(axis=1)
    n = w.sum(axis=1)
    n0 = n * (n - 1) / 2
    n1 = (wx * (wx - 1) / 2).sum(axis=1)
    n2 = (wy * (wy - 1) / 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = s / np.sqrt((n0 - n1) * (n0 - n2))
    tau[~((n0 - n1 > 0) & (n0 - n2 > 0))] = np.nan
    return np.clip(tau, -1.0, 1.0)


def bootstrap_statistics(
    w: np.ndarray,
    value: np.ndarray,
    decision: np.ndarray | None,
    correct: np.ndarray,
    score: np.ndarray,
) -> dict[str, np.ndarray]:
    """:func:`point_statistics` for each row of resampling weights ``w`` (B, n) at once.

    A row of ones reproduces the point estimates; a row of counts equals the statistics of the
    data repeated that many times. Undefined values are NaN (skipped by the CI).
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    out: dict[str, np.ndarray] = {}
    nan = np.full(len(w), np.nan)
    h = np.asarray(correct, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        if decision is None:
            out.update(dict.fromkeys(_DECISION_STATS, nan))
        else:
            d = np.asarray(decision, dtype=bool)
            tp, fp = w @ (d & h), w @ (d & ~h)
            fn, tn = w @ (~d & h), w @ (~d & ~h)
            total = w.sum(axis=1)
            recall = tp / (tp + fn)
            spec = tn / (tn + fp)
            precision = tp / (tp + fp)
            out["accuracy"] = (tp + tn) / total
            out["balanced_accuracy"] = (recall + spec) / 2
            out["precision"] = precision
            out["recall"] = recall
            out["f1"] = 2 * tp / (2 * tp + fp + fn)
    x = np.asarray(value, dtype=float)
    y = np.asarray(score, dtype=float)
    out["pearson"] = _weighted_pearson(w, x, y)
    out["spearman"] = _weighted_pearson(w, _weighted_ranks(w, x), _weighted_ranks(w, y))
    out["kendall_tau_b"] = _weighted_kendall_b(w, x, y)
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


# -- metric vs human ---------------------------------------------------------------------------
def metric_vs_human(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    *,
    thresholds: Mapping[str, float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Accuracy, balanced accuracy, precision/recall/F1 of "correct" and Pearson, Spearman and
    Kendall tau-b of the raw score with ``human_score``, per metric, with paired bootstrap CIs.

    Decision statistics need a decision on every item of the metric (stored, or from
    ``thresholds``); otherwise they are NaN. Returns a long frame: ``metric_id``,
    ``statistic`` (one of :data:`STATISTICS`), ``estimate``, ``ci_low``, ``ci_high``,
    ``n_items``, ``n_boot_valid``.

    >>> human = pd.DataFrame({"item_id": [1, 2, 3, 4], "final": [2, 0, 2, 0],
    ...                       "human_correct": [True, False, True, False],
    ...                       "human_score": [1.0, 0.0, 1.0, 0.0]})
    >>> scores = pd.DataFrame({"item_id": [1, 2, 3, 4], "metric_id": "em",
    ...                        "value": [1.0, 0.0, 0.0, 0.0]})
    >>> table = metric_vs_human(scores, human, thresholds={"em": 0.5}, n_boot=100)
    >>> table.set_index("statistic").loc[["accuracy", "recall"], "estimate"].tolist()
    [0.75, 0.5]
    """
    joined = join_scores(scores, human, thresholds=thresholds)
    universe = np.sort(joined["item_id"].unique())
    position = pd.Series(np.arange(len(universe)), index=universe)
    rows = []
    tail = (1.0 - confidence) / 2 * 100
    for metric_id, part in joined.groupby("metric_id", sort=True):
        cols = position[part["item_id"]].to_numpy()
        value = part["value"].to_numpy(float)
        has_decision = part["decision"].notna().all()
        decision = part["decision"].to_numpy(dtype=bool) if has_decision else None
        correct = part["human_correct"].to_numpy(bool)
        score = part["human_score"].to_numpy(float)
        point = point_statistics(value, decision, correct, score)
        chunks: dict[str, list[np.ndarray]] = {s: [] for s in STATISTICS}
        for w in bootstrap_weights(len(universe), n_boot, seed=seed):
            wm = w[:, cols]
            got = bootstrap_statistics(wm, value, decision, correct, score)
            # a resample that drew none of this metric's items says nothing about it
            empty = wm.sum(axis=1) == 0
            for s in STATISTICS:
                got[s][empty] = np.nan
                chunks[s].append(got[s])
        for s in STATISTICS:
            boot = np.concatenate(chunks[s]) if chunks[s] else np.array([])
            valid = boot[np.isfinite(boot)]
            lo, hi = np.percentile(valid, [tail, 100 - tail]) if len(valid) else (np.nan, np.nan)
            rows.append(
                {
                    "metric_id": metric_id,
                    "statistic": s,
                    "estimate": point[s],
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "n_items": len(part),
                    "n_boot_valid": len(valid),
                }
            )
    columns = ["metric_id", "statistic", "estimate", "ci_low", "ci_high", "n_items", "n_boot_valid"]
    return pd.DataFrame(rows, columns=columns)


def statistics_wide(long: pd.DataFrame, column: str = "estimate") -> pd.DataFrame:
    """One row per metric, one column per statistic (from :func:`metric_vs_human`)."""
    wide = long.pivot(index="metric_id", columns="statistic", values=column)
    return wide.reindex(columns=[s for s in STATISTICS if s in wide.columns]).reset_index()


def _with_groups(joined: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    frame = joined.copy()
    for col in by:
        if col not in frame.columns:
            frame[col] = pd.NA
    if "qa_model" in by:
        has = frame["qa_model"].notna()
        frame = pd.concat([explode_models(frame[has]), frame[~has]], ignore_index=True)
    for col in by:
        frame[col] = frame[col].astype(object).where(frame[col].notna(), "(unknown)")
    return frame


def accuracy_deviation(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
    by: Sequence[str] = ("dataset", "qa_model"),
) -> pd.DataFrame:
    """How far each metric's verdict moves a QA model's accuracy (PANDA / SMILE tables).

    Per group and metric: ``human_accuracy`` (share of items humans judge correct),
    ``metric_accuracy`` (share the metric judges correct), ``deviation`` = metric - human (a
    lenient metric inflates, a strict one deflates), and ``agreement`` (share of items where the
    two agree, which can be low even at zero deviation). Items without a model count under
    "(unknown)". Returns columns ``*by``, ``metric_id``, ``n_items``, ``human_accuracy``,
    ``metric_accuracy``, ``deviation``, ``agreement``.
    """
    joined = join_scores(scores, human, items, thresholds=thresholds)
    joined = joined[joined["decision"].notna()]
    frame = _with_groups(joined, by)
    frame["decision"] = frame["decision"].astype(bool)
    frame["agree"] = frame["decision"] == frame["human_correct"]
    keys = [*by, "metric_id"]
    out = (
        frame.groupby(keys, sort=True)
        .agg(
            n_items=("item_id", "size"),
            human_accuracy=("human_correct", "mean"),
            metric_accuracy=("decision", "mean"),
            agreement=("agree", "mean"),
        )
        .reset_index()
    )
    out["deviation"] = out["metric_accuracy"] - out["human_accuracy"]
    return out[[*keys, "n_items", "human_accuracy", "metric_accuracy", "deviation", "agreement"]]


def model_leaderboard(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    items: pd.DataFrame,
    *,
    thresholds: Mapping[str, float] | None = None,
    min_items: int = 1,
) -> pd.DataFrame:
    """QA-model accuracy under each metric next to the human accuracy, ranked per dataset.

    Rank 1 is the most accurate; ties share the best rank
    (:func:`qaeval_core.stats.competition_ranks`, the one ranking of models). Models with fewer than
    ``min_items`` judged items are left out. Returns columns ``dataset``, ``qa_model``,
    ``metric_id``, ``n_items``, ``human_accuracy``, ``metric_accuracy``, ``deviation``,
    ``agreement``, ``human_rank``, ``metric_rank``.
    """
    _require(items, "items", ("item_id", "qa_model"))
    dev = accuracy_deviation(scores, human, items, thresholds=thresholds)
    dev = dev[(dev["n_items"] >= min_items) & (dev["qa_model"] != "(unknown)")].copy()
    group = dev.groupby(["dataset", "metric_id"])
    for value, rank in (("human_accuracy", "human_rank"), ("metric_accuracy", "metric_rank")):
        dev[rank] = group[value].transform(competition_ranks).astype(int)
    return dev.sort_values(["dataset", "metric_id", "human_rank", "qa_model"]).reset_index(
        drop=True
    )


def ranking_changes(leaderboard: pd.DataFrame) -> pd.DataFrame:
    """Does a metric reorder the QA models? Kendall tau-b between metric and human accuracy.

    A pair flips when humans put A strictly above B and the metric puts B strictly above A (a
    tie on either side is not a flip). Returns columns ``dataset``, ``metric_id``,
    ``n_models``, ``kendall_tau_b``, ``n_pairs``, ``n_flips``, ``flips`` (list of
    "A > B" strings in the human order).
    """
    rows = []
    for (dataset, metric_id), part in leaderboard.groupby(["dataset", "metric_id"], sort=True):
        h = part["human_accuracy"].to_numpy(float)
        m = part["metric_accuracy"].to_numpy(float)
        names = part["qa_model"].tolist()
        flips = [
            f"{names[i]} > {names[j]}" if h[i] > h[j] else f"{names[j]} > {names[i]}"
            for i, j in itertools.combinations(range(len(part)), 2)
            if (h[i] - h[j]) * (m[i] - m[j]) < 0
        ]
        tau = float("nan")
        if len(part) >= 2 and np.ptp(h) > 0 and np.ptp(m) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tau = float(stats.kendalltau(h, m, variant="b")[0])
        n = len(part)
        rows.append(
            {
                "dataset": dataset,
                "metric_id": metric_id,
                "n_models": n,
                "kendall_tau_b": tau,
                "n_pairs": n * (n - 1) // 2,
                "n_flips": len(flips),
                "flips": flips,
            }
        )
    columns = ["dataset", "metric_id", "n_models", "kendall_tau_b", "n_pairs", "n_flips", "flips"]
    return pd.DataFrame(rows, columns=columns)


# -- single items ----------------------------------------------------------------------------
def worst_disagreements(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    metric_id: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    strict: bool = False,
    limit: int | None = 50,
) -> pd.DataFrame:
    """Items where a metric's decision contradicts the humans, the most confident first.

    Confidence is scale-free: the score's percentile rank within the metric (``value`` ranked
    among all that metric's scores), for a "correct" call, and one minus it for an "incorrect"
    call, so a reranker logit and a [0, 1] similarity are ordered alike. ``strict`` keeps only
    clear opposites (metric correct vs final 0, metric incorrect vs final 2), leaving out items
    humans found unclear. Returns the joined columns plus ``confidence``.
    """
    joined = join_scores(scores, human, items, thresholds=thresholds)
    if metric_id is not None:
        joined = joined[joined["metric_id"] == metric_id]
    joined = joined[joined["decision"].notna()].copy()
    joined["decision"] = joined["decision"].astype(bool)
    pct = joined.groupby("metric_id")["value"].rank(method="average", pct=True)
    joined["confidence"] = np.where(joined["decision"], pct, 1.0 - pct)
    wrong = joined["decision"] != joined["human_correct"]
    if strict:
        final = joined["final"].astype(int)
        wrong &= (joined["decision"] & (final == 0)) | (~joined["decision"] & (final == 2))
    out = joined[wrong].sort_values(["confidence", "metric_id"], ascending=[False, True])
    out = out.reset_index(drop=True)
    return out if limit is None else out.head(limit)


def confusion_table(
    scores: pd.DataFrame,
    human: pd.DataFrame,
    metric_id: str,
    *,
    thresholds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Counts of the metric's decision (rows False/True) by the human final value (0/1/2)."""
    joined = join_scores(scores, human, thresholds=thresholds)
    joined = joined[(joined["metric_id"] == metric_id) & joined["decision"].notna()]
    table = pd.crosstab(joined["decision"].astype(bool), joined["final"].astype(int))
    table = table.reindex(index=[False, True], columns=[0, 1, 2], fill_value=0)
    table.index.name, table.columns.name = "decision", "final"
    return table
