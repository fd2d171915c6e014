"""One conversion of numbers, arrays and frames into plain JSON values, shared by every writer
(reports, score details, judge configs) so they agree on NaN, numpy types and frames."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Plain Python for ``json.dumps``: NaN/NA -> None, numpy scalars -> numbers, frames -> rows."""
    if isinstance(value, pd.DataFrame):
        return [to_jsonable(r) for r in value.to_dict(orient="records")]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pd.Series):
        return [to_jsonable(v) for v in list(value)]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, int | str):
        return value
    return str(value)
