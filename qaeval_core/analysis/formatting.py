"""Words for values: a label, a cited rule and a metric's details as plain text.

The app's tables, the disagreement queue and the reports all show these values; writing them in
one place keeps "2 clearly correct" and "4 More details" worded the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.schema import RULES, LabelValue

__all__ = ["format_details", "label_text", "rule_text"]


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
