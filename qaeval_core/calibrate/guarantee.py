"""Choose the widest triage band whose accuracy is guaranteed (fixed-sequence testing).

Trust or Escalate (Jung, Brahman and Choi, ICLR 2025): with human labels on calibration items
and the judge's doubt on each, test the candidate bands in a fixed order, from the one where the
judge decides only the items it is surest of, outward to bands where it decides more alone. At
each band the null hypothesis is "the judge's accuracy on the items it decides alone is below
``guarantee``", tested with the exact one-sided binomial test at level ``risk``; the walk stops
at the first band it cannot reject, and the chosen band is the widest one rejected before that.
Because the order is fixed before any label is read and the walk stops at the first
non-rejection, the chance of promising a band whose accuracy is below ``guarantee`` is at most
``risk`` (no multiple-testing correction is needed: fixed-sequence testing controls the
family-wise error at the level of each test).

The candidates are the rows of the effort curve (:func:`qaeval_core.calibrate.triage.effort_curve`,
shares routed to people 0-99%), so the chosen band is an ordinary
:class:`~qaeval_core.judge.triage.TriageBand` and scoring applies it unchanged. The walk starts
at the first band that leaves enough items to the judge for the test to reject even with
``start_errors`` of them wrong: the bands before it could hardly be rejected and would end the
walk at once. Where it starts depends on counts only, never on the labels, so the start keeps
the guarantee.

Answers to one question tend to be right or wrong together (several models answer the same
question), and the binomial test counts them as independent: with the question of each label
(``groups``) each test divides its counts by the band's design effect first (Korn and
Graubard's effective-sample-size Clopper-Pearson), which on NQ301 kept the promise where the
plain test did not (``experiments/every_label_guarantee.py``).

When no band can be rejected, :func:`labels_needed` estimates how many labels would be, by
simulating larger calibration sets like this one and running the walk on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression

from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary
from qaeval_core.judge.guarantee import Guarantee, binomial_evidence, percent
from qaeval_core.judge.triage import ProbabilityCalibrator, doubt
from qaeval_core.stats import logit

__all__ = [
    "GuaranteeFit",
    "GuaranteeNotSupported",
    "band_thresholds",
    "check_guarantee_params",
    "fit_guarantee",
    "guaranteed_band",
    "labels_needed",
]

#: The walk starts at the first band where this many errors among the items the judge decides
#: alone would still let the test reject. With 0 it starts where every item must be right
#: (about 22 items for 0.9 at risk 0.1), and one error there ends the walk before it reaches
#: the wide bands; with many it starts so wide that a judge good only on its surest items
#: fails at once. 2 left the judge the most items alone on simulated judges and on NQ301 and
#: MMLU-Pro (``experiments/every_label_guarantee.py``); any fixed value keeps the guarantee.
START_ERRORS = 2


def check_guarantee_params(guarantee: Any, risk: Any) -> tuple[float, float]:
    """``(guarantee, risk)`` as floats in (0, 1), else an error naming the parameter."""
    for name, value in (("guarantee", guarantee), ("risk", risk)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
            raise InputError(
                f"{name} must be a number in (0, 1) (e.g. guarantee 0.95, risk 0.1), got {value!r}."
            )
    return float(guarantee), float(risk)


def band_thresholds(item_doubt: Any, shares: Sequence[float]) -> np.ndarray:
    """The doubt threshold routing each share, as the effort curve computes it: the doubt of
    the ``round(share * n)``-th most doubtful item (share 0: above every doubt)."""
    d = np.asarray(item_doubt, dtype=float)
    ranked = np.sort(d)[::-1]
    out = []
    for share in shares:
        k = int(round(float(share) * len(d)))
        out.append(float(ranked[k - 1]) if k else float(d.max()) + 1e-9)
    return np.array(out)


@dataclass(frozen=True)
class GuaranteeFit:
    """The walk's result: the guarantee (None when no band could be supported) and every test.

    ``tests`` has one row per candidate band, most confident first: ``share``, ``threshold``,
    ``n_decided``, ``n_right``, ``accuracy``, ``p_value``, ``testable`` (enough items that a
    test could reject), ``tested`` (reached by the walk) and ``rejected``.
    """

    target: float
    risk: float
    n_labels: int
    tests: pd.DataFrame
    guarantee: Guarantee | None
    #: About how many more labels would support the guarantee (None: it is supported, it was
    #: not estimated, or even 100 times the labels would not be enough at the accuracy they
    #: show).
    more_labels: int | None

    @property
    def supported(self) -> bool:
        return self.guarantee is not None

    def message(self) -> str:
        """The guarantee in words, or why there is none and what would give one."""
        if self.guarantee is not None:
            return self.guarantee.statement()
        head = (
            f"The {self.n_labels} calibration labels cannot support a guarantee: no band "
            f"shows, with {percent(1 - self.risk)} confidence, that the judge is right on at "
            f"least {percent(self.target)} of the items it decides alone."
        )
        if self.more_labels is None:
            return (
                f"{head} At the accuracy these labels show, even 100 times as many labels "
                "would not support it: lower the target accuracy or improve the judge."
            )
        return (
            f"{head} About {self.more_labels} more labels would be needed if the judge stays "
            "as accurate as these labels show (an estimate: with that many, 4 in 5 simulated "
            "calibration sets like this one support it); or lower the target accuracy, or "
            "accept a larger risk."
        )


class GuaranteeNotSupported(InputError):
    """The labels support no band at the asked ``guarantee`` and ``risk``; ``fit`` says why
    and how many more labels would."""

    def __init__(self, fit: GuaranteeFit) -> None:
        super().__init__(fit.message())
        self.fit = fit


def _walk_counts(
    item_doubt: np.ndarray, judge_right: np.ndarray, shares: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per band: items the judge decides alone (doubt below the threshold; every item at share
    0, as ``TriageBand.uncertain`` routes) and how many of them it got right."""
    order = np.argsort(item_doubt, kind="stable")
    ranked = item_doubt[order]
    right_before = np.concatenate([[0], np.cumsum(judge_right[order])])
    n = np.searchsorted(ranked, thresholds, side="left")
    n = np.where(shares <= 0, len(ranked), n)
    return n, right_before[n]


def _design_effects(
    item_doubt: np.ndarray, judge_right: np.ndarray, groups: np.ndarray, n_decided: np.ndarray
) -> np.ndarray:
    """Per band, how much answers to one question being right or wrong together inflate the
    variance of the accuracy over the binomial's: the ratio estimator's variance over
    questions (with the G / (G - 1) correction) divided by ``acc (1 - acc) / n``, at least 1
    and at most the mean number of decided labels per question."""
    order = np.argsort(item_doubt, kind="stable")
    right, codes = judge_right[order].astype(float), pd.factorize(groups[order])[0]
    out = np.ones(len(n_decided))
    for i, n in enumerate(n_decided):
        if n <= 1:
            continue
        k = right[:n].sum()
        acc = k / n
        per_group = np.bincount(codes[:n], weights=right[:n] - acc)
        g = int((np.bincount(codes[:n]) > 0).sum())
        if g < 2 or acc in (0.0, 1.0):
            out[i] = n / g if g < 2 else 1.0
            continue
        cluster = g / (g - 1) * float(np.sum(per_group**2)) / n**2
        out[i] = min(max(1.0, cluster / (acc * (1 - acc) / n)), n / g)
    return out


def _walk(
    n_decided: np.ndarray,
    n_right: np.ndarray,
    target: float,
    risk: float,
    start_errors: int,
    design_effect: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed-sequence walk over bands in walk order: ``(p_value, testable, tested,
    rejected)``. A band is testable when ``start_errors`` errors among its decided items would
    still reject (a count, never a label); the walk starts at the first testable band. The
    p-value is :func:`~qaeval_core.judge.guarantee.binomial_evidence`'s, vectorised."""
    deff = np.ones(len(n_decided)) if design_effect is None else design_effect
    n_eff, k_eff = n_decided / deff, n_right / deff
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = stats.beta.cdf(target, k_eff, n_eff - k_eff + 1)
    p_value = np.where((n_decided > 0) & (n_right > 0), p_value, 1.0)
    testable = (n_decided > start_errors) & (
        stats.binom.sf(n_decided - start_errors - 1, n_decided, target) <= risk
    )
    ok = ~testable | (p_value <= risk)
    tested = testable & (np.cumsum(~ok) - ~ok == 0)  # up to and including the first failure
    return p_value, testable, tested, tested & (p_value <= risk)


def fit_guarantee(
    item_doubt: Any,
    judge_right: Any,
    shares: Sequence[float],
    thresholds: Sequence[float],
    *,
    guarantee: float,
    risk: float = 0.1,
    start_errors: int = START_ERRORS,
    groups: Any = None,
    seed: int = 0,
    estimate_labels: bool = True,
) -> GuaranteeFit:
    """Fixed-sequence testing over the bands ``(shares[i], thresholds[i])``.

    ``item_doubt`` is the judge's doubt on each calibration label (out of fold) and
    ``judge_right`` whether its verdict matched the label. The bands are walked from the
    largest share routed to people (the judge decides only what it is surest of) to the
    smallest, starting at the first band where ``start_errors`` errors would still let the
    test reject; see the module docstring for why this keeps the promise. ``groups`` (the
    question of each label, optional) lets each test count correlated answers to one question
    as fewer independent labels (a design effect per band, recorded with the guarantee); without
    it every label counts as independent. ``seed`` drives the
    simulation of :func:`labels_needed` when no band is supported (``estimate_labels=False``
    skips it: experiments that only need the band).
    """
    target, risk = check_guarantee_params(guarantee, risk)
    if isinstance(start_errors, bool) or not isinstance(start_errors, int) or start_errors < 0:
        raise InputError(f"start_errors must be a whole number >= 0, got {start_errors!r}.")
    d = np.asarray(item_doubt, dtype=float)
    right = np.asarray(judge_right, dtype=bool)
    if d.ndim != 1 or right.shape != d.shape or not len(d):
        raise InputError(f"Give one doubt per label: {d.shape} doubts for {right.shape} verdicts.")
    if not np.isfinite(d).all():
        raise InputError("Every doubt must be a finite number.")
    if len(shares) != len(thresholds) or not len(shares):
        raise InputError("Give one threshold per candidate share (the effort curve's rows).")
    order = np.argsort(-np.asarray(shares, dtype=float), kind="stable")
    sh = np.asarray(shares, dtype=float)[order]
    th = np.asarray(thresholds, dtype=float)[order]
    n, k = _walk_counts(d, right, sh, th)
    deff = np.ones(len(n))
    if groups is not None:
        g = np.asarray(groups, dtype=object)
        if g.shape != d.shape:
            raise InputError(f"Give one group per label: {g.shape} groups for {d.shape} labels.")
        deff = _design_effects(d, right, g, n)
    p_value, testable, tested, rejected = _walk(n, k, target, risk, start_errors, deff)
    tests = pd.DataFrame(
        {
            "share": sh,
            "threshold": th,
            "n_decided": n,
            "n_right": k,
            "accuracy": np.divide(k, n, out=np.full(len(n), np.nan), where=n > 0),
            "design_effect": deff,
            "p_value": p_value,
            "testable": testable,
            "tested": tested,
            "rejected": rejected,
        }
    )
    chosen = None
    if rejected.any():
        i = int(np.flatnonzero(rejected)[-1])
        p, lower = binomial_evidence(int(k[i]), int(n[i]), target, risk, float(deff[i]))
        chosen = Guarantee(
            target,
            risk,
            float(sh[i]),
            float(th[i]),
            len(d),
            int(n[i]),
            int(k[i]),
            p,
            lower,
            float(deff[i]),
        )
    more = None
    if chosen is None and estimate_labels:
        more = labels_needed(
            d, right, sh, target=target, risk=risk, start_errors=start_errors, seed=seed
        )
    return GuaranteeFit(target, risk, len(d), tests, chosen, more)


#: Label counts tried by :func:`labels_needed`: the current count times these factors.
SCALES: tuple[float, ...] = tuple(float(x) for x in np.round(np.geomspace(1.1, 100.0, 48), 3))
#: Simulated calibration sets per count, and the share of them that must support the guarantee.
N_SIMULATIONS = 100
SUPPORT_RATE = 0.8


def labels_needed(
    item_doubt: Any,
    judge_right: Any,
    shares: Sequence[float],
    *,
    target: float,
    risk: float,
    start_errors: int = START_ERRORS,
    seed: int = 0,
) -> int | None:
    """About how many more labels would support a guarantee, or None if even 100 times as
    many would not.

    Why a simulation: whether the walk succeeds depends on the accuracy of every band it
    passes, down to the narrow first one, so no single band's sample size answers it. The
    judge's chance of being right is fitted as a smooth function of its doubt (a logistic
    regression on the doubt's logit: a step fit such as isotonic regression says "always right"
    on the few most confident labels and makes the estimate far too low); calibration sets
    of a larger size are drawn from it (doubts resampled from these, verdicts right with the
    fitted chance) and the walk is run on each. The answer is the smallest size (the current
    count times one of :data:`SCALES`) at which :data:`SUPPORT_RATE` of :data:`N_SIMULATIONS`
    sets support the guarantee, less the labels there are. The simulated labels are
    independent (no design effect), so where answers to one question are correlated more may
    be needed. An estimate: the accuracy moves as
    labels come in.
    """
    d = np.asarray(item_doubt, dtype=float)
    right = np.asarray(judge_right, dtype=bool)
    sh = np.sort(np.asarray(shares, dtype=float))[::-1]
    x = logit(d, 1e-6)[:, None]
    if right.all() or not right.any():
        p_right = np.full(len(d), right.mean())
    else:
        p_right = LogisticRegression().fit(x, right).predict_proba(x)[:, 1]
    rng = np.random.default_rng(seed)

    def support_rate(size: int) -> float:
        hits = 0
        for _ in range(N_SIMULATIONS):
            pick = rng.integers(0, len(d), size)
            sim_d, sim_right = d[pick], rng.random(size) < p_right[pick]
            n, k = _walk_counts(sim_d, sim_right, sh, band_thresholds(sim_d, sh))
            hits += bool(_walk(n, k, target, risk, start_errors)[3].any())
        return hits / N_SIMULATIONS

    sizes = [math.ceil(len(d) * scale) for scale in SCALES]
    if support_rate(sizes[-1]) < SUPPORT_RATE:
        return None
    for size in sizes:
        if support_rate(size) >= SUPPORT_RATE:
            return size - len(d)
    return sizes[-1] - len(d)


def guaranteed_band(
    oof_score: Any,
    y: Any,
    calibrator: ProbabilityCalibrator,
    curve: pd.DataFrame,
    *,
    guarantee: float,
    risk: float = 0.1,
    groups: Any = None,
    seed: int = 0,
) -> GuaranteeFit:
    """:func:`fit_guarantee` on a calibration's out-of-fold scores and its effort curve (what
    :func:`~qaeval_core.calibrate.fit.fit_judge` runs): the doubt and the verdicts are the
    ones the curve was measured with, so the chosen band is one of the curve's rows."""
    score = np.asarray(oof_score, dtype=float)
    verdict = score >= 0.5
    item_doubt = doubt(calibrator.predict(score), verdict)
    return fit_guarantee(
        item_doubt,
        verdict == as_binary(y),
        curve["share"].to_numpy(),
        curve["threshold"].to_numpy(),
        guarantee=guarantee,
        risk=risk,
        groups=groups,
        seed=seed,
    )
