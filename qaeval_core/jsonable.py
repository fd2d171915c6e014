"""The one conversion of Python, numpy and pandas values into plain JSON values.

Every writer uses it (reports, score details, judge and calibration configs, metric configs,
exported records), so they agree on NaN, numpy types, timestamps and frames:

* NaN, infinities, ``None``, ``pd.NA`` and ``pd.NaT`` become ``None`` (JSON ``null``);
* numpy scalars become Python numbers, arrays / tuples / sets / Series become lists, a
  DataFrame becomes a list of row objects, mapping keys become strings;
* dates and timestamps become ISO 8601 text;
* anything else goes through ``unknown`` (``str`` by default; metric configs pass ``repr`` so a
  parameter object keeps a recognisable spelling in the config hash).

``strict=True`` is for values that must load back exactly (calibration configs): a non-finite
number raises :class:`ValueError` and an object of no JSON kind :class:`TypeError`, instead of
being turned into ``null`` or text.

numpy and pandas are looked up in ``sys.modules`` rather than imported: a value of their types
can only exist once they are loaded, and the CLI's file readers stay free of both.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from typing import Any

__all__ = ["to_jsonable"]


def to_jsonable(value: Any, *, strict: bool = False, unknown: Callable[[Any], Any] = str) -> Any:
    """Plain Python for ``json.dumps`` (see the module docstring for the rules).

    >>> import numpy as np, pandas as pd
    >>> to_jsonable({"a": np.float64(0.5), "b": [np.nan, (1, 2)], 3: pd.Timestamp("2026-01-02")})
    {'a': 0.5, 'b': [None, [1, 2]], '3': '2026-01-02T00:00:00'}
    """
    if isinstance(value, str) or value is None:
        return value
    np = sys.modules.get("numpy")
    pd = sys.modules.get("pandas")
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return int(value)
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        number = float(value)
        if math.isfinite(number):
            return number
        if strict:
            raise ValueError(f"non-finite number {number!r} is not allowed here")
        return None
    if pd is not None and isinstance(value, pd.DataFrame):
        return [
            to_jsonable(row, strict=strict, unknown=unknown)
            for row in value.to_dict(orient="records")
        ]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, strict=strict, unknown=unknown) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset) or (
        (np is not None and isinstance(value, np.ndarray))
        or (pd is not None and isinstance(value, pd.Series | pd.Index))
    ):
        return [to_jsonable(v, strict=strict, unknown=unknown) for v in list(value)]
    if pd is not None and (value is pd.NA or value is pd.NaT):
        return None
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if np is not None and isinstance(value, np.generic):  # numpy datetimes, strings, ...
        return to_jsonable(value.item(), strict=strict, unknown=unknown)
    if strict:
        raise TypeError(f"{type(value).__name__} is not JSON serializable")
    return unknown(value)
