"""The LLM tier's curve as a judge file records it, and the rules it is checked by on load.

Why a module of its own: :class:`~qaeval_core.judge.cascade.LLMTier` applies the tier; this
is the record's format, what :func:`qaeval_core.calibrate.cascade.cascade_curve` writes and
what an emptied, cut or edited curve breaks (the checksum is recomputable, so it guards
against accidents only). A tier is read off its curve (another operating point without
refitting), so an unchecked curve would let a re-signed file send any share to the LLM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.judge.combiners.base import MAX_WEIGHT, check_range, req_float

__all__ = ["NEVER", "check_curve", "curve_row"]

#: Doubt is at most 0.5 in theory; a threshold above it sends nothing on.
NEVER = 1.0

_CURVE_KEYS = (
    "llm_share",
    "human_share",
    "llm_threshold",
    "people_threshold",
    "coef_cheap",
    "coef_llm",
    "intercept",
    "cv_accuracy",
    "s_per_1000",
)


def curve_row(row: Any, where: str) -> dict[str, float]:
    if not isinstance(row, Mapping):
        raise ConfigError(f"{where} must be an object.")
    out = {}
    for key in _CURVE_KEYS:
        value = req_float(row, key, where)
        if key in ("llm_share", "human_share", "cv_accuracy"):
            check_range(value, f"{where}.{key}", 0.0, 1.0)
        elif key in ("llm_threshold", "people_threshold"):
            check_range(value, f"{where}.{key}", 0.0, NEVER)
        else:
            check_range(value, f"{where}.{key}", -MAX_WEIGHT if key != "s_per_1000" else 0.0, 1e9)
        out[key] = value
    return out


#: Fields of a curve row that depend on the LLM share only (one refit per share: its band's
#: threshold, the tier-2 weights and the predicted cost), the same at every human share.
_PER_LLM_SHARE = ("llm_threshold", "coef_cheap", "coef_llm", "intercept", "s_per_1000")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def check_curve(
    rows: list[dict[str, float]],
    *,
    cheap_s_per_1000: float | None,
    llm_seconds_per_item: float,
    where: str = "cascade.curve",
) -> None:
    """The curve must be what :func:`qaeval_core.calibrate.cascade.cascade_curve` writes, so a
    tier whose curve was emptied, cut or edited is refused even with a recomputed checksum.

    Why each rule: the curve is a full grid of LLM shares x human shares (each point once,
    both with share 0: the cheap judge alone and no people), so ``LLMTier.at`` reads every
    operating point off it; at each LLM share one band and one tier-2 model were refitted, so
    those fields are equal across its human shares; share 0 sends nothing (threshold 1,
    "never"); a larger share needs a lower or equal doubt threshold (the threshold is a doubt
    quantile), as does a larger human share; people decide their items right, so more of them
    never lowers the accuracy; and the predicted cost is the cheap inputs' plus the LLM's on
    its share. A ConfigError names the first row that breaks a rule.
    """
    seen: dict[tuple[float, float], int] = {}
    for i, row in enumerate(rows):
        point = (row["llm_share"], row["human_share"])
        if point in seen:
            raise ConfigError(
                f"{where}[{i}] repeats the point at LLM share {point[0]:g} and human share "
                f"{point[1]:g} of {where}[{seen[point]}]; the file was edited after calibration."
            )
        seen[point] = i
    llm_shares = sorted({p[0] for p in seen})
    human_shares = sorted({p[1] for p in seen})
    for name, shares in (("llm_share", llm_shares), ("human_share", human_shares)):
        if shares[0] != 0.0:
            raise ConfigError(
                f"{where} has no row with {name} 0 (it always has one); the file was edited "
                "after calibration. Calibrate the LLM tier again."
            )
    for s in llm_shares:
        for h in human_shares:
            if (s, h) not in seen:
                raise ConfigError(
                    f"{where} lacks the point at LLM share {s:g} and human share {h:g} (the "
                    "curve is a full grid); the file was edited after calibration."
                )
    cheap = cheap_s_per_1000 or 0.0
    previous_threshold = None
    for s in llm_shares:
        at_share = [seen[(s, h)] for h in human_shares]
        first = rows[at_share[0]]
        for i in at_share[1:]:
            for key in _PER_LLM_SHARE:
                if not _close(rows[i][key], first[key]):
                    raise ConfigError(
                        f"{where}[{i}].{key} is {rows[i][key]:g} but {first[key]:g} at the "
                        f"other human shares of LLM share {s:g} (one refit per LLM share); the "
                        "file was edited after calibration."
                    )
        i = at_share[0]
        threshold = first["llm_threshold"]
        if s == 0.0 and threshold != NEVER:
            raise ConfigError(
                f"{where}[{i}].llm_threshold must be {NEVER:g} (never) at LLM share 0, got "
                f"{threshold:g}; the file was edited after calibration."
            )
        if previous_threshold is not None and threshold > previous_threshold:
            raise ConfigError(
                f"{where}[{i}].llm_threshold is above a smaller LLM share's; sending a larger "
                "share to the LLM needs a lower doubt threshold. The file was edited after "
                "calibration."
            )
        previous_threshold = threshold
        expected = cheap + 1000 * s * llm_seconds_per_item
        if not math.isclose(first["s_per_1000"], expected, rel_tol=1e-6, abs_tol=1e-9):
            raise ConfigError(
                f"{where}[{i}].s_per_1000 is {first['s_per_1000']:g} but the tier's costs give "
                f"{expected:g} at LLM share {s:g}; the file was edited after calibration."
            )
        _check_people(rows, at_share, where)


def _check_people(rows: list[dict[str, float]], at_share: list[int], where: str) -> None:
    """Along the human shares of one LLM share (rows ``at_share``, human share rising): no
    people at share 0, the people threshold never rising, the accuracy never falling."""
    first = at_share[0]
    if rows[first]["people_threshold"] != NEVER:
        raise ConfigError(
            f"{where}[{first}].people_threshold must be {NEVER:g} (never) at human share 0, "
            f"got {rows[first]['people_threshold']:g}; the file was edited after calibration."
        )
    for before, i in zip(at_share, at_share[1:], strict=False):
        if rows[i]["people_threshold"] > rows[before]["people_threshold"]:
            raise ConfigError(
                f"{where}[{i}].people_threshold is above a smaller human share's; routing more "
                "to people needs a lower doubt threshold. The file was edited after calibration."
            )
        if rows[i]["cv_accuracy"] < rows[before]["cv_accuracy"]:
            raise ConfigError(
                f"{where}[{i}].cv_accuracy is below a smaller human share's; people decide "
                "their items right, so more of them never lowers it. The file was edited after "
                "calibration."
            )
