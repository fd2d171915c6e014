"""A triage band with a guarantee: what the judge file records, and how it is checked on load.

The triage band (:class:`~qaeval_core.judge.triage.TriageBand`) is a cross-validated estimate:
it says how accurate the judge was, out of fold, on the items it kept, not how accurate it
will be. A :class:`Guarantee` is a promise with a stated risk (Trust or Escalate, Jung,
Brahman and Choi, ICLR 2025): with probability at least ``1 - risk`` over the draw of the
calibration labels, the judge's accuracy on the items it decides alone (doubt below the band's
threshold) is at least ``target``. It is chosen by fixed-sequence testing
(:mod:`qaeval_core.calibrate.guarantee`) and is not a new band: it names one row of the band's
own effort curve, so scoring applies it unchanged.

The record keeps the evidence the promise rests on (how many calibration labels, how many of
them the judge decided alone and how many of those it got right), so on load the exact
binomial test is run again: a guarantee whose target, risk or counts were edited so that they
no longer support it is refused, as a band edited off its curve is. Like every check on a
judge file this guards against edits and damage, not forgery (the checksum is recomputable).

Where the promise holds: for new items drawn like the calibration labels (exchangeable with
them), with the judge's doubt as calibration measured it (out-of-fold scores standing in for
the refitted judge's, as for the band itself). Answers to one question are correlated; with
the labels' questions the test counts them as fewer independent labels (``design_effect``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats

from qaeval_core.errors import ConfigError
from qaeval_core.judge.combiners.base import check_range, req, req_float
from qaeval_core.judge.triage import MAX_DOUBT, TriageBand

__all__ = ["LABELS_SOURCE", "METHOD", "Guarantee", "binomial_evidence", "percent"]

#: Which labels a guarantee rests on: those the judge was calibrated on (its out-of-fold
#: scores), the only labels ``qaeval calibrate`` has.
LABELS_SOURCE = "calibration"
METHOD = "fixed-sequence testing, exact one-sided binomial test (Trust or Escalate, ICLR 2025)"


def binomial_evidence(
    n_right: int, n_decided: int, target: float, risk: float, design_effect: float = 1.0
) -> tuple[float, float]:
    """``(p_value, lower_bound)`` of H0 "accuracy < target" from ``n_right`` of ``n_decided``.

    The p-value is the exact one-sided binomial test's, ``P(X >= n_right)`` for ``X ~
    Binomial(n_decided, target)``, written as the Beta integral it equals; the lower bound is
    the one-sided ``1 - risk`` Clopper-Pearson bound on the accuracy. H0 is rejected (the
    guarantee holds) when ``p_value <= risk``, which is when the bound reaches ``target``.

    ``design_effect`` > 1 (answers to one question are right or wrong together) divides both
    counts by it first, the effective-sample-size Clopper-Pearson of Korn and Graubard (1998):
    the same test on as many independent labels as the correlated ones are worth.
    """
    n = n_decided / design_effect
    k = n_right / design_effect
    if n <= 0:
        return 1.0, 0.0
    if k <= 0:
        return 1.0, 0.0
    a, b = k, n - k + 1
    return float(stats.beta.cdf(target, a, b)), float(stats.beta.ppf(risk, a, b))


def percent(x: float) -> str:
    """``0.95`` -> ``"95%"``, ``0.975`` -> ``"97.5%"`` (no trailing zeros)."""
    return f"{100 * x:.1f}".rstrip("0").rstrip(".") + "%"


@dataclass(frozen=True)
class Guarantee:
    """With probability >= ``1 - risk``, accuracy >= ``target`` on the items the judge decides
    alone under the band routing ``share`` (doubt >= ``threshold``) to people.

    Rests on ``n_labels`` calibration labels, of which the band leaves ``n_decided`` to the
    judge and it got ``n_right`` right; ``p_value`` and ``lower_bound`` are the exact test's
    on those counts deflated by ``design_effect`` (:func:`binomial_evidence`).
    """

    target: float
    risk: float
    share: float
    threshold: float
    n_labels: int
    n_decided: int
    n_right: int
    p_value: float
    lower_bound: float
    #: How much the labels' correlation within questions inflates the variance (1: none).
    design_effect: float = 1.0
    labels: str = LABELS_SOURCE
    method: str = METHOD

    @property
    def routed(self) -> float:
        """Share of the calibration labels the band sends to people: what to expect on new
        items like them (``share`` is the band's nominal share; ties in the doubt at the
        threshold go to people too, so it can be more)."""
        return 1 - self.n_decided / self.n_labels if self.n_labels else 0.0

    def statement(self) -> str:
        """The guarantee in words, as the Calibrate page and ``qaeval calibrate`` state it."""
        return (
            f"With {percent(1 - self.risk)} confidence, the judge is right on at least "
            f"{percent(self.target)} of the items it decides alone ({self.n_labels} "
            f"{self.labels} labels, {self.n_decided} of them decided alone); "
            f"{percent(round(self.routed, 3))} of items go to people."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "risk": self.risk,
            "share": self.share,
            "threshold": self.threshold,
            "labels": self.labels,
            "n_labels": self.n_labels,
            "n_decided": self.n_decided,
            "n_right": self.n_right,
            "p_value": self.p_value,
            "lower_bound": self.lower_bound,
            "design_effect": self.design_effect,
            "method": self.method,
        }

    @classmethod
    def from_dict(cls, data: Any, band: TriageBand | None, where: str = "guarantee") -> Guarantee:
        """The file's guarantee, checked field by field, against ``band`` and its evidence.

        Why each check: the band must be the one the guarantee was tested for (else it
        promises about items the judge does not decide); the counts must fit the band
        (``n_decided`` at most the labels the band leaves to the judge); and the exact test on
        the counts must still reject at ``risk`` for ``target`` (else the target or risk was
        raised by hand beyond what the labels support).
        """
        if band is None:
            raise ConfigError(f"{where} needs a triage band (the band it guarantees).")
        labels = req(data, "labels", str, where)
        if labels != LABELS_SOURCE:
            raise ConfigError(
                f"{where}.labels is {labels!r}; this qaeval writes guarantees on "
                f"{LABELS_SOURCE!r} labels only."
            )
        method = req(data, "method", str, where)
        target = req_float(data, "target", where)
        risk = req_float(data, "risk", where)
        if not 0 < target < 1:
            raise ConfigError(f"{where}.target must be in (0, 1), got {target:g}.")
        if not 0 < risk < 1:
            raise ConfigError(f"{where}.risk must be in (0, 1), got {risk:g}.")
        counts = {}
        for key in ("n_labels", "n_decided", "n_right"):
            value = req(data, key, int, where)
            if isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}.{key} must be a whole number >= 0, got {value!r}.")
            counts[key] = int(value)
        guarantee = cls(
            target=target,
            risk=risk,
            share=req_float(data, "share", where),
            threshold=check_range(
                req_float(data, "threshold", where), f"{where}.threshold", 0.0, MAX_DOUBT
            ),
            p_value=check_range(req_float(data, "p_value", where), f"{where}.p_value", 0, 1),
            lower_bound=check_range(
                req_float(data, "lower_bound", where), f"{where}.lower_bound", 0, 1
            ),
            design_effect=check_range(
                req_float(data, "design_effect", where), f"{where}.design_effect", 1.0, 1e6
            ),
            labels=labels,
            method=method,
            **counts,
        )
        guarantee.check(band, where)
        return guarantee

    def check(self, band: TriageBand, where: str = "guarantee") -> None:
        """ConfigError unless this guarantee is for ``band`` and its counts still support it."""
        if not (
            math.isclose(self.share, band.share, abs_tol=1e-9)
            and math.isclose(self.threshold, band.threshold, rel_tol=1e-9, abs_tol=1e-12)
        ):
            raise ConfigError(
                f"{where} was tested for the band routing {self.share:g} (doubt >= "
                f"{self.threshold:g}) but the triage band routes {band.share:g} (doubt >= "
                f"{band.threshold:g}); the file was edited after calibration. Calibrate "
                "again with the guarantee."
            )
        routed_at_least = int(round(self.share * self.n_labels)) if self.share > 0 else 0
        if not self.n_right <= self.n_decided <= self.n_labels - routed_at_least:
            raise ConfigError(
                f"{where}: {self.n_right} right of {self.n_decided} decided alone of "
                f"{self.n_labels} labels is impossible for a band routing {self.share:g} to "
                "people; the file was edited after calibration."
            )
        p_value, lower = binomial_evidence(
            self.n_right, self.n_decided, self.target, self.risk, self.design_effect
        )
        if not (
            math.isclose(p_value, self.p_value, rel_tol=1e-6, abs_tol=1e-12)
            and math.isclose(lower, self.lower_bound, rel_tol=1e-6, abs_tol=1e-9)
        ):
            raise ConfigError(
                f"{where} records p = {self.p_value:g} (bound {self.lower_bound:g}) but its counts "
                f"give p = {p_value:g} (bound {lower:g}); the file was edited after calibration."
            )
        if p_value > self.risk:
            raise ConfigError(
                f"{where}: {self.n_right} right of {self.n_decided} do not support accuracy >= "
                f"{self.target:g} at risk {self.risk:g} (p = {p_value:.3g}); the file was "
                "edited after calibration. Calibrate again with the guarantee."
            )
