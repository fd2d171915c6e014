"""A judge's probability of being right, and the band of items it leaves to people (triage).

A fitted combiner gives a score in [0, 1] whose cut at 0.5 is the verdict, but that score is
not a probability one can trust: a stacker is over-confident on a few hundred labels, a
threshold's Platt slope is fitted on the same rows. :class:`ProbabilityCalibrator` maps the
score to a calibrated P(correct) (Platt scaling on the logit of the score, fitted on the
combiner's *out-of-fold* scores during calibration), and :func:`doubt` turns it into the
probability that the judge's own verdict is wrong: ``1 - p`` where it says correct, ``p``
where it says incorrect.

:class:`TriageBand` is the abstention rule: an item whose doubt reaches ``threshold`` comes out
``uncertain`` and goes to people; the rest keep the judge's verdict. The threshold is a
quantile of the out-of-fold doubt, so about a share ``share`` of items like the calibration's
are routed. The band also keeps the cross-validated effort curve (share routed -> combined
accuracy, and the doubt quantile for each share), so another share can be chosen at scoring time
without refitting (:meth:`TriageBand.at_share`). With no band, nothing is ever uncertain and the
verdicts are exactly the combiner's.

Everything serialises to plain JSON (``to_dict`` / ``from_dict``), validated on load.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge.combiners.base import req, req_float, sigmoid

__all__ = [
    "OUTCOMES",
    "ProbabilityCalibrator",
    "TriageBand",
    "check_share",
    "doubt",
    "outcomes",
]

#: The values of ``judge_outcome``.
OUTCOMES: tuple[str, str, str] = ("correct", "incorrect", "uncertain")
#: Scores are clipped this far from 0 and 1 before the logit (a combiner may say exactly 0/1).
_EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


@dataclass(frozen=True)
class ProbabilityCalibrator:
    """``P(correct) = sigmoid(coef * logit(score) + intercept)`` (Platt scaling).

    Monotone in the score, so ranking items by it never contradicts the combiner; fitted by
    :func:`qaeval_core.calibrate.triage.fit_probability` on out-of-fold scores.
    """

    coef: float
    intercept: float
    method: str = "sigmoid"

    def predict(self, score: Any) -> np.ndarray:
        """Calibrated P(correct) for combiner scores."""
        return sigmoid(self.coef * _logit(score) + self.intercept)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "coef": self.coef, "intercept": self.intercept}

    @classmethod
    def from_dict(cls, data: Any, where: str = "probability") -> ProbabilityCalibrator:
        method = req(data, "method", str, where)
        if method != "sigmoid":
            raise ConfigError(f"{where}.method is {method!r}; this qaeval reads 'sigmoid'.")
        return cls(req_float(data, "coef", where), req_float(data, "intercept", where), method)


def doubt(probability: Any, verdict: Any) -> np.ndarray:
    """Probability that the verdict is wrong: ``1 - p`` where it says correct, else ``p``."""
    p = np.asarray(probability, dtype=float)
    return np.where(np.asarray(verdict, dtype=bool), 1.0 - p, p)


@dataclass(frozen=True)
class TriageBand:
    """Route items whose doubt is >= ``threshold`` to people (``share`` of them, about).

    ``curve`` rows: ``share`` (routed), ``threshold`` (the doubt quantile routing it),
    ``combined_accuracy`` with ``combined_lo`` / ``combined_hi`` (people right on the routed
    items, the judge on the rest, out of fold, 95% bootstrap CI over questions),
    ``random_accuracy`` with its CI (routing the same share at random) and
    ``confident_accuracy`` (the judge alone on the items it keeps).
    """

    threshold: float
    share: float
    cv_accuracy_confident: float
    cv_accuracy_combined: float
    curve: list[dict[str, float]] = field(default_factory=list)

    def uncertain(self, item_doubt: Any) -> np.ndarray:
        """True where an item goes to people."""
        d = np.asarray(item_doubt, dtype=float)
        if self.share <= 0:
            return np.zeros(d.shape, dtype=bool)
        return d >= self.threshold

    def at_share(self, share: float) -> TriageBand:
        """The band routing ``share`` instead, read off the stored curve (no refitting)."""
        check_share(share)
        if not self.curve:
            raise ConfigError(
                "This judge stores no effort curve; re-run `qaeval calibrate` to choose a share."
            )
        shares = np.array([row["share"] for row in self.curve])
        row = self.curve[int(np.argmin(np.abs(shares - share)))]
        if abs(row["share"] - share) > 0.005:
            raise ConfigError(
                f"The judge's effort curve has shares {shares.min():.2f}-{shares.max():.2f}; "
                f"{share:.3f} is outside it. Re-run `qaeval calibrate --human-share {share}`."
            )
        return TriageBand(
            threshold=float(row["threshold"]),
            share=float(row["share"]),
            cv_accuracy_confident=float(row["confident_accuracy"]),
            cv_accuracy_combined=float(row["combined_accuracy"]),
            curve=self.curve,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "share": self.share,
            "cv_accuracy_confident": self.cv_accuracy_confident,
            "cv_accuracy_combined": self.cv_accuracy_combined,
            "curve": [dict(row) for row in self.curve],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "triage") -> TriageBand:
        share = req_float(data, "share", where)
        if not 0 <= share < 1:
            raise ConfigError(f"{where}.share must be in [0, 1), got {share}.")
        curve = req(data, "curve", list, where)
        rows = []
        for i, row in enumerate(curve):
            if not isinstance(row, Mapping):
                raise ConfigError(f"{where}.curve[{i}] must be an object.")
            rows.append({str(k): _finite(v, f"{where}.curve[{i}].{k}") for k, v in row.items()})
        return cls(
            threshold=req_float(data, "threshold", where),
            share=share,
            cv_accuracy_confident=req_float(data, "cv_accuracy_confident", where),
            cv_accuracy_combined=req_float(data, "cv_accuracy_combined", where),
            curve=rows,
        )


def _finite(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value!r}.")
    return float(value)


def check_share(share: float) -> float:
    """``share`` as a float in [0, 1), else an error saying so."""
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
        raise InputError(
            f"The human share must be a number in [0, 1) (e.g. 0.2 routes a fifth of the items "
            f"to people), got {share!r}."
        )
    return float(share)


def outcomes(verdict: Sequence[bool] | np.ndarray, routed: Any) -> np.ndarray:
    """``judge_outcome`` per item: ``uncertain`` where routed, else the verdict spelled out."""
    v = np.asarray(verdict, dtype=bool)
    out = np.where(v, OUTCOMES[0], OUTCOMES[1]).astype(object)
    out[np.asarray(routed, dtype=bool)] = OUTCOMES[2]
    return out
