"""The LLM tier of a judge: cheap judge -> LLM -> people.

Tier 1, the calibrated cheap judge, gives every item a calibrated P(correct) and a doubt (the
probability its verdict is wrong, :func:`qaeval_core.judge.triage.doubt`). Items whose doubt
reaches ``llm_threshold`` go to tier 2: the LLM judge (``llm_judge``) reads them, and a
two-input logistic model over the logits of the tier-1 probability and the LLM's probability
gives the new P(correct) there. Tier 3, people, get the items whose final doubt still reaches
``people_threshold`` (none when ``human_share`` is 0), and every item the LLM had to read but
gave no verdict on (its endpoint failed: NaN, ``details["no_verdict"]``): the tier-1 verdict
stands for it, as doubtful as it was, and the judge reports the row as ``judge_error``.

Why a logistic over two logits and not the LLM alone: the LLM knows facts the cheap inputs do
not, but it is a 1.5B model that is often sure and wrong; the cheap judge is right about most
matches. Their logits add as evidence, weighted by the labels (:mod:`qaeval_core.calibrate
.cascade` fits the weights on the band's out-of-fold rows).

:class:`LLMTier` serialises to plain JSON under the judge file's ``cascade`` key and keeps the
cross-validated curve (LLM share x human share -> accuracy, seconds per 1,000 rows), so another
operating point can be read off without refitting (:meth:`LLMTier.at`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.judge.cascade_record import NEVER, check_curve, curve_row
from qaeval_core.judge.combiners.base import (
    MAX_WEIGHT,
    check_range,
    req,
    req_float,
    sigmoid,
)
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.judge.triage import doubt
from qaeval_core.metrics.base import NO_VERDICT
from qaeval_core.schema import Item
from qaeval_core.stats import logit

__all__ = ["LLM_EPS", "TIERS", "CascadeResult", "LLMTier", "llm_logit"]

#: The values of ``judge_tier``: who decided an item.
TIERS: tuple[str, str, str] = ("cheap", "llm", "people")
#: Probabilities are clipped this far from 0 and 1 before the cascade's logit (an LLM can say
#: exactly 0 or 1; a looser clip than the combiner's :data:`~.triage.SCORE_EPS`, so one
#: certain LLM answer does not outweigh the cheap judge).
LLM_EPS = 1e-4


def llm_logit(p: Any) -> np.ndarray:
    """Logit of a probability clipped to [1e-4, 1 - 1e-4] (:data:`LLM_EPS`)."""
    return logit(p, LLM_EPS)


@dataclass(frozen=True)
class CascadeResult:
    """Per item: final P(correct), verdict, doubt, whether people get it, and the tier."""

    probability: np.ndarray
    verdict: np.ndarray
    doubt: np.ndarray
    routed: np.ndarray
    tier: np.ndarray
    llm_probability: np.ndarray
    #: per item, why the LLM gave no verdict on an item it had to read (None elsewhere)
    llm_missing: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class LLMTier:
    """Where the LLM is asked, how its probability is combined, and what goes to people.

    ``curve`` rows (cross-validated on the calibration labels): ``llm_share``,
    ``human_share``, ``llm_threshold``, ``people_threshold``, ``coef_cheap``, ``coef_llm``,
    ``intercept``, ``cv_accuracy`` (people right on their items, the cascade on the rest) and
    ``s_per_1000`` (predicted seconds per 1,000 rows on the calibrating machine).
    """

    feature: FeatureSpec
    llm_share: float
    human_share: float
    llm_threshold: float
    people_threshold: float
    coef_cheap: float
    coef_llm: float
    intercept: float
    cv_accuracy: float
    llm_seconds_per_item: float
    cheap_s_per_1000: float | None = None
    llm_auc: float | None = None
    curve: list[dict[str, float]] = field(default_factory=list)

    @property
    def column(self) -> str:
        return self.feature.column

    def combine(self, cheap_probability: Any, llm_probability: Any) -> np.ndarray:
        """Tier-2 P(correct) from the tier-1 probability and the LLM's."""
        z = (
            self.coef_cheap * llm_logit(cheap_probability)
            + self.coef_llm * llm_logit(llm_probability)
            + self.intercept
        )
        return sigmoid(z)

    def to_llm(self, cheap_doubt: Any) -> np.ndarray:
        """True where tier 1 doubts enough to ask the LLM."""
        d = np.asarray(cheap_doubt, dtype=float)
        if self.llm_share <= 0:
            return np.zeros(d.shape, dtype=bool)
        return d >= self.llm_threshold

    def decide(
        self,
        cheap_probability: Any,
        llm_probability: Any,
        missing: Sequence[str | None] | None = None,
    ) -> CascadeResult:
        """Final verdicts given tier-1 probabilities and the LLM's (NaN outside the band).

        An item in the band without the LLM's probability (NaN: no verdict, why in
        ``missing``) keeps its tier-1 probability and goes to people."""
        p1 = np.asarray(cheap_probability, dtype=float)
        v1 = p1 >= 0.5
        d1 = doubt(p1, v1)
        band = self.to_llm(d1)
        pl = np.asarray(llm_probability, dtype=float)
        lacking = band & ~np.isfinite(pl)
        asked = band & ~lacking
        prob = p1.copy()
        if asked.any():
            prob[asked] = self.combine(p1[asked], pl[asked])
        verdict = prob >= 0.5
        final_doubt = doubt(prob, verdict)
        routed = (
            final_doubt >= self.people_threshold
            if self.human_share > 0
            else np.zeros(len(p1), dtype=bool)
        )
        routed = routed | lacking
        tier = np.where(routed, "people", np.where(band, "llm", "cheap")).astype(object)
        why = [None] * len(p1)
        for i in np.flatnonzero(lacking).tolist():
            given = missing[i] if missing is not None and i < len(missing) else None
            why[i] = given or "the LLM gave no verdict"
        return CascadeResult(
            prob, verdict, final_doubt, routed, tier, np.where(band, pl, np.nan), tuple(why)
        )

    def llm_probabilities(
        self,
        items: Sequence[Item],
        cheap_probability: Any,
        known: Any | None = None,
    ) -> np.ndarray:
        """The LLM's P(correct) on the items the band sends it (NaN elsewhere); ``known``
        values (stored scores, NaN where absent) are used instead of asking again."""
        return self.llm_verdicts(items, cheap_probability, known)[0]

    def llm_verdicts(
        self,
        items: Sequence[Item],
        cheap_probability: Any,
        known: Any | None = None,
    ) -> tuple[np.ndarray, list[str | None]]:
        """:meth:`llm_probabilities`, and per item why the LLM gave no verdict on an item of
        the band (NaN there; None elsewhere)."""
        p1 = np.asarray(cheap_probability, dtype=float)
        band = self.to_llm(doubt(p1, p1 >= 0.5))
        out = np.full(len(p1), np.nan)
        why: list[str | None] = [None] * len(p1)
        if known is not None:
            k = np.asarray(known, dtype=float)
            out[band] = k[band]
        need = np.flatnonzero(band & ~np.isfinite(out))
        if len(need):
            metric = self.feature.build()
            result = metric.score_batch([items[i] for i in need])
            out[need] = result.scores
            for i, score, det in zip(need.tolist(), result.scores, result.details, strict=True):
                if not np.isfinite(score):
                    why[i] = str(det.get(NO_VERDICT) or "the LLM gave no verdict")
        return out, why

    def predicted_seconds(self, n_rows: int, llm_share: float | None = None) -> dict[str, Any]:
        """Predicted wall seconds for ``n_rows`` (cheap inputs + the LLM on its share)."""
        share = self.llm_share if llm_share is None else float(llm_share)
        cheap = None if self.cheap_s_per_1000 is None else self.cheap_s_per_1000 * n_rows / 1000
        llm = n_rows * share * self.llm_seconds_per_item
        return {
            "rows": int(n_rows),
            "llm_items": int(round(n_rows * share)),
            "cheap_s": cheap,
            "llm_s": llm,
            "total_s": (cheap or 0.0) + llm,
        }

    def at(self, *, llm_share: float | None = None, human_share: float | None = None) -> LLMTier:
        """The operating point at other shares, read off the stored curve (no refitting)."""
        want_llm = self.llm_share if llm_share is None else float(llm_share)
        want_human = self.human_share if human_share is None else float(human_share)
        best = None
        for row in self.curve:
            gap = abs(row["llm_share"] - want_llm) + abs(row["human_share"] - want_human)
            if best is None or gap < best[0]:
                best = (gap, row)
        if best is None or best[0] > 0.005:
            shares = sorted({(r["llm_share"], r["human_share"]) for r in self.curve})
            raise ConfigError(
                f"The judge's cascade curve has no point at LLM share {want_llm:g} and human "
                f"share {want_human:g}; it has {shares[:12]}. Calibrate the LLM tier again."
            )
        row = best[1]
        return replace(
            self,
            llm_share=float(row["llm_share"]),
            human_share=float(row["human_share"]),
            llm_threshold=float(row["llm_threshold"]),
            people_threshold=float(row["people_threshold"]),
            coef_cheap=float(row["coef_cheap"]),
            coef_llm=float(row["coef_llm"]),
            intercept=float(row["intercept"]),
            cv_accuracy=float(row["cv_accuracy"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature.to_dict(),
            "llm_share": self.llm_share,
            "human_share": self.human_share,
            "llm_threshold": self.llm_threshold,
            "people_threshold": self.people_threshold,
            "coef_cheap": self.coef_cheap,
            "coef_llm": self.coef_llm,
            "intercept": self.intercept,
            "cv_accuracy": self.cv_accuracy,
            "llm_seconds_per_item": self.llm_seconds_per_item,
            "cheap_s_per_1000": self.cheap_s_per_1000,
            "llm_auc": self.llm_auc,
            "curve": [dict(row) for row in self.curve],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "cascade") -> LLMTier:
        """A judge file's cascade, checked field by field and against its own curve (as the
        triage band is: the checksum only catches accidents)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where} must be an object.")
        feature = FeatureSpec.from_dict(req(data, "feature", dict, where), f"{where}.feature")
        if feature.metric_id != "llm_judge":
            raise ConfigError(f"{where}.feature must be the llm_judge metric.")

        def share(key: str) -> float:
            value = req_float(data, key, where)
            return check_range(value, f"{where}.{key}", 0.0, 1.0)

        def weight(key: str) -> float:
            return check_range(
                req_float(data, key, where), f"{where}.{key}", -MAX_WEIGHT, MAX_WEIGHT
            )

        optional = {}
        for key, high in (("cheap_s_per_1000", 1e9), ("llm_auc", 1.0)):
            value = data.get(key)
            optional[key] = (
                None
                if value is None
                else check_range(req_float(data, key, where), f"{where}.{key}", 0.0, high)
            )
        curve = req(data, "curve", list, where)
        if not curve:
            raise ConfigError(
                f"{where}.curve is empty; an LLM tier needs its cross-validated curve (the "
                "file was edited after calibration). Calibrate the LLM tier again."
            )
        rows = [curve_row(row, f"{where}.curve[{i}]") for i, row in enumerate(curve)]
        tier = cls(
            feature=feature,
            llm_share=share("llm_share"),
            human_share=share("human_share"),
            llm_threshold=check_range(
                req_float(data, "llm_threshold", where), f"{where}.llm_threshold", 0.0, NEVER
            ),
            people_threshold=check_range(
                req_float(data, "people_threshold", where),
                f"{where}.people_threshold",
                0.0,
                NEVER,
            ),
            coef_cheap=weight("coef_cheap"),
            coef_llm=weight("coef_llm"),
            intercept=weight("intercept"),
            cv_accuracy=share("cv_accuracy"),
            llm_seconds_per_item=check_range(
                req_float(data, "llm_seconds_per_item", where),
                f"{where}.llm_seconds_per_item",
                0.0,
                1e6,
            ),
            curve=rows,
            **optional,
        )
        check_curve(
            rows,
            cheap_s_per_1000=tier.cheap_s_per_1000,
            llm_seconds_per_item=tier.llm_seconds_per_item,
            where=f"{where}.curve",
        )
        try:
            point = tier.at()
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if point != tier:
            raise ConfigError(
                f"{where} disagrees with its own curve at LLM share {tier.llm_share:g} and "
                f"human share {tier.human_share:g}; it was edited by hand. Calibrate the "
                "LLM tier again."
            )
        return tier
