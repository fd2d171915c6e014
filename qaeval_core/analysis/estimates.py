"""Per-QA-model accuracy with valid confidence intervals from a judge plus a few human labels.

Why this exists: a calibrated judge scores every answer, but its accuracy is biased by its own
errors and has no valid interval; human labels are unbiased but few. Prediction-powered
inference (PPI, Angelopoulos et al. 2023; PPI++ power tuning, 2024) uses both: the judge's mean
over *every* item, corrected by the judge's mean error on a *random* labelled sample. The
interval is valid whatever the judge; a good judge makes it narrower than the human-only one,
and power tuning (``lam=None``) makes a useless judge fall back to about the classical
interval. The arithmetic is ``ppi_py``'s and scipy's; this module chooses the data and the
small-sample quantiles.

Three estimates per model (:func:`estimate_accuracy`):

* ``ppi``: ``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci``, ``lam=None``; the "unlabelled"
  predictions are those of *all* the model's items, labelled ones included (the difference
  estimator of the accuracy over these items; with every item labelled it is the human mean).
  The interval is ppi_py's standard error times Student's t quantile (n - 1 degrees of
  freedom) rather than the normal one, clipped to [0, 1]: with 10-20 labels per model the
  normal interval covered 0.90 of 95% in ``experiments/triage_ppi.py``, the t one 0.92-0.96;
* ``human_only``: the random labels' share correct with the Wilson score interval
  (:func:`qaeval_core.stats.wilson_ci`, scipy's ``binomtest`` Wilson): the normal (Wald)
  interval collapses to a point when every label agrees and covered 0.90 with 10-20 labels;
  Wilson covers 0.96 there;
* the judge alone, with **no valid interval** (its bias is unknown without labels), two
  numbers under two names (issue 32, item 7: one name had meant both): ``judge_mean_probability``,
  the mean of the judge's prediction over every item (its expected accuracy if it were
  calibrated), and ``judge_accuracy``, the share of items it judged correct (``judge_correct``;
  the same number when the prediction is 0/1). The report, the Leaderboard and ``qaeval
  estimate`` use these two names.

**A degenerate PPI variance is never believed.** PPI's standard error comes from the spread of
the labelled items' rectifier ``y - lam * f``. When that spread is zero (every label equal, or
every label exactly what the judge predicted), the estimated variance is zero and the interval
a point ([1.0, 1.0] from 12 labels that all say "correct"), a certainty 12 labels cannot give.
Then the PPI interval is widened to cover the Wilson interval of the same random labels
(the hull of both; ``ppi_note`` says so and ``ppi_se`` is the hull's): the Wilson interval is
valid on its own, so the hull covers at least as often, and it is as wide as the labels alone
justify (12 of 12 correct: [0.76, 1.00] at 95%).

Estimator choices, each tested:

* **Labels chosen with known probabilities count, weighted** (issue 24). The column
  ``probability`` (default ``sample_probability``) gives per labelled row the probability that
  it was chosen for labelling (:mod:`.selection_design`: drawn at random with a probability that
  grows with the judge's doubt). When the known probabilities of the labelled rows differ, the
  estimate is inverse-probability-weighted PPI (:mod:`.ipw_estimates`, Zrnic and Candes 2024):
  every row with a known probability counts, weighted by ``1 / p`` (1: labelled for sure), and
  labelled rows with no known probability are left out (counted in ``n_not_random``; their
  labels could have been chosen for any reason); ``n_weighted`` says how many labels were
  weighted and ``ppi_note`` their effective number. Equal probabilities (or none given) are a
  uniform sample and take the rules below, as before.
* **Selection: non-random labels are left out.** PPI and the classical interval need the
  labelled items to be a random sample. The column ``sample`` (default ``label_sample``) says
  per labelled row how it was chosen: ``"random"`` (a seeded random audit sample) or anything
  else (``"triage"``, ``"active"``, ``"queue"``, missing); only ``"random"`` rows enter ``ppi``
  and ``human_only`` (the rest are counted in ``n_not_random``), since labels chosen by, say,
  the judge's doubt bias both. **Without the column, every labelled row is taken as a random
  sample.** Labelled rows none of which is random are an :class:`~qaeval_core.errors.InputError`.
* **Labels**: correct = clearly correct (2 on the 3-point scale, 1 / true on the binary one);
  unclear counts as not correct, as everywhere in qaeval. The scale is a row's own
  ``label_scale`` column (the import schema's), else ``label_scale``, else inferred: booleans
  are binary, a 2 means three-point, and 0/1 alone is ambiguous (is 1 correct or unclear?) and
  refused until the scale is named.
* **Models**: a ``qa_model`` cell naming several models (:func:`~qaeval_core.schema.split_models`)
  counts for each; the overall row ``(all)`` counts every item once, rows with no model too.
  A model with fewer than ``min_labels`` random labels gets no ``ppi`` / ``human_only``
  estimate and says why in ``reason``.

:func:`compare_models` gives pairwise PPI differences, bounded: every pair of up to
:data:`ALL_PAIRS_MODELS` models, else only models adjacent in the PPI ranking (``pairs``; 1,500
models would make 1.1 million pairs: 520 s and 5.8 GB); :func:`estimates_to_json` the JSON form
that ``qaeval estimate`` writes.

Why it is one module: the three estimates, their intervals and the pairwise differences all
read one selection of the data (which labels are random, which scale, which rows belong to a
model); apart, an estimate and its comparison could count different labels.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.analysis.ipw_estimates import (
    cell_number,
    read_sample_probabilities,
    weighted_estimate,
)
from qaeval_core.analysis.label_values import (
    ROW_SCALE_COLUMN,
    TRUE_WORDS,
    check_label_scale,
    correct_labels,
    is_blank_label,
)
from qaeval_core.errors import InputError
from qaeval_core.io.cells import decode_json
from qaeval_core.schema import join_models, split_models
from qaeval_core.stats import normal_quantile, rank_order, student_quantile, wilson_ci

__all__ = [
    "ALL_MODELS",
    "ALL_PAIRS_MODELS",
    "JUDGE_CORRECT",
    "MAX_PAIRS",
    "NO_AUDIT_LABELS",
    "PAIR_MODES",
    "RANDOM_SAMPLE",
    "ROW_SCALE_COLUMN",
    "SAMPLE_PROBABILITY",
    "compare_estimates",
    "compare_models",
    "correct_labels",
    "default_prediction",
    "estimate_accuracy",
    "estimates_to_json",
]

#: The model name of the overall row.
ALL_MODELS = "(all)"
#: The ``sample`` value of rows labelled as part of a seeded random sample.
RANDOM_SAMPLE = "random"
#: The column giving the probability that a labelled row was chosen for labelling.
SAMPLE_PROBABILITY = "sample_probability"
_PREDICTIONS = ("judge_probability", "judge_correct")
_NO_JUDGE_CI = "no valid CI: the judge's bias is unknown without labels"
#: The column with the judge's decisions, read for ``judge_accuracy``.
JUDGE_CORRECT = "judge_correct"
#: ``reason`` of every model when no label is from a random sample (``require_labels=False``).
NO_AUDIT_LABELS = (
    "no labels from a random audit sample yet ({n} labelled item(s), none drawn at random): "
    "deal a seeded random audit sample and label it"
)
#: ``ppi_note`` of a PPI interval widened to the labels' Wilson interval (module docstring).
DEGENERATE_NOTE = (
    "PPI variance estimate is zero (the random labels never vary against the judge): interval "
    "widened to cover the labels' Wilson interval"
)
#: Which pairs :func:`compare_estimates` compares: ``auto`` (every pair up to
#: :data:`ALL_PAIRS_MODELS` models, else ``adjacent``), ``all``, ``adjacent`` (each model and
#: the next one down the PPI ranking) or ``top`` (every pair among the ``top`` best ranked).
PAIR_MODES = ("auto", "all", "adjacent", "top")
#: Most models ``pairs="auto"`` compares all pairs of (190 pairs).
ALL_PAIRS_MODELS = 20
#: Most pairs any mode computes: pairs grow with the square of the models.
MAX_PAIRS = 20_000

COLUMNS = [
    "model",
    "n_items",
    "n_labelled",
    "n_not_random",
    "n_weighted",
    "ppi_estimate",
    "ppi_ci_low",
    "ppi_ci_high",
    "ppi_se",
    "human_only_estimate",
    "human_only_ci_low",
    "human_only_ci_high",
    "judge_mean_probability",
    "judge_accuracy",
    "reason",
    "ppi_note",
]


def default_prediction(frame: pd.DataFrame) -> str:
    """``judge_probability`` when the frame has it (narrower intervals), else ``judge_correct``."""
    for column in _PREDICTIONS:
        if column in frame.columns:
            return column
    raise InputError(
        "No judge prediction column: the frame has neither judge_probability nor judge_correct. "
        "Score it with a calibrated judge first, or name the column holding the judge's "
        "prediction (prediction=...)."
    )


def _predictions(frame: pd.DataFrame, column: str) -> np.ndarray:
    if column not in frame.columns:
        names = ", ".join(map(str, frame.columns))
        raise InputError(f"Prediction column {column!r} is not in the data (columns: {names}).")
    raw = frame[column]
    raw = raw.map(lambda v: TRUE_WORDS.get(v.strip().lower(), v) if isinstance(v, str) else v)
    values = np.array([cell_number(v) for v in raw], dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0) | (values > 1))
    if bad.size:
        rows = ", ".join(str(i + 1) for i in bad[:5])
        raise InputError(
            f"Prediction column {column!r} needs a number in [0, 1] (or true/false) on every "
            f"row; {bad.size} row(s) have none (rows {rows}{', ...' if bad.size > 5 else ''})."
        )
    return values


def _model_rows(frame: pd.DataFrame, column: str) -> dict[str, np.ndarray]:
    """Row positions per model name, a multi-model cell counting for each of its models."""
    if column not in frame.columns:
        return {}

    def cell(v: Any) -> Any:  # a list of names, maybe JSON-encoded (CSV), or a joined string
        v = decode_json(v, column, want=list)
        return join_models([str(x) for x in v]) if isinstance(v, list | tuple | np.ndarray) else v

    cells = frame[column].map(cell)
    codes, uniques = pd.factorize(cells.map(lambda v: None if is_blank_label(v) else str(v)))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    parts: dict[str, list[np.ndarray]] = {}
    for code, cell in enumerate(uniques):
        for name in split_models(cell):
            parts.setdefault(name, []).append(order[bounds[code] : bounds[code + 1]])
    return {name: np.sort(np.concatenate(p)) for name, p in sorted(parts.items())}


def _ppi(y: np.ndarray, f_lab: np.ndarray, f_all: np.ndarray, alpha: float) -> tuple[float, ...]:
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    # A constant judge carries no information (and power tuning would divide by zero).
    lam = 0.0 if np.ptp(f_all) == 0 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        est = float(np.ravel(ppi_mean_pointestimate(y, f_lab, f_all, lam=lam))[0])
        low, high = (float(np.ravel(b)[0]) for b in ppi_mean_ci(y, f_lab, f_all, alpha, lam=lam))
    se = (high - low) / (2 * _z(alpha))
    # ppi_py's interval is the normal (CLT) one; with a few labels per model it undercovers
    # (0.90 at 10-20 labels, experiments/triage_ppi.py), so the half-width uses Student's t
    # quantile with n - 1 degrees of freedom instead, as a small-sample t-interval would.
    half = _t(alpha, len(y)) * se
    return est, max(est - half, 0.0), min(est + half, 1.0), se


def _z(alpha: float) -> float:
    return normal_quantile(1 - alpha)


def _t(alpha: float, n: int) -> float:
    return student_quantile(1 - alpha, n - 1)


def _weighted_row(row: dict[str, Any], y, f_lab, f, prob, alpha: float) -> dict[str, Any]:
    """PPI and human-only of labels drawn with unequal known probabilities (module docstring)."""
    ppi = weighted_estimate(y, f_lab, f, prob, alpha)
    human = weighted_estimate(y, f_lab, f, prob, alpha, lam=0.0)
    note = (
        f"inverse-probability weighted (1 / {SAMPLE_PROBABILITY}): {len(y)} labels weigh as "
        f"{ppi.n_effective:.1f} uniform ones"
    )
    row.update(
        ppi_estimate=ppi.estimate,
        ppi_ci_low=ppi.ci_low,
        ppi_ci_high=ppi.ci_high,
        ppi_se=ppi.se,
        human_only_estimate=human.estimate,
        human_only_ci_low=human.ci_low,
        human_only_ci_high=human.ci_high,
        n_weighted=len(y),
        ppi_note=note + ("; " + DEGENERATE_NOTE if ppi.degenerate else ""),
    )
    return row


def _row(name, rows, y, use, f, acc, prob, alpha, min_labels) -> dict[str, Any]:
    y, use, f, acc = y[rows], use[rows], f[rows], acc[rows]
    labelled = ~np.isnan(y)
    used = labelled & use
    n = int(used.sum())
    row: dict[str, Any] = dict.fromkeys(COLUMNS, np.nan)
    row.update(
        model=name,
        n_items=len(rows),
        n_labelled=n,
        n_not_random=int((labelled & ~use).sum()),
        n_weighted=0,
        judge_mean_probability=float(f.mean()) if len(f) else np.nan,
        judge_accuracy=float(acc.mean()) if len(acc) else np.nan,
        reason="",
        ppi_note="",
    )
    if n < min_labels:
        kind = "random" if prob is None else "known-probability"
        row["reason"] = f"only {n} {kind} labels (needs >= {min_labels})"
        return row
    if prob is not None:
        w = 1.0 / prob[rows][used]
        n_eff = float(w.sum() ** 2 / (w**2).sum())
        if n_eff < min_labels:  # one heavy label would decide the interval alone
            row["reason"] = (
                f"{n} known-probability labels weigh as {n_eff:.1f} uniform ones (needs >= "
                f"{min_labels}): a few labels with small sample probabilities outweigh the rest"
            )
            return row
        return _weighted_row(row, y[used], f[used], f, prob[rows][used], alpha)
    est, low, high, se = _ppi(y[used], f[used], f, alpha)
    # Wilson: unlike the normal interval it neither collapses to a point when every label
    # agrees nor leaves [0, 1], and it covers at about the nominal rate with a few labels.
    h_low, h_high = wilson_ci(int(round(float(y[used].sum()))), len(y[used]), 1 - alpha)
    y_lab, f_lab = y[used], f[used]
    if np.ptp(y_lab) == 0 or np.ptp(y_lab - f_lab) == 0 or not se > 0:
        low, high = min(low, h_low), max(high, h_high)
        se = (high - low) / (2 * _z(alpha))
        row["ppi_note"] = DEGENERATE_NOTE
    row.update(ppi_estimate=est, ppi_ci_low=low, ppi_ci_high=high, ppi_se=se)
    row.update(
        human_only_estimate=float(y[used].mean()),
        human_only_ci_low=h_low,
        human_only_ci_high=h_high,
    )
    return row


def estimate_accuracy(
    frame: pd.DataFrame,
    *,
    prediction: str | None = None,
    label: str = "gold_label",
    model: str = "qa_model",
    sample: str = "label_sample",
    probability: str = SAMPLE_PROBABILITY,
    confidence: float = 0.95,
    min_labels: int = 10,
    label_scale: str | None = None,
    require_labels: bool = True,
) -> pd.DataFrame:
    """Accuracy per QA model (and overall, model ``(all)``): PPI, human-only and the judge's.

    One row per model with the columns ``model, n_items, n_labelled`` (labels used),
    ``n_not_random`` (labels left out: not random, or no known probability), ``n_weighted``
    (labels used with an inverse-probability weight, from column ``probability``),
    ``ppi_estimate, ppi_ci_low, ppi_ci_high, ppi_se, human_only_estimate, human_only_ci_low,
    human_only_ci_high, judge_mean_probability, judge_accuracy, reason`` (empty, or why the
    PPI and human-only estimates are not available). The module docstring says which rows
    count and how labels are read. Without a label from a random sample this raises, unless
    ``require_labels`` is False: then every model gets its judge numbers, no PPI or human-only
    estimate, and :data:`NO_AUDIT_LABELS` as its reason (a report still shows the judge).
    ``confidence``, ``prediction``, ``weighted`` and ``audit_labels`` are in ``attrs``.
    """
    alpha = _check_confidence(confidence)
    min_labels = _check_min_labels(min_labels)
    if label_scale is not None:
        check_label_scale(label_scale, "label_scale")
    prediction = prediction or default_prediction(frame)
    f = _predictions(frame, prediction)
    if label not in frame.columns:
        raise InputError(
            f"No label column {label!r}: PPI needs human labels on a random sample of the items."
        )
    row_scales = frame[ROW_SCALE_COLUMN] if ROW_SCALE_COLUMN in frame.columns else None
    y = correct_labels(frame[label], label_scale, row_scales, what=label)
    labelled = ~np.isnan(y)
    acc = _judge_decisions(frame, f)
    if not labelled.any() and require_labels:
        raise InputError(
            f"No row has a human label in {label!r}: PPI needs labels on a random sample."
        )
    rnd = np.ones(len(frame), bool)
    if sample in frame.columns:
        rnd = frame[sample].map(lambda v: str(v).strip().lower() == RANDOM_SAMPLE).to_numpy(bool)
    prob = read_sample_probabilities(frame, probability)
    known = labelled & ~np.isnan(prob)
    weighted = bool(known.any() and np.ptp(prob[known]) > 0)
    if weighted:
        use = known
    else:  # a uniform sample: random rows, and rows of one known probability
        use, prob = rnd | known, None
    none = not (labelled & use).any()
    if none and require_labels:
        raise InputError(
            f"The {int(labelled.sum())} labelled row(s) are not a random sample (column {sample!r} "
            f"is never {RANDOM_SAMPLE!r}), so no valid interval can be drawn from them. Deal a "
            "seeded random audit sample of the items (the store's AuditSample deal: labelled "
            "items it draws count at once) and label it; in a file, rows of such a sample say "
            f"{RANDOM_SAMPLE!r} in column {sample!r}."
        )
    groups = _model_rows(frame, model)
    groups[ALL_MODELS] = np.arange(len(frame))
    rows = [_row(n, r, y, use, f, acc, prob, alpha, min_labels) for n, r in groups.items()]
    table = pd.DataFrame(rows, columns=COLUMNS)
    if none:
        table["reason"] = NO_AUDIT_LABELS.format(n=int(labelled.sum()))
    table.attrs.update(
        confidence=confidence,
        prediction=prediction,
        label=label,
        weighted=weighted,
        audit_labels=not none,
    )
    return table


def _judge_decisions(frame: pd.DataFrame, f: np.ndarray) -> np.ndarray:
    """Per row 1.0 where the judge said correct, 0.0 where not: the ``judge_correct`` column,
    else the prediction when it is 0/1 already; NaN when neither says (a probability alone
    does not say where the judge's threshold is)."""
    if JUDGE_CORRECT in frame.columns:
        try:
            return _predictions(frame, JUDGE_CORRECT)
        except InputError:  # not the judge's decisions after all: the accuracy is unknown
            return np.full(len(f), np.nan)
    return f if np.isin(f, (0.0, 1.0)).all() else np.full(len(f), np.nan)


def _check_confidence(confidence: float) -> float:
    """``alpha`` of a confidence level in (0, 1)."""
    ok = isinstance(confidence, int | float) and not isinstance(confidence, bool)
    if not ok or not 0 < confidence < 1:
        raise InputError(f"confidence must be a number in (0, 1), e.g. 0.95; got {confidence!r}")
    return 1 - float(confidence)


def _check_min_labels(min_labels: int) -> int:
    ok = isinstance(min_labels, int | np.integer) and not isinstance(min_labels, bool)
    if not ok or min_labels < 2:
        raise InputError(f"min_labels must be a whole number >= 2; got {min_labels!r}")
    return int(min_labels)


def _ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Models with a PPI estimate, best first (:func:`qaeval_core.stats.rank_order`: ties by
    name, so the order is stable)."""
    order = rank_order([r["ppi_estimate"] for r in rows], [r["model"] for r in rows])
    return [rows[i] for i in order]


def _pairs(
    rows: list[dict[str, Any]], pairs: str, top: int
) -> tuple[str, list[tuple[dict, dict]], str]:
    """The mode used, the pairs to compare and the note saying what was left out."""
    if pairs not in PAIR_MODES:
        raise InputError(f"pairs must be one of {', '.join(PAIR_MODES)}; got {pairs!r}")
    m = len(rows)
    every = m * (m - 1) // 2
    if pairs == "auto":
        pairs = "all" if m <= ALL_PAIRS_MODELS else "adjacent"
    if pairs == "all":
        if every > MAX_PAIRS:
            raise InputError(
                f"{m:,} models make {every:,} pairs (more than {MAX_PAIRS:,}); compare the "
                "models adjacent in the ranking (pairs 'adjacent') or every pair of the best "
                "(pairs 'top' with top=K)"
            )
        return pairs, list(itertools.combinations(rows, 2)), ""
    ranked = _ranked(rows)
    unranked = m - len(ranked)
    without = f"; {unranked} model(s) without a PPI estimate are not compared" if unranked else ""
    if pairs == "adjacent":
        note = (
            f"adjacent-rank pairs only: each of the {len(ranked):,} ranked models against the "
            f"next one down ({max(len(ranked) - 1, 0):,} of {every:,} pairs){without}"
        )
        return pairs, list(itertools.pairwise(ranked)), note
    if isinstance(top, bool) or not isinstance(top, int | np.integer) or top < 2:
        raise InputError(f"top must be a whole number >= 2; got {top!r}")
    best = ranked[: int(top)]
    if len(best) * (len(best) - 1) // 2 > MAX_PAIRS:
        raise InputError(f"top={top} makes more than {MAX_PAIRS:,} pairs; choose a smaller top")
    note = f"every pair of the {len(best)} best-ranked models only (of {m:,} models){without}"
    return pairs, list(itertools.combinations(best, 2)), note


def compare_estimates(
    table: pd.DataFrame,
    confidence: float | None = None,
    *,
    pairs: str = "auto",
    top: int = 10,
) -> pd.DataFrame:
    """Pairs of models of an :func:`estimate_accuracy` table (``(all)`` left out).

    Which pairs: ``pairs`` (:data:`PAIR_MODES`; ``auto``: every pair of up to
    :data:`ALL_PAIRS_MODELS` models, else the models adjacent in the PPI ranking, since pairs
    grow with the square of the models); no mode computes more than :data:`MAX_PAIRS`. The
    result's ``attrs`` hold ``pairs`` (the mode used) and ``note`` (what was left out, empty
    when every pair is there).

    Columns ``model_a, model_b, difference`` (PPI accuracy of a minus b), ``ci_low, ci_high``
    (normal approximation, ``sqrt(se_a**2 + se_b**2)``), ``significant`` (the interval excludes 0)
    and ``reason``. The standard error **assumes the two estimates are independent**. Items
    shared by both models (multi-model cells) and answers to the same questions usually make
    them positively correlated, which makes this interval conservative (too wide); negatively
    correlated errors would make it too narrow.
    """
    confidence = table.attrs.get("confidence", 0.95) if confidence is None else confidence
    z = _z(_check_confidence(confidence))
    rows = table[table["model"] != ALL_MODELS].to_dict("records")
    mode, chosen, note = _pairs(rows, pairs, top)
    out = []
    for a, b in chosen:
        rec = dict.fromkeys(["difference", "ci_low", "ci_high"], np.nan)
        rec.update(model_a=a["model"], model_b=b["model"], significant=False, reason="")
        missing = [r["model"] for r in (a, b) if np.isnan(r["ppi_estimate"])]
        if missing:
            rec["reason"] = "no PPI estimate for " + " and ".join(missing)
        else:
            diff = a["ppi_estimate"] - b["ppi_estimate"]
            half = z * math.hypot(a["ppi_se"], b["ppi_se"])
            rec.update(difference=diff, ci_low=diff - half, ci_high=diff + half)
            rec["significant"] = bool(diff - half > 0 or diff + half < 0)
        out.append(rec)
    cols = ["model_a", "model_b", "difference", "ci_low", "ci_high", "significant", "reason"]
    result = pd.DataFrame(out, columns=cols)
    result.attrs.update(pairs=mode, note=note)
    return result


def compare_models(
    frame: pd.DataFrame, *, pairs: str = "auto", top: int = 10, **kwargs: Any
) -> pd.DataFrame:
    """Pairwise PPI accuracy differences: :func:`compare_estimates` (``pairs``, ``top``) of
    :func:`estimate_accuracy` ``(frame, **kwargs)`` (same arguments, same independence
    assumption)."""
    return compare_estimates(estimate_accuracy(frame, **kwargs), pairs=pairs, top=top)


def estimates_to_json(table: pd.DataFrame) -> dict[str, Any]:
    """``{model: {n_items, n_labelled, n_not_random, n_weighted, ppi, human_only,
    judge_mean_probability, judge_accuracy, reason}}``, each estimate ``{estimate, ci_low,
    ci_high}`` with ``None`` where there is none (the judge's two numbers never have an
    interval; their ``note`` says why)."""
    from qaeval_core.jsonable import to_jsonable

    out: dict[str, Any] = {}
    for rec in table.to_dict("records"):
        entry = {k: rec[k] for k in ("n_items", "n_labelled", "n_not_random", "n_weighted")}
        for kind in ("ppi", "human_only"):
            entry[kind] = {k: rec[f"{kind}_{k}"] for k in ("estimate", "ci_low", "ci_high")}
        if rec.get("ppi_note"):
            entry["ppi"]["note"] = rec["ppi_note"]
        for kind in ("judge_mean_probability", "judge_accuracy"):
            entry[kind] = {
                "estimate": rec[kind],
                "ci_low": None,
                "ci_high": None,
                "note": _NO_JUDGE_CI,
            }
        entry["reason"] = rec["reason"]
        out[str(rec["model"])] = to_jsonable(entry)
    return out
