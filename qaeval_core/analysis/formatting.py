"""Words for values: a label, a cited rule and a metric's details as plain text.

The app's tables, the disagreement queue and the reports all show these values; writing them in
one place keeps "2 clearly correct" and "4 More details" worded the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.schema import RULES, LabelValue

__all__ = [
    "config_label",
    "display_frame",
    "format_details",
    "header_text",
    "is_blank",
    "label_text",
    "percent_text",
    "rule_text",
]

#: Header words spelled out (``n_items`` -> "Items", ``ci_low`` -> "CI low").
_WORDS = {"n": "", "ci": "CI", "id": "ID", "qa": "QA", "ds": "Dawid-Skene", "3pt": "3-point"}


def is_blank(value: Any) -> bool:
    """None, pandas' NA/NaT or a float NaN: a value a reader should see as blank.

    (Wider than :func:`qaeval_core.io.cells.is_missing`, a file's absent cell: None or NaN.)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and np.isnan(value)


def header_text(name: str) -> str:
    """A column name for people: ``"n_items"`` -> ``"Items"``, ``"kappa_3pt_linear"`` ->
    ``"Kappa 3-point linear"``, ``"qa_model"`` -> ``"QA model"``."""
    words = [_WORDS.get(w, w) for w in str(name).split("_")]
    text = " ".join(w for w in words if w)
    return text[:1].upper() + text[1:] if text else str(name)


def display_frame(
    frame: pd.DataFrame, headers: Mapping[str, str] | None = None, *, digits: int = 3
) -> pd.DataFrame:
    """A frame ready for a table: missing values in text columns blank instead of ``None`` or
    ``nan``, and headers in words (``headers`` first, else :func:`header_text`).

    Numeric columns without missing values stay numbers (they sort as numbers). A numeric
    column with a missing value becomes text with ``digits`` decimals and a blank cell there:
    Streamlit's tables print a missing number as "None", which reads as a bug to annotators.
    """
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if values.dtype == object or pd.api.types.is_string_dtype(values):
            out[column] = values.map(lambda v: "" if is_blank(v) else v).astype(object)
        elif pd.api.types.is_float_dtype(values) and values.isna().any():
            out[column] = values.map(lambda v: "" if is_blank(v) else f"{v:.{digits}f}")
    names = dict(headers or {})
    return out.rename(columns={c: names.get(c, header_text(c)) for c in out.columns})


@lru_cache(maxsize=256)
def _known_configs(metric_id: str) -> dict[str, str]:
    """``{config hash: words}`` for the configurations a metric is scored with out of the box:
    its default parameters at every normalisation profile (``qaeval score``) and as a
    calibration at that profile reads them (the Calibrate page's robust fit). Empty for a
    metric this install does not know (a plugin's)."""
    from qaeval_core.calibrate.inputs import at_profile
    from qaeval_core.errors import QAEvalError
    from qaeval_core.metrics.base import get_metric, with_profile
    from qaeval_core.text.profiles import PROFILES

    try:
        metric = get_metric(metric_id)
    except (QAEvalError, KeyError, TypeError, ValueError):
        return {}
    out: dict[str, str] = {}
    for profile in PROFILES:
        try:
            variant = with_profile(metric, profile)
        except (QAEvalError, TypeError, ValueError):
            continue
        default = variant.config_hash() == metric.config_hash()
        words = "default settings" if default else f"default settings, {profile} reading"
        out.setdefault(variant.config_hash(), words)
        # as a calibration at that profile reads it (answer-shape inputs: the reader text)
        read = at_profile(metric, profile)
        out.setdefault(read.config_hash(), words)
        params = read.get_params()
        if params.get("robust_text") == "reader_latex":
            # Scores stored before issue 33 kept LaTeX (the reader text flattened it then).
            earlier = type(read)(**{**params, "robust_text": "reader"})
            out.setdefault(earlier.config_hash(), f"earlier {words}")
    return out


def config_label(metric_id: str, config_hash: str) -> str:
    """A metric configuration in words for tables (a hash means nothing to a reader):
    ``"default settings"``, ``"default settings, robust reading"`` (answers read with the
    robust profile), else ``"custom settings"``."""
    return _known_configs(str(metric_id)).get(str(config_hash), "custom settings")


def percent_text(fraction: Any) -> str:
    """A share as the app's one percentage format, one decimal: ``0.1961`` -> ``"19.6%"``
    (issue 21, item 10: "19.61%" was shown next to "91.3%"); empty when missing."""
    if is_blank(fraction):
        return ""
    return f"{100.0 * float(fraction):.1f}%"


def label_text(value: Any) -> str:
    """``"2 clearly correct"`` for a label value; empty for a missing one."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    return f"{int(value)} {LabelValue(int(value)).title}"


def rule_text(rule: Any) -> str:
    """``"4 More details"`` for a cited rule; empty when none was cited."""
    if rule is None or rule is pd.NA or (isinstance(rule, float) and np.isnan(rule)):
        return ""
    names = {r.number: r.name for r in RULES}
    return f"{int(rule)} {names.get(int(rule), '')}".strip()


def format_details(details: Any, *, digits: int = 3) -> str:
    """A metric's details dict as one line of plain text (``key: value; ...``).

    Subscores, the best-matching reference or n-gram and an LLM's rationale all fit in a table
    cell this way; nested values are flattened with dotted keys.
    """
    if details is None or details is pd.NA or (isinstance(details, float) and np.isnan(details)):
        return ""
    if not isinstance(details, Mapping):
        return str(details)
    parts: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, float):
            parts.append(f"{prefix}: {value:.{digits}f}")
        elif isinstance(value, list | tuple):
            parts.append(f"{prefix}: {', '.join(map(str, value))}")
        else:
            parts.append(f"{prefix}: {value}")

    walk("", details)
    return "; ".join(parts)
