"""Shared plumbing of the calibration estimators: input checks, serialisation registry, rho.

The estimators follow scikit-learn conventions (``BaseEstimator`` gives ``get_params`` /
``set_params`` / ``clone``) but predict booleans ("is the candidate correct?") because that is
what every caller wants; ``predict_proba`` keeps sklearn's ``(n, 2)`` shape so the positive
column is ``[:, 1]``.

Serialisation is plain JSON-friendly dicts (``to_dict`` / ``from_dict``), never pickle: a
calibrated judge file must be safe to open and readable by a person. ``from_dict`` validates
every field and raises :class:`~qaeval_core.errors.ConfigError` naming what is wrong, because the
dict usually comes from a file someone may have edited.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, ParamSpec, TypeVar

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin

from qaeval_core.errors import ConfigError, InputError

__all__ = [
    "CalibratedClassifier",
    "MAX_WEIGHT",
    "as_binary",
    "as_score_matrix",
    "check_number",
    "check_range",
    "model_from_dict",
    "register_model",
    "model_types",
    "rho",
    "sigmoid",
    "single_blas_thread",
]

#: Largest magnitude a fitted weight or intercept may have in a judge file. Fits on a few hundred
#: labels with standardised inputs give single or double digits; anything near this is a
#: damaged or hand-made file, and larger values make ``coef * x`` overflow to NaN.
MAX_WEIGHT = 1e6

P = ParamSpec("P")
R = TypeVar("R")


def single_blas_thread(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` with BLAS limited to one thread.

    Why: calibration fits thousands of tiny models (logistic regressions on a few hundred rows
    and at most a few dozen columns), and BLAS threads only add synchronisation to them. On
    the 2-core development machine under load, 100 such fits took 2.0 s with OpenBLAS's 2
    threads and 0.08 s with one; the cost-aware selection went from most of a minute to
    seconds. Nothing in a fit is large enough to gain from more threads.
    """
    from threadpoolctl import threadpool_limits

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def as_binary(y: Any, *, name: str = "y") -> np.ndarray:
    """Human labels as a boolean array; only 0/1/True/False are accepted.

    Unclear (1 on the 3-point scale) must already have been mapped to "not correct" by the
    caller; passing the 3-point value here would silently treat "unclear" as correct, so it is
    refused.
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InputError(
            f"{name} must be one-dimensional (one label per item), got shape {arr.shape}."
        )
    if arr.dtype == bool:
        return arr.copy()
    try:
        num = arr.astype(float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must hold 0/1 or booleans; got dtype {arr.dtype}.") from None
    if np.isnan(num).any():
        raise InputError(f"{name} holds missing labels; drop unlabelled rows before fitting.")
    bad = sorted(set(np.unique(num)) - {0.0, 1.0})
    if bad:
        raise InputError(
            f"{name} must hold binary labels 0/1 (1 = clearly correct); found {bad[:5]}. "
            "Map the 3-point scale with value == 2 first."
        )
    return num.astype(bool)


def as_score_matrix(
    X: Any, feature_names: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str] | None]:
    """A 2-D float matrix of metric scores and the column names when X carries them.

    A 1-D input is one metric (one column). When ``feature_names`` is given and X is a
    DataFrame, the columns are taken by name and in that order, so a model applied to a frame
    with extra or reordered columns still reads the right scores.
    """
    names: list[str] | None = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        if feature_names is not None:
            missing = [c for c in feature_names if c not in X.columns]
            if missing:
                raise InputError(
                    f"X lacks score column(s) {missing}; expected columns {list(feature_names)}."
                )
            X = X[list(feature_names)]
        names = [str(c) for c in X.columns]
        arr = X.to_numpy(dtype=float)
    else:
        arr = np.asarray(X, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(
            f"X must be a score matrix (n_items, n_metrics), got shape {arr.shape}; pass a "
            "DataFrame with one column per metric."
        )
    if arr.shape[0] == 0:
        raise InputError("X has no rows; score at least one labelled item first.")
    if not np.isfinite(arr).all():
        raise InputError("X holds NaN or infinite scores; score every item with every metric.")
    return arr, names


def rho(a: np.ndarray, b: np.ndarray) -> float:
    """Mean of Spearman, Kendall tau-b and Pearson correlation (the fusion paper's rho).

    A constant input has no defined correlation; it counts as 0 (no information) instead of
    NaN so that subset search never picks a metric because of a NaN comparison.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = [
            stats.spearmanr(a, b).statistic,
            stats.kendalltau(a, b).statistic,
            stats.pearsonr(a, b).statistic,
        ]
    vals = [0.0 if v is None or math.isnan(v) else float(v) for v in vals]
    return float(np.mean(vals))


class CalibratedClassifier(ClassifierMixin, BaseEstimator):
    """Common surface: boolean ``predict``, ``(n, 2)`` ``predict_proba``, accuracy ``score``.

    Subclasses set ``type_name`` (the ``"type"`` key of their dict form) and implement
    ``fit``, ``predict_proba``, ``to_dict`` and ``from_dict``. ``predict`` is always
    ``predict_proba(X)[:, 1] >= 0.5`` so that a judge's score and decision never disagree.
    """

    type_name: ClassVar[str]

    def predict(self, X: Any) -> np.ndarray:
        """True where the candidate is judged correct."""
        return self.predict_proba(X)[:, 1] >= 0.5

    def predict_proba(self, X: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy against binary human labels."""
        yb = as_binary(y)
        pred = self.predict(X)
        w = np.ones(len(yb)) if sample_weight is None else np.asarray(sample_weight, float)
        return float(np.sum(w * (pred == yb)) / np.sum(w))

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibratedClassifier:  # pragma: no cover
        raise NotImplementedError


_MODEL_TYPES: dict[str, type[CalibratedClassifier]] = {}
C = TypeVar("C", bound=type[CalibratedClassifier])


def register_model(cls: C) -> C:
    """Class decorator: make a calibrated model loadable from its dict form by ``type``."""
    _MODEL_TYPES[cls.type_name] = cls
    return cls


def model_types() -> list[str]:
    """The ``type`` values a judge config may name."""
    return sorted(_MODEL_TYPES)


def model_from_dict(data: Any, *, where: str = "model") -> CalibratedClassifier:
    """Rebuild a fitted model from ``to_dict`` output, validating it."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}.")
    kind = data.get("type")
    if kind not in _MODEL_TYPES:
        raise ConfigError(f"{where}.type is {kind!r}; expected one of {', '.join(model_types())}.")
    return _MODEL_TYPES[kind].from_dict(data)


# -- validation helpers for from_dict -------------------------------------------------------


def req(data: Mapping[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    """A required field of the expected JSON type, else a ConfigError naming it."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}.")
    if key not in data:
        raise ConfigError(f"{where} lacks the field {key!r}.")
    value = data[key]
    # bool is an int subclass: refuse it where a number is expected.
    if isinstance(value, bool) and bool not in _as_tuple(types):
        raise ConfigError(f"{where}.{key} must be {_type_names(types)}, got a boolean.")
    if not isinstance(value, types):
        raise ConfigError(
            f"{where}.{key} must be {_type_names(types)}, got {type(value).__name__}."
        )
    if isinstance(value, int | float) and not isinstance(value, bool):
        check_number(value, f"{where}.{key}")
    return value


def check_number(value: Any, where: str) -> float:
    """A JSON number as a finite float, else a one-line ConfigError.

    Why: JSON integers have no size limit, and ``float()`` of a 400-digit one raises
    OverflowError (a traceback, not a message); NaN/Infinity are not JSON but Python reads
    them. Both are refused here, so every number a judge file holds passes one gate.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number, got {type(value).__name__}.")
    if isinstance(value, int) and value.bit_length() > 1000:
        raise ConfigError(
            f"{where} must be a finite number, got an integer of {value.bit_length()} bits "
            "(no judge qaeval writes holds one)."
        )
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{where} must be a finite number, got {value}.")
    return number


def check_range(value: float, where: str, lo: float, hi: float) -> float:
    """``value`` if ``lo <= value <= hi``, else a ConfigError giving the range."""
    if not lo <= value <= hi:
        raise ConfigError(f"{where} must be in [{lo:g}, {hi:g}], got {value:g}.")
    return value


def req_float(data: Mapping[str, Any], key: str, where: str) -> float:
    return float(req(data, key, (int, float), where))


def req_floats(
    data: Mapping[str, Any], key: str, where: str, *, length: int | None = None
) -> np.ndarray:
    """A list of finite numbers (optionally of a given length)."""
    values = req(data, key, list, where)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ConfigError(f"{where}.{key} must be a list of numbers.")
    for i, v in enumerate(values):
        check_number(v, f"{where}.{key}[{i}]")
    arr = np.asarray(values, dtype=float)
    if not np.isfinite(arr).all():
        raise ConfigError(f"{where}.{key} holds a non-finite number.")
    if length is not None and len(arr) != length:
        raise ConfigError(f"{where}.{key} must have {length} values, got {len(arr)}.")
    return arr


def req_names(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    values = req(data, key, list, where)
    if not values or not all(isinstance(v, str) and v for v in values):
        raise ConfigError(f"{where}.{key} must be a non-empty list of column names.")
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}.{key} names a column twice.")
    return list(values)


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _type_names(types: type | tuple[type, ...]) -> str:
    names = {
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        bool: "true/false",
    }
    parts = []
    for t in _as_tuple(types):
        n = names.get(t, t.__name__)
        if n not in parts:
            parts.append(n)
    return " or ".join(parts)
