"""Agreement between human annotators, and the policies that turn several labels into one.

Pure functions on pandas frames (no store, no app), so the agreement page, ``qaeval report`` and
the calibration code all compute the same numbers.

Input frames
------------
``labels``
    one row per current judgment: ``item_id``, ``rater``, ``value`` (0/1/2, the 3-point scale of
    :class:`~qaeval_core.schema.LabelValue`) and optionally ``rule`` (1-7, the cited PANDA rule).
    The store keeps label histories; if a (item, rater) pair still appears several times, the
    *last* row wins, as in the store's append-only tables.
``items``
    one row per item: ``item_id`` plus grouping columns (``dataset``, ``qa_model``). ``qa_model``
    may hold several names joined by :data:`~qaeval_core.schema.MODEL_SEPARATOR`; an item then
    counts for each of those models.
``adjudications``
    ``item_id``, ``value``: a researcher's final label; the last row per item wins.

Levels of measurement (the papers' convention, METHODS.md)
---------------------------------------------------------
``"nominal"`` is computed on the *binary* label (value == 2, "unclear" is not correct, SMILE
appendix B.2); ``"ordinal"`` on the 3-point scale 0 < 1 < 2. The ``krippendorff`` package defaults
to the *interval* level, so every call here names the level and the value domain explicitly (the
domain must be fixed, or ordinal distances would change with the values a resample happens to
contain).

Why it is one module: alpha with its bootstrap CIs, alpha per group, pairwise and per-rater
kappa and the aggregation policies all read one long label table through the same checks
(:func:`check_labels`) and share the resampling weights; split apart, that table's contract
would live in several places.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd

from qaeval_core.errors import QAEvalError
from qaeval_core.schema import split_models
from qaeval_core.stats import NO_MAJORITY, cohen_kappa, majority_vote
from qaeval_core.vocabulary import SCORE_POLICIES, ScorePolicy

__all__ = [
    "Level",
    "ScorePolicy",
    "AlphaEstimate",
    "check_labels",
    "value_counts",
    "krippendorff_alpha",
    "alpha_from_counts",
    "alpha_with_ci",
    "alpha_by_group",
    "pairwise_kappa",
    "rater_vs_rest",
    "label_count_table",
    "lave_soft_score",
    "aggregate_labels",
    "bootstrap_weights",
    "explode_models",
]

Level = Literal["nominal", "ordinal"]
_LEVELS: tuple[Level, ...] = ("nominal", "ordinal")
_GROUPINGS: tuple[str, ...] = ("dataset", "qa_model", "rule")


# -- input checks ----------------------------------------------------------------------------
def _require(frame: pd.DataFrame, name: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise QAEvalError(
            f"{name} frame: expected columns {', '.join(columns)}; missing {', '.join(missing)} "
            f"(got {', '.join(map(str, frame.columns)) or 'no columns'})."
        )


def _check_level(level: str) -> None:
    if level not in _LEVELS:
        raise QAEvalError(f"level must be one of {', '.join(_LEVELS)}; got {level!r}.")


def check_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """Validate a labels frame and keep the last row per (item_id, rater).

    Returns a copy with ``value`` as int and a ``rule`` column (all missing when absent), so the
    other functions can rely on the shape.
    """
    _require(labels, "labels", ("item_id", "rater", "value"))
    frame = labels.copy()
    if "rule" not in frame.columns:
        frame["rule"] = pd.NA
    frame = frame.dropna(subset=["value"])
    bad = ~frame["value"].isin([0, 1, 2])
    if bad.any():
        shown = ", ".join(map(repr, frame.loc[bad, "value"].unique()[:5]))
        raise QAEvalError(
            f"labels frame: value must be 0 (incorrect), 1 (unclear) or 2 (correct); got {shown}."
        )
    frame["value"] = frame["value"].astype(int)
    frame = frame.drop_duplicates(subset=["item_id", "rater"], keep="last")
    return frame.reset_index(drop=True)


# -- Krippendorff's alpha --------------------------------------------------------------------
def value_counts(labels: pd.DataFrame, *, level: Level) -> tuple[np.ndarray, np.ndarray]:
    """Per-item counts of each value: ``(item_ids, counts)``, counts of shape (items, V).

    Nominal: V = 2 (not correct, correct). Ordinal: V = 3 (0, 1, 2).
    """
    _check_level(level)
    frame = check_labels(labels)
    table = pd.crosstab(frame["item_id"], frame["value"]).reindex(columns=[0, 1, 2], fill_value=0)
    counts = table.to_numpy(dtype=float)
    if level == "nominal":
        counts = np.column_stack([counts[:, 0] + counts[:, 1], counts[:, 2]])
    return table.index.to_numpy(), counts


def krippendorff_alpha(labels: pd.DataFrame, *, level: Level = "nominal") -> float:
    """Krippendorff's alpha of a labels frame with the ``krippendorff`` package.

    NaN when no item has two labels or when every pairable label has the same value (alpha is
    undefined: there is no expected disagreement to compare with).

    >>> frame = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "rater": list("ababab"),
    ...                       "value": [2, 2, 0, 0, 2, 0]})
    >>> round(krippendorff_alpha(frame, level="nominal"), 3)
    0.444
    """
    _, counts = value_counts(labels, level=level)
    return _package_alpha(counts, level=level)


def _package_alpha(counts: np.ndarray, *, level: Level) -> float:
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return float("nan")
    totals = pairable.sum(axis=0)
    if (totals > 0).sum() < 2:
        return float("nan")
    return float(
        krippendorff.alpha(
            value_counts=pairable,
            value_domain=list(range(counts.shape[1])),
            level_of_measurement=level,
        )
    )


def _unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Each pairable item's contribution to the coincidence matrix, shape (items, V, V)."""
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :]
    diag = counts[:, :, None] * np.eye(counts.shape[1])[None]
    return (outer - diag) / (m - 1)[:, None, None]


def _alpha_from_coincidences(o: np.ndarray, level: Level) -> np.ndarray:
    """Alpha for a stack of coincidence matrices ``o`` of shape (B, V, V); NaN when undefined."""
    n_v = o.sum(axis=2)  # (B, V)
    n = n_v.sum(axis=1)
    v = o.shape[1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(v), o.shape)
    else:
        # delta(c, k) = (sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2, with the resample's marginals.
        cum = np.cumsum(n_v, axis=1)
        lo = np.minimum.outer(np.arange(v), np.arange(v))
        hi = np.maximum.outer(np.arange(v), np.arange(v))
        between = cum[:, hi] - cum[:, lo] + n_v[:, lo]
        delta = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_v[:, :, None] * n_v[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    alpha[~(expected > 1e-12)] = np.nan
    return alpha


def alpha_from_counts(
    counts: np.ndarray, weights: np.ndarray | None = None, *, level: Level = "nominal"
) -> np.ndarray:
    """Vectorised alpha for many resamples at once.

    ``counts`` is (items, V) as from :func:`value_counts`; ``weights`` (B, items) gives how many
    times each item appears in each resample (None: one resample, each item once). The result
    (B,) equals ``krippendorff.alpha`` on the explicitly resampled data (tested), but costs one
    matrix product instead of B calls.
    """
    _check_level(level)
    counts = np.asarray(counts, dtype=float)
    keep = counts.sum(axis=1) >= 2
    counts = counts[keep]
    w = np.ones((1, len(keep))) if weights is None else np.atleast_2d(weights)
    w = w[:, keep]
    if len(counts) == 0:
        return np.full(len(w), np.nan)
    per_unit = _unit_coincidences(counts).reshape(len(counts), -1)
    v = counts.shape[1]
    o = (w @ per_unit).reshape(len(w), v, v)
    return _alpha_from_coincidences(o, level)


def bootstrap_weights(
    n_items: int, n_boot: int, *, seed: int | np.random.Generator = 0, chunk: int = 2_000_000
) -> Iterator[np.ndarray]:
    """Resampling multiplicities for a bootstrap over items, yielded in chunks of rows.

    Row b says how many times each item is drawn in resample b (rows sum to ``n_items``). Chunks
    keep memory near ``chunk`` integers whatever the size; with the same seed, two calls give the
    same resamples, which is what makes comparisons between metrics *paired*.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if n_items <= 0 or n_boot <= 0:
        return
    rows = max(1, chunk // n_items)
    done = 0
    while done < n_boot:
        b = min(rows, n_boot - done)
        idx = rng.integers(0, n_items, size=(b, n_items))
        flat = (idx + n_items * np.arange(b)[:, None]).ravel()
        yield np.bincount(flat, minlength=b * n_items).reshape(b, n_items).astype(float)
        done += b


def _percentile_ci(samples: np.ndarray, confidence: float) -> tuple[float, float, int]:
    valid = samples[np.isfinite(samples)]
    if len(valid) == 0:
        return float("nan"), float("nan"), 0
    tail = (1.0 - confidence) / 2 * 100
    lo, hi = np.percentile(valid, [tail, 100 - tail])
    return float(lo), float(hi), int(len(valid))


@dataclass(frozen=True)
class AlphaEstimate:
    """Alpha with a percentile bootstrap interval over items."""

    alpha: float
    ci_low: float
    ci_high: float
    n_items: int
    n_pairable: int
    n_labels: int
    n_boot_valid: int


def alpha_with_ci(
    labels: pd.DataFrame,
    *,
    level: Level = "nominal",
    n_boot: int = 1000,
    seed: int | np.random.Generator = 0,
    confidence: float = 0.95,
) -> AlphaEstimate:
    """Alpha (``krippendorff`` package) and a bootstrap CI resampling pairable items.

    Only items with two or more labels carry agreement information, so those are resampled;
    resamples where alpha is undefined (a single value everywhere) are skipped and counted out
    of ``n_boot_valid``.
    """
    frame = check_labels(labels)
    _, counts = value_counts(frame, level=level)
    point = _package_alpha(counts, level=level)
    pairable = counts[counts.sum(axis=1) >= 2]
    samples = [
        alpha_from_counts(pairable, w, level=level)
        for w in bootstrap_weights(len(pairable), n_boot, seed=seed)
    ]
    boot = np.concatenate(samples) if samples else np.array([])
    lo, hi, valid = _percentile_ci(boot, confidence)
    return AlphaEstimate(
        alpha=point,
        ci_low=lo,
        ci_high=hi,
        n_items=len(counts),
        n_pairable=len(pairable),
        n_labels=len(frame),
        n_boot_valid=valid,
    )


# -- grouping --------------------------------------------------------------------------------
def explode_models(frame: pd.DataFrame, column: str = "qa_model") -> pd.DataFrame:
    """One row per (row, QA model): an answer given by several systems counts for each."""
    out = frame.copy()
    out[column] = out[column].map(lambda v: split_models(v) if isinstance(v, str) else [])
    out = out.explode(column)
    return out.dropna(subset=[column])


def _item_groups(frame: pd.DataFrame, items: pd.DataFrame | None, by: str) -> pd.DataFrame:
    """(item_id, group) pairs for one grouping."""
    if by == "rule":
        pairs = frame.dropna(subset=["rule"])[["item_id", "rule"]].rename(columns={"rule": "group"})
        pairs["group"] = pairs["group"].astype(int)
        return pairs.drop_duplicates()
    source = items if items is not None and by in items.columns else None
    if source is None:
        if by in frame.columns:
            source = frame.drop_duplicates("item_id")
        else:
            return pd.DataFrame(columns=["item_id", "group"])
    pairs = source[["item_id", by]]
    if by == "qa_model":
        pairs = explode_models(pairs)
    return pairs.rename(columns={by: "group"}).dropna(subset=["group"]).drop_duplicates()


def alpha_by_group(
    labels: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    by: Sequence[str] = _GROUPINGS,
    levels: Sequence[Level] = _LEVELS,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    min_pairable: int = 2,
) -> pd.DataFrame:
    """Alpha overall and per dataset / QA model / cited rule, each with a bootstrap CI.

    An item belongs to a rule's group when any of its current labels cites that rule (the
    question "how well do people agree on items where rule r came up"). Groups with fewer than
    ``min_pairable`` items with two labels are left out.

    Returns columns ``grouping`` ("overall", "dataset", "qa_model", "rule"), ``group``,
    ``level``, ``alpha``, ``ci_low``, ``ci_high``, ``n_items``, ``n_pairable``, ``n_labels``,
    ``n_boot_valid``.
    """
    frame = check_labels(labels)
    for name in by:
        if name not in _GROUPINGS:
            raise QAEvalError(f"by: expected some of {', '.join(_GROUPINGS)}; got {name!r}.")
    for level in levels:
        _check_level(level)
    subsets: list[tuple[str, object, pd.DataFrame]] = [("overall", "all", frame)]
    for name in by:
        pairs = _item_groups(frame, items, name)
        for group, members in pairs.groupby("group", sort=True):
            subsets.append((name, group, frame[frame["item_id"].isin(members["item_id"])]))
    rows = []
    for grouping, group, subset in subsets:
        for level in levels:
            est = alpha_with_ci(
                subset, level=level, n_boot=n_boot, seed=seed, confidence=confidence
            )
            if grouping != "overall" and est.n_pairable < min_pairable:
                continue
            rows.append({"grouping": grouping, "group": group, "level": level, **vars(est)})
    columns = ["grouping", "group", "level", *AlphaEstimate.__dataclass_fields__]
    return pd.DataFrame(rows, columns=columns)


# -- pairwise and per-rater agreement --------------------------------------------------------
def _binary(values: pd.Series | np.ndarray) -> np.ndarray:
    return (np.asarray(values) == 2).astype(int)


def pairwise_kappa(
    labels: pd.DataFrame,
    *,
    scale: Literal["binary", "3-point"] = "binary",
    weights: Literal["linear", "quadratic"] | None = None,
) -> pd.DataFrame:
    """Cohen's kappa (scikit-learn) for every pair of raters on the items both labelled.

    ``scale="binary"`` compares correct / not correct; ``"3-point"`` the raw values (pass
    ``weights="linear"`` for the ordinal, weighted kappa). Kappa is NaN when it is undefined
    (both raters gave one and the same value throughout).

    Returns columns ``rater_a``, ``rater_b``, ``n_items``, ``agreement`` (share of identical
    labels), ``kappa``.
    """
    frame = check_labels(labels)
    wide = frame.pivot(index="item_id", columns="rater", values="value")
    values = [0, 1] if scale == "binary" else [0, 1, 2]
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns, key=str), 2):
        both = wide[[a, b]].dropna()
        x, y = both[a].to_numpy(int), both[b].to_numpy(int)
        if scale == "binary":
            x, y = _binary(x), _binary(y)
        n = len(both)
        rows.append(
            {
                "rater_a": a,
                "rater_b": b,
                "n_items": n,
                "agreement": float(np.mean(x == y)) if n else float("nan"),
                "kappa": cohen_kappa(x, y, values, weights) if n else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["rater_a", "rater_b", "n_items", "agreement", "kappa"])


def rater_vs_rest(labels: pd.DataFrame) -> pd.DataFrame:
    """Each rater's binary agreement with the majority of the *other* raters.

    On every item the rater labelled along with at least one other rater, the others' majority
    is taken on the binary label; items where the others split evenly have no majority and are
    skipped. ``alpha_without`` is the nominal alpha of everyone else: a rater whose removal
    raises alpha a lot is the one to talk to.

    Returns columns ``rater``, ``n_labels``, ``n_items`` (compared), ``agreement``, ``kappa``,
    ``alpha_without``.
    """
    frame = check_labels(labels)
    frame["correct"] = _binary(frame["value"])
    per_item = frame.groupby("item_id")["correct"].agg(["sum", "count"])
    rows = []
    for rater, own in frame.groupby("rater", sort=True):
        totals = per_item.loc[own["item_id"]].to_numpy()
        others_correct = totals[:, 0] - own["correct"].to_numpy()
        others_n = totals[:, 1] - 1
        vote = majority_vote(np.column_stack([others_n - others_correct, others_correct]))
        keep = vote != NO_MAJORITY
        mine = own["correct"].to_numpy()[keep]
        theirs = vote[keep]
        n = int(keep.sum())
        rows.append(
            {
                "rater": rater,
                "n_labels": len(own),
                "n_items": n,
                "agreement": float(np.mean(mine == theirs)) if n else float("nan"),
                "kappa": cohen_kappa(mine, theirs, [0, 1]) if n else float("nan"),
                "alpha_without": krippendorff_alpha(frame[frame["rater"] != rater])
                if (frame["rater"] != rater).any()
                else float("nan"),
            }
        )
    columns = ["rater", "n_labels", "n_items", "agreement", "kappa", "alpha_without"]
    return pd.DataFrame(rows, columns=columns)


def label_count_table(labels: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """How many items have 0, 1, 2 and 3+ labels (0 only counted when ``items`` is given).

    Returns columns ``n_labels`` ("0", "1", "2", "3+") and ``n_items``.
    """
    frame = check_labels(labels)
    per_item = frame.groupby("item_id").size()
    if items is not None:
        _require(items, "items", ("item_id",))
        per_item = per_item.reindex(items["item_id"].unique(), fill_value=0)
    buckets = per_item.clip(upper=3).map({0: "0", 1: "1", 2: "2", 3: "3+"})
    order = ["0", "1", "2", "3+"] if items is not None else ["1", "2", "3+"]
    counts = buckets.value_counts().reindex(order, fill_value=0)
    return pd.DataFrame({"n_labels": order, "n_items": counts.to_numpy(dtype=int)})


# -- aggregation policies --------------------------------------------------------------------
def lave_soft_score(n_correct: np.ndarray | int, n_labels: np.ndarray | int) -> np.ndarray:
    """LAVE's human score generalised from 5 raters to any number.

    LAVE (section 4) maps 5 binary ratings to 1.0 when >= 4 say correct, 0.5 when 2-3 do, else
    0. As shares of raters that is >= 0.8 -> 1.0, >= 0.4 -> 0.5, else 0.0, which is what is
    applied here for any count: 3 raters give 1.0 / 0.5 / 0 / 0 for 3 / 2 / 1 / 0 correct, 2 raters
    1.0 / 0.5 / 0, one rater 1.0 / 0. NaN where there are no labels.

    >>> lave_soft_score([5, 4, 3, 2, 1, 0], 5).tolist()
    [1.0, 1.0, 0.5, 0.5, 0.0, 0.0]
    """
    n_correct = np.asarray(n_correct, dtype=float)
    n_labels = np.asarray(n_labels, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = n_correct / n_labels
    eps = 1e-9  # 2/5 must count as 0.4 exactly
    out = np.where(share + eps >= 0.8, 1.0, np.where(share + eps >= 0.4, 0.5, 0.0))
    return np.where(n_labels > 0, out, np.nan)


def aggregate_labels(
    labels: pd.DataFrame,
    adjudications: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    *,
    score: ScorePolicy = "mean",
) -> pd.DataFrame:
    """One human verdict per item, under the three policies of issue 5.

    - ``majority``: the most frequent 3-point value; a tie between values gives 1 ("unclear",
      the honest summary of a split) and sets ``tie``.
    - ``soft``: :func:`lave_soft_score` of the share of raters saying "clearly correct".
    - ``adjudicated``: the researcher's label (last row per item), which overrides the raters:
      ``final`` = adjudicated if present, else majority.

    ``needs_adjudication`` is a tie that nobody has adjudicated yet; ``disagreement`` means the
    raters did not all give the same value. ``human_correct`` = (final == 2). ``human_score`` is
    the continuous score metrics are correlated with: ``"mean"`` (default) the mean value / 2 of
    the raters, ``"final"`` final / 2, ``"soft"`` the LAVE score; an adjudicated item always
    scores adjudicated / 2, because the researcher's verdict replaces the raters'.

    Items come from the labels, the adjudications and ``items`` (if given), so unlabelled items
    appear with ``n_labels`` 0 and missing verdicts. Returns columns ``item_id``, ``n_labels``,
    ``n_correct``, ``majority``, ``tie``, ``disagreement``, ``soft``, ``needs_adjudication``,
    ``adjudicated``, ``final``, ``human_correct``, ``human_score``.

    >>> labels = pd.DataFrame({"item_id": [1, 1, 2, 2, 2], "rater": list("ababc"),
    ...                        "value": [2, 0, 2, 2, 1]})
    >>> agg = aggregate_labels(labels)
    >>> agg["majority"].tolist(), agg["needs_adjudication"].tolist()
    ([1, 2], [True, False])
    """
    if score not in SCORE_POLICIES:
        raise QAEvalError(
            f"score must be one of {', '.join(SCORE_POLICIES)}; got {score!r}.", param="score"
        )
    frame = check_labels(labels)
    counts = pd.crosstab(frame["item_id"], frame["value"]).reindex(columns=[0, 1, 2], fill_value=0)
    ids = list(counts.index)
    adj = pd.Series(dtype="Int64")
    if adjudications is not None and len(adjudications):
        _require(adjudications, "adjudications", ("item_id", "value"))
        last = adjudications.dropna(subset=["value"]).drop_duplicates("item_id", keep="last")
        adj = last.set_index("item_id")["value"].astype("Int64")
        ids += [i for i in adj.index if i not in counts.index]
    if items is not None:
        _require(items, "items", ("item_id",))
        seen = set(ids)
        ids += [i for i in items["item_id"].unique() if i not in seen]
    counts = counts.reindex(ids, fill_value=0)
    c = counts.to_numpy(dtype=int)
    n = c.sum(axis=1)
    vote = majority_vote(c)
    tie = (n > 0) & (vote == NO_MAJORITY)
    majority = np.where(tie, 1, vote)
    out = pd.DataFrame({"item_id": ids, "n_labels": n, "n_correct": c[:, 2]})
    out["majority"] = pd.array(np.where(n > 0, majority, 0), dtype="Int64")
    out.loc[n == 0, "majority"] = pd.NA
    out["tie"] = tie
    out["disagreement"] = (c > 0).sum(axis=1) > 1
    out["soft"] = lave_soft_score(c[:, 2], n)
    out["adjudicated"] = pd.array(adj.reindex(ids).to_numpy(), dtype="Int64")
    has_adj = out["adjudicated"].notna().to_numpy()
    out["needs_adjudication"] = tie & ~has_adj
    out["final"] = out["adjudicated"].fillna(out["majority"]).astype("Int64")
    out["human_correct"] = (out["final"] == 2).astype("boolean")
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (c @ np.array([0.0, 1.0, 2.0])) / n / 2
    base = {
        "mean": mean,
        "final": out["final"].astype("Float64").to_numpy(dtype=float, na_value=np.nan) / 2,
        "soft": out["soft"].to_numpy(dtype=float),
    }[score]
    adj_score = out["adjudicated"].astype("Float64").to_numpy(dtype=float, na_value=np.nan) / 2
    out["human_score"] = np.where(has_adj, adj_score, base)
    columns = [
        "item_id",
        "n_labels",
        "n_correct",
        "majority",
        "tie",
        "disagreement",
        "soft",
        "needs_adjudication",
        "adjudicated",
        "final",
        "human_correct",
        "human_score",
    ]
    return out[columns]
