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
from qaeval_core.judge.combiners.base import (
    MAX_WEIGHT,
    check_number,
    check_range,
    req,
    req_float,
    sigmoid,
)
from qaeval_core.stats import logit

__all__ = [
    "OUTCOMES",
    "SCORE_EPS",
    "ProbabilityCalibrator",
    "TriageBand",
    "check_share",
    "doubt",
    "outcomes",
    "score_logit",
]

#: The values of ``judge_outcome``.
OUTCOMES: tuple[str, str, str] = ("correct", "incorrect", "uncertain")
#: Scores are clipped this far from 0 and 1 before the logit (a combiner may say exactly 0/1).
SCORE_EPS = 1e-6


def score_logit(score: Any) -> np.ndarray:
    """The logit the probability calibrator applies to a combiner score (clipped at
    :data:`SCORE_EPS`): the fit, the judge and its trace all use this one."""
    return logit(score, SCORE_EPS)


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
        return sigmoid(self.coef * score_logit(score) + self.intercept)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "coef": self.coef, "intercept": self.intercept}

    @classmethod
    def from_dict(cls, data: Any, where: str = "probability") -> ProbabilityCalibrator:
        method = req(data, "method", str, where)
        if method != "sigmoid":
            raise ConfigError(f"{where}.method is {method!r}; this qaeval reads 'sigmoid'.")
        coef, intercept = (
            check_range(req_float(data, key, where), f"{where}.{key}", -MAX_WEIGHT, MAX_WEIGHT)
            for key in ("coef", "intercept")
        )
        return cls(coef, intercept, method)


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
        check_share(share, param="share")
        if not self.curve:
            raise ConfigError(
                "This judge stores no effort curve; calibrate it again to choose a share."
            )
        shares = np.array([row["share"] for row in self.curve])
        row = self.curve[int(np.argmin(np.abs(shares - share)))]
        if abs(row["share"] - share) > 0.005:
            raise ConfigError(
                f"The judge's effort curve has shares {shares.min():.2f}-{shares.max():.2f}; "
                f"{share:.3f} is outside it. Calibrate again with human_share={share}.",
                param="share",
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
        """The band of a judge file, checked field by field and against its own curve.

        Why the cross-check: the file's checksum is a plain SHA-256 that anyone can recompute,
        so it only catches accidental edits. A band edited and re-signed by hand (threshold 0
        routes nearly every item while ``share`` still says 20%) would otherwise be believed;
        the band must be the curve's row at its share, as :func:`fit_band` writes it.
        """
        share = req_float(data, "share", where)
        if not 0 <= share < 1:
            raise ConfigError(f"{where}.share must be in [0, 1), got {share}.")
        band = cls(
            threshold=check_range(
                req_float(data, "threshold", where), f"{where}.threshold", 0.0, MAX_DOUBT
            ),
            share=share,
            cv_accuracy_confident=check_range(
                req_float(data, "cv_accuracy_confident", where),
                f"{where}.cv_accuracy_confident",
                0.0,
                1.0,
            ),
            cv_accuracy_combined=check_range(
                req_float(data, "cv_accuracy_combined", where),
                f"{where}.cv_accuracy_combined",
                0.0,
                1.0,
            ),
            curve=_curve_rows(req(data, "curve", list, where), f"{where}.curve"),
        )
        _check_band_on_curve(band, where)
        return band


#: Keys of an effort-curve row (what :func:`qaeval_core.calibrate.triage.effort_curve` writes;
#: the app's chart and ``qaeval calibrate``'s table read all of them).
CURVE_KEYS: tuple[str, ...] = (
    "share",
    "threshold",
    "combined_accuracy",
    "combined_lo",
    "combined_hi",
    "random_accuracy",
    "random_lo",
    "random_hi",
    "confident_accuracy",
)
#: Largest doubt threshold: doubts are probabilities, and the share-0 row's threshold is the
#: largest doubt plus 1e-9 (nothing routed), so it may pass 1 by that much.
MAX_DOUBT = 1.0 + 1e-6


def _curve_rows(curve: list[Any], where: str) -> list[dict[str, float]]:
    """The curve's rows, each with every key of :data:`CURVE_KEYS` in its range, the shares
    increasing and the thresholds not increasing with them (routing more never needs more
    doubt); a ConfigError naming the first row that breaks a rule."""
    if not curve:
        raise ConfigError(f"{where} is empty; a triage band needs its effort curve.")
    rows: list[dict[str, float]] = []
    for i, row in enumerate(curve):
        w = f"{where}[{i}]"
        if not isinstance(row, Mapping):
            raise ConfigError(f"{w} must be an object.")
        missing = [k for k in CURVE_KEYS if k not in row]
        if missing:
            raise ConfigError(f"{w} lacks {', '.join(missing)}.")
        values = {str(k): check_number(v, f"{w}.{k}") for k, v in row.items()}
        check_range(values["share"], f"{w}.share", 0.0, 1.0)
        check_range(values["threshold"], f"{w}.threshold", 0.0, MAX_DOUBT)
        for key in CURVE_KEYS[2:]:
            check_range(values[key], f"{w}.{key}", 0.0, 1.0)
        if rows and values["share"] <= rows[-1]["share"]:
            raise ConfigError(f"{w}.share must be larger than the row before it.")
        if rows and values["threshold"] > rows[-1]["threshold"]:
            raise ConfigError(
                f"{w}.threshold is above the row before it; routing a larger share needs a "
                "lower doubt threshold."
            )
        rows.append(values)
    return rows


def _check_band_on_curve(band: TriageBand, where: str) -> None:
    """The band must route what the curve says: its share one of the curve's, and (when it
    routes anything) its threshold that row's, as :func:`fit_band` writes them. The reported
    accuracies are left alone: they decide nothing."""
    shares = np.array([row["share"] for row in band.curve])
    row = band.curve[int(np.argmin(np.abs(shares - band.share)))]
    if abs(row["share"] - band.share) > 0.005:
        raise ConfigError(
            f"{where}.share is {band.share:g}, which the file's own effort curve does not hold "
            f"(shares {shares.min():g}-{shares.max():g}); the band was edited after "
            "calibration. Calibrate again (or pick a share with human_share=...)."
        )
    if band.share > 0 and not math.isclose(
        band.threshold, row["threshold"], rel_tol=1e-9, abs_tol=1e-12
    ):
        raise ConfigError(
            f"{where}.threshold is {band.threshold:g} but the file's own effort curve routes "
            f"share {row['share']:g} at {row['threshold']:g}; the band was edited after "
            "calibration. Calibrate again (or pick a share with human_share=...)."
        )


def check_share(share: float, *, param: str = "human_share") -> float:
    """``share`` as a float in [0, 1), else an error naming ``param`` (the caller's name for
    it: ``human_share`` in calibration, ``share`` in :meth:`TriageBand.at_share`)."""
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
        raise InputError(
            f"{param} must be a number in [0, 1) (e.g. 0.2 routes a fifth of the items "
            f"to people), got {share!r}.",
            param=param,
        )
    return float(share)


def outcomes(verdict: Sequence[bool] | np.ndarray, routed: Any) -> np.ndarray:
    """``judge_outcome`` per item: ``uncertain`` where routed, else the verdict spelled out."""
    v = np.asarray(verdict, dtype=bool)
    out = np.where(v, OUTCOMES[0], OUTCOMES[1]).astype(object)
    out[np.asarray(routed, dtype=bool)] = OUTCOMES[2]
    return out
