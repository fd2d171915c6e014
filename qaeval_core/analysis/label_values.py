"""Raw human labels read as correct / not correct: the binary and 3-point scales, per-row
scales and the inference of a scale from the values (rules in :mod:`.estimates`' docstring).

Split from :mod:`.estimates` (which estimates accuracy from these values) so the estimator
reads without the parsing rules in the way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import InputError
from qaeval_core.io.labels import LABEL_SCALES
from qaeval_core.schema import LabelValue

#: A per-row label scale column (as in qaeval's import schema); it overrides ``label_scale``.
ROW_SCALE_COLUMN = "label_scale"
#: Words read as a true/false label.
TRUE_WORDS = {"true": 1, "yes": 1, "false": 0, "no": 0}


def is_blank_label(value: Any) -> bool:
    """None, NaN, NA or a blank string (an empty CSV cell): no value."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _parse_label(value: Any, what: str) -> tuple[bool, int]:
    """(is it a boolean, its number) of one raw label; numbers must be 0, 1 or 2."""
    original = value
    if isinstance(value, bool | np.bool_):
        return True, int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_WORDS:
            return True, TRUE_WORDS[text]
        try:
            value = float(text)
        except ValueError:
            raise InputError(f"{what}: label {original!r} is not a number or true/false") from None
    if isinstance(value, int | float | np.integer | np.floating) and float(value) in (0, 1, 2):
        return False, int(value)
    raise InputError(
        f"{what}: label {original!r} is not 0/1 (binary), 0/1/2 (three-point) or true/false"
    )


def check_label_scale(scale: Any, what: str) -> str:
    if scale not in LABEL_SCALES:
        raise InputError(f"{what} must be one of {', '.join(LABEL_SCALES)}; got {scale!r}")
    return str(scale)


def correct_labels(
    values: Sequence[Any] | pd.Series,
    scale: str | None = None,
    row_scales: Sequence[Any] | pd.Series | None = None,
    what: str = "label",
) -> np.ndarray:
    """Raw human labels as 1.0 (clearly correct), 0.0 (incorrect or unclear) or NaN (none).

    ``scale`` is ``"binary"`` or ``"three"``; ``row_scales`` (per value, may be missing) overrides
    it; where neither says, the scale is inferred from the values without one (see the module
    docstring) and 0/1 alone is refused as ambiguous.
    """
    if scale is not None:
        scale = check_label_scale(scale, "label_scale")
    series = pd.Series(values).reset_index(drop=True)
    out = np.full(len(series), np.nan)
    present = ~series.map(is_blank_label).to_numpy(bool)
    if not present.any():
        return out
    seen: dict[Any, tuple[bool, int]] = {}  # parse each distinct value once
    parsed = []
    for v in series[present].tolist():
        key = (type(v), v) if isinstance(v, str | int | float) else id(v)
        parsed.append(seen[key] if key in seen else seen.setdefault(key, _parse_label(v, what)))
    is_bool = np.array([p[0] for p in parsed])
    number = np.array([p[1] for p in parsed])
    scales = np.full(len(parsed), scale or "", dtype=object)
    rows = [] if row_scales is None else pd.Series(row_scales).reset_index(drop=True)[present]
    for i, s in enumerate(rows):
        if not is_blank_label(s):
            scales[i] = check_label_scale(s, f"{what}: row {ROW_SCALE_COLUMN}")
    unset = scales == ""
    if unset.any():
        scales[unset] = _infer_scale(is_bool[unset], number[unset], what)
    binary = scales == "binary"
    if (binary & (number == 2)).any():
        raise InputError(
            f"{what}: label 2 under the binary scale (0/1); for 0/1/2 labels use "
            "label_scale='three'"
        )
    if (~binary & is_bool).any():
        raise InputError(f"{what}: a true/false label under the three-point scale (0/1/2)")
    out[present] = np.where(binary, number == 1, number == int(LabelValue.CORRECT))
    return out


def _infer_scale(is_bool: np.ndarray, number: np.ndarray, what: str) -> str:
    two = (number == 2).any()
    if is_bool.any() and two:
        raise InputError(
            f"{what} mixes true/false with the label 2; name the scale: "
            "label_scale='binary' or label_scale='three'"
        )
    if is_bool.any() or not (two or (number == 1).any()):
        return "binary"  # booleans; or 0 alone, not correct on either scale
    if two:
        return "three"
    raise InputError(
        f"{what} holds only 0 and 1, which is ambiguous: binary (1 = correct) or the 3-point "
        "scale without a 2 (1 = unclear, counted as not correct). Name it: "
        "label_scale='binary' or label_scale='three'."
    )
