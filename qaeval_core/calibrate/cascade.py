"""Fit the LLM tier of a cascade (cheap judge -> LLM -> people) by cross-validation.

Inputs, all on the calibration rows: the cheap judge's calibrated *out-of-fold* P(correct)
(what it will say about rows it never saw), the LLM's P(correct) and the human labels. For each
LLM share ``s`` and fold: the LLM threshold is the doubt quantile of the training folds that
sends ``s`` of them to the LLM; a logistic model over ``[logit p_cheap, logit p_llm]`` is fitted
on the training folds' band rows and applied to the test fold's band rows; outside the band the
cheap verdict stands. For each human share ``h`` the ``h`` most doubtful items of the final
out-of-fold verdicts count as right (people decide them). The curve is accuracy per (s, h), and
the seconds per 1,000 rows it would cost.

The chosen LLM share is the smallest whose cross-validated accuracy with no people loses at most
``max_accuracy_loss`` against the best share's (the LLM is slow: pay for it only where it
helps), unless the caller names one. The final tier-2 model is refitted on every band row at
that share. The grid of shares (:data:`~qaeval_core.calibrate.options.LLM_SHARES` x
``HUMAN_SHARES``) and the LLM asked are
:class:`~qaeval_core.calibrate.options.LLMTierPolicy`'s, checked when it is made, before the
LLM reads anything.

A model whose probability tells correct from incorrect answers no better than chance on these
labels (ROC AUC below 0.6, or a one-sided Mann-Whitney p-value above 0.05) gets a warning: the
fit would still run, but the LLM would only add noise and cost.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu
from sklearn.linear_model import LogisticRegression

from qaeval_core.calibrate.fit import CalibrationReport
from qaeval_core.calibrate.options import HUMAN_SHARES, LLM_SHARES, LLMTierPolicy
from qaeval_core.calibrate.protocol import assign_folds
from qaeval_core.errors import IncompleteRunError, InputError
from qaeval_core.judge import Judge
from qaeval_core.judge.cascade import LLMTier, llm_logit
from qaeval_core.judge.combiners.base import as_binary
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.judge.triage import doubt
from qaeval_core.metrics.base import NO_VERDICT, get_metric
from qaeval_core.schema import Item

__all__ = [
    "ChanceWarning",
    "add_llm_tier",
    "cascade_curve",
    "fit_cascade",
    "llm_agreement",
]

#: Fewer band rows (or one class only) than this: the tier-2 model keeps the cheap verdict.
MIN_BAND_ROWS = 12


class ChanceWarning(UserWarning):
    """The LLM's probabilities agree with the labels no better than chance."""


@dataclass(frozen=True)
class _TierModel:
    coef_cheap: float
    coef_llm: float
    intercept: float

    def predict(self, p_cheap: np.ndarray, p_llm: np.ndarray) -> np.ndarray:
        z = self.coef_cheap * llm_logit(p_cheap) + self.coef_llm * llm_logit(p_llm)
        return 1.0 / (1.0 + np.exp(-(z + self.intercept)))


_KEEP_CHEAP = _TierModel(1.0, 0.0, 0.0)


def _fit_tier(p_cheap: np.ndarray, p_llm: np.ndarray, y: np.ndarray) -> _TierModel:
    """Logistic regression on the two logits (mild L2, C=1: a few dozen rows at times)."""
    if len(y) < MIN_BAND_ROWS or y.all() or not y.any():
        return _KEEP_CHEAP
    X = np.column_stack([llm_logit(p_cheap), llm_logit(p_llm)])
    lr = LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
    return _TierModel(float(lr.coef_[0, 0]), float(lr.coef_[0, 1]), float(lr.intercept_[0]))


def _threshold_for_share(d: np.ndarray, share: float) -> float:
    """The doubt at or above which ``share`` of ``d`` lies (1.0, i.e. never, for 0)."""
    k = int(round(share * len(d)))
    if k <= 0:
        return 1.0
    return float(np.sort(d)[::-1][min(k, len(d)) - 1])


def llm_agreement(p_llm: Any, y: Any) -> dict[str, float | bool]:
    """ROC AUC of the LLM's probability against the labels, the one-sided Mann-Whitney
    p-value, and whether that is at chance (AUC < 0.6 or p > 0.05)."""
    yb = as_binary(y)
    p = np.asarray(p_llm, dtype=float)
    pos, neg = p[yb], p[~yb]
    if not len(pos) or not len(neg):
        return {"auc": float("nan"), "p_value": float("nan"), "at_chance": True}
    test = mannwhitneyu(pos, neg, alternative="greater")
    auc = float(test.statistic) / (len(pos) * len(neg))
    p_value = float(test.pvalue)
    return {"auc": auc, "p_value": p_value, "at_chance": bool(auc < 0.6 or p_value > 0.05)}


def cascade_curve(
    p_cheap: Any,
    p_llm: Any,
    y: Any,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    llm_shares: Sequence[float] = LLM_SHARES,
    human_shares: Sequence[float] = HUMAN_SHARES,
    n_splits: int = 5,
    seed: int = 0,
    llm_seconds_per_item: float = 0.0,
    cheap_s_per_1000: float | None = None,
) -> pd.DataFrame:
    """Cross-validated accuracy per (LLM share, human share), with the thresholds and the
    tier-2 weights refitted on all rows at each LLM share (what :class:`LLMTier` stores)."""
    yb = as_binary(y)
    p1 = np.asarray(p_cheap, dtype=float)
    pl = np.asarray(p_llm, dtype=float)
    if not (len(p1) == len(pl) == len(yb)):
        raise InputError("p_cheap, p_llm and y need one value per calibration row.")
    d1 = doubt(p1, p1 >= 0.5)
    g = None if groups is None else np.asarray(groups, dtype=object)
    folds = assign_folds(len(yb), n_splits, groups=g, y=yb, seed=seed)
    rows = []
    for share in llm_shares:
        oof = p1.copy()
        for k in np.unique(folds):
            train, test = folds != k, folds == k
            t = _threshold_for_share(d1[train], share)
            band_train = train & (d1 >= t) if share > 0 else np.zeros_like(train)
            band_test = test & (d1 >= t) if share > 0 else np.zeros_like(test)
            if band_test.any():
                model = _fit_tier(p1[band_train], pl[band_train], yb[band_train])
                oof[band_test] = model.predict(p1[band_test], pl[band_test])
        # The refit on every row at this share: what the judge file stores.
        t_all = _threshold_for_share(d1, share)
        band_all = d1 >= t_all if share > 0 else np.zeros(len(d1), dtype=bool)
        final = _fit_tier(p1[band_all], pl[band_all], yb[band_all])
        verdict = oof >= 0.5
        d_final = doubt(oof, verdict)
        order = np.argsort(-d_final, kind="stable")
        for h in human_shares:
            k = int(round(h * len(yb)))
            routed = np.zeros(len(yb), dtype=bool)
            routed[order[:k]] = True
            combined = np.where(routed, yb, verdict)
            people_t = float(d_final[order[k - 1]]) if k else 1.0
            rows.append(
                {
                    "llm_share": float(share),
                    "human_share": float(h),
                    "llm_threshold": t_all,
                    "people_threshold": people_t,
                    "coef_cheap": final.coef_cheap,
                    "coef_llm": final.coef_llm,
                    "intercept": final.intercept,
                    "cv_accuracy": float((combined == yb).mean()),
                    "s_per_1000": float(
                        (cheap_s_per_1000 or 0.0) + 1000 * share * llm_seconds_per_item
                    ),
                }
            )
    return pd.DataFrame(rows)


def fit_cascade(
    p_cheap: Any,
    p_llm: Any,
    y: Any,
    feature: FeatureSpec,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    llm_share: float | None = None,
    human_share: float = 0.0,
    max_accuracy_loss: float = 0.005,
    llm_seconds_per_item: float = 0.0,
    cheap_s_per_1000: float | None = None,
    n_splits: int = 5,
    seed: int = 0,
) -> LLMTier:
    """The LLM tier: its curve, the chosen LLM share (or ``llm_share``) and the people band."""
    agreement = llm_agreement(p_llm, y)
    if agreement["at_chance"]:
        warnings.warn(
            f"The LLM's probabilities agree with these labels at chance (ROC AUC "
            f"{agreement['auc']:.2f}, p = {agreement['p_value']:.2g}): it adds cost and noise, "
            "not knowledge. Use a stronger model or leave out the LLM tier.",
            ChanceWarning,
            stacklevel=2,
        )
    curve = cascade_curve(
        p_cheap,
        p_llm,
        y,
        groups=groups,
        n_splits=n_splits,
        seed=seed,
        llm_seconds_per_item=llm_seconds_per_item,
        cheap_s_per_1000=cheap_s_per_1000,
    )
    alone = curve[curve["human_share"] == 0.0]
    if llm_share is None:
        best = float(alone["cv_accuracy"].max())
        near_best = alone[alone["cv_accuracy"] >= best - max_accuracy_loss]
        llm_share = float(near_best["llm_share"].min())
    shares = curve["human_share"].unique()
    if not np.isclose(shares, human_share).any():
        raise InputError(
            f"The human share must be one of {', '.join(f'{s:g}' for s in shares)} with an LLM "
            f"tier, got {human_share:g}."
        )
    tier = LLMTier(
        feature=feature,
        llm_share=0.0,
        human_share=0.0,
        llm_threshold=1.0,
        people_threshold=1.0,
        coef_cheap=1.0,
        coef_llm=0.0,
        intercept=0.0,
        cv_accuracy=0.0,
        llm_seconds_per_item=float(llm_seconds_per_item),
        cheap_s_per_1000=cheap_s_per_1000,
        llm_auc=None if np.isnan(agreement["auc"]) else float(agreement["auc"]),
        curve=curve.to_dict(orient="records"),
    )
    return tier.at(llm_share=llm_share, human_share=human_share)


def _with_verdict(result: Any, say: Callable[[str], None]) -> np.ndarray:
    """The calibration rows the LLM gave a verdict on. A row it failed on (an endpoint that
    was down, timed out or answered a malformed body) stops the fit: the tier would be fitted
    on whichever rows happened to work. A row whose answer reads as neither yes nor no (a
    model's own answer, the same on every run) is left out of the fit, and said so."""
    missing = [d.get(NO_VERDICT) for d in result.details]
    failed = [
        why
        for why, d in zip(missing, result.details, strict=True)
        if why and not d.get("unreadable")
    ]
    if failed:
        raise IncompleteRunError(
            f"LLM tier: {len(failed)} of {len(missing)} calibration rows have no verdict from "
            f"the LLM ({failed[0]}). The verdicts that worked are cached, so calibrating again "
            "asks only for the missing ones."
        )
    unreadable = sum(1 for why in missing if why)
    if unreadable:
        say(
            f"LLM tier: {unreadable} answer(s) could not be read as yes/no: left out of the "
            "tier's fit (judged, such an item goes to people)."
        )
    return np.array([not why for why in missing], dtype=bool)


def add_llm_tier(
    judge: Judge,
    report: CalibrationReport,
    items: Sequence[Item],
    y: Any,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    llm_tier: LLMTierPolicy = LLMTierPolicy(),
    progress: Callable[[str], None] | None = None,
) -> Judge:
    """``judge`` with an LLM tier fitted on the rows it was calibrated on (same order as the
    report's out-of-fold scores). The LLM reads every calibration row once (cached on disk).

    ``llm_tier`` names the LLM and the shares (:class:`~qaeval_core.calibrate.options
    .LLMTierPolicy`; its human share None starts at the point nearest the judge's triage
    band). The tier is cross-validated on the report's folds (``report.n_splits`` and
    ``report.seed``): the out-of-fold scores it reads came from them.
    """
    say = progress or (lambda _msg: None)
    if judge.probability is None:
        raise InputError("An LLM tier needs a judge with calibrated probabilities.")
    if judge.guarantee is not None:  # checked before the LLM reads anything
        raise InputError(
            "This judge's triage band carries a guarantee tested without an LLM tier; an LLM "
            "tier would change what the judge decides alone. Fit it on a judge without one."
        )
    oof = report.oof_proba[report.winner]
    if len(oof) != len(items):
        raise InputError(
            f"{len(items)} items for {len(oof)} calibration rows; pass the calibration's items."
        )
    metric = get_metric(
        "llm_judge", model=llm_tier.llm, url=llm_tier.llm_url, prompt=llm_tier.llm_prompt
    )
    say(
        f"LLM tier: {llm_tier.llm} reads the {len(items)} calibration rows (cached verdicts "
        "reused) ..."
    )
    result = metric.score_batch(list(items))
    seconds = [float(d["seconds"]) for d in result.details if d.get("seconds")]
    keep = _with_verdict(result, say)
    cheap_cost = None if not judge.cost else judge.cost.get("judge_s_per_1000")
    band = judge.triage
    labels = np.asarray(y)
    tier = fit_cascade(
        judge.probability.predict(oof)[keep],
        result.scores[keep],
        labels[keep],
        FeatureSpec.from_metric(metric),
        groups=None if groups is None else np.asarray(groups)[keep],
        llm_share=llm_tier.llm_share,
        human_share=llm_tier.human_share_for(None if band is None else band.share),
        llm_seconds_per_item=float(np.median(seconds)) if seconds else 0.0,
        cheap_s_per_1000=None if cheap_cost is None else float(cheap_cost),
        n_splits=report.n_splits,
        seed=report.seed,
    )
    say(
        f"LLM tier: ROC AUC {tier.llm_auc:.3f} on these labels; LLM share {tier.llm_share:.0%}, "
        f"cross-validated accuracy {tier.cv_accuracy:.1%} at human share {tier.human_share:.0%}."
    )
    judge.cascade = tier
    return judge
