"""The metric interface and registry.

A metric is a scikit-learn-style object: its constructor only stores keyword parameters, its
configuration is those parameters, and :meth:`Metric.config_hash` is a stable hash of
(metric id, version, parameters) so stored scores are reused only when nothing changed.

``score_batch`` takes a batch of :class:`~qaeval_core.schema.Item` and returns a
:class:`MetricResult`: per item a score in [0, 1], a boolean decision at the metric's
threshold, and a details dict (subscores, best-matching reference or n-gram, rationale).
A metric that could not score an item at all (an LLM endpoint failed on it) gives it *no
verdict*: a NaN score and the reason under ``details[NO_VERDICT]``; the scoring loop keeps
that NaN instead of replacing it by 0.0 (:mod:`qaeval_core.scoring`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.jsonable import to_jsonable
from qaeval_core.schema import Item
from qaeval_core.text.profiles import check_profile

__all__ = [
    "NO_VERDICT",
    "Metric",
    "MetricResult",
    "register",
    "get_metric",
    "metric_ids",
    "metric_class",
    "BY_MODEL",
    "default_inputs",
    "with_profile",
]

#: The details key of an item a metric gave no verdict (its score is NaN): why there is none.
NO_VERDICT = "no_verdict"
#: A :attr:`Metric.family` meaning "the family of the model named by my ``model`` parameter":
#: the cost family ``encoder:<model>`` (:func:`qaeval_core.calibrate.cost.input_family`), so
#: every metric that loads one encoder (or LLM) shares its load and is kept or dropped with it.
BY_MODEL = "encoder"


@dataclass
class MetricResult:
    """Scores of one batch, aligned with the input items."""

    scores: np.ndarray
    decisions: np.ndarray
    details: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=float)
        self.decisions = np.asarray(self.decisions, dtype=bool)
        if not self.details:
            self.details = [{} for _ in range(len(self.scores))]
        if not (len(self.scores) == len(self.decisions) == len(self.details)):
            raise ValueError("scores, decisions and details must have the same length")

    def __len__(self) -> int:
        return len(self.scores)


class Metric(ABC):
    """Base class of every answer-correctness metric.

    Subclasses set ``id`` (registry key), ``version`` (bump when the computation changes),
    ``kind`` ("lexical", "embedding", "learned", "llm"), a one-line ``description``, and
    implement :meth:`score_batch`. Constructor parameters must be keyword arguments stored
    under the same names (that is what :meth:`get_params` reads).

    A metric also declares what the rest of qaeval needs to know about it, here and nowhere
    else: ``family``, ``needs_models``, ``calibrate_by_default`` (with ``calibrated_as``) and
    ``feature_only``. The calibration's defaults (:data:`qaeval_core.calibrate.inputs.
    DEFAULT_METRICS`, ``FEATURE_ONLY``), the cost families and ``qaeval metrics`` read them.
    """

    id: ClassVar[str]
    version: ClassVar[str] = "1"
    kind: ClassVar[str] = "lexical"
    description: ClassVar[str] = ""
    #: Metrics that need neural models are marked so the CLI can say what they load.
    needs_models: ClassVar[bool] = False
    #: The cost family (:mod:`qaeval_core.calibrate.cost`): inputs that share work (a loaded
    #: model, tokenisation) are measured, cached and kept or dropped together. :data:`BY_MODEL`
    #: groups by the model the ``model`` parameter names; empty: a family of its own (its id).
    family: ClassVar[str] = ""
    #: Whether a calibration tries this metric when no metrics are named (in registration
    #: order, which is the import order of ``qaeval_core/metrics/__init__.py``).
    calibrate_by_default: ClassVar[bool] = False
    #: ``(column, params)`` a default calibration computes it as; empty: its id, no parameters.
    calibrated_as: ClassVar[tuple[str, dict[str, Any]] | tuple[()]] = ()
    #: A calibration input, not a judge: left out of "best single metric" reports and votes.
    feature_only: ClassVar[bool] = False

    threshold: float

    @abstractmethod
    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        """Score a batch of items."""

    # -- sklearn-style parameter handling ---------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (JSON-friendly values)."""
        return {name: getattr(self, name) for name in self._param_names()}

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        sig = inspect.signature(cls.__init__)
        return {
            n: sig.parameters[n].default
            for n in cls._param_names()
            if sig.parameters[n].default is not inspect.Parameter.empty
        }

    def config(self) -> dict[str, Any]:
        """What identifies this metric's scores: id, version and parameters."""
        params = to_jsonable(self.get_params(), unknown=repr)
        return {"id": self.id, "version": self.version, "params": params}

    def config_hash(self) -> str:
        """Stable 16-hex-digit hash of :meth:`config` (stored next to each score)."""
        blob = json.dumps(self.config(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def decide(self, scores: np.ndarray) -> np.ndarray:
        """Decision at the metric's threshold (score >= threshold means correct)."""
        return np.asarray(scores, dtype=float) >= float(self.threshold)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


#: Metric classes by id. Importing this module imports the ``qaeval_core.metrics`` package
#: first (Python runs a package's ``__init__`` before any submodule), and the package imports
#: every built-in family, so the built-ins are always registered before a lookup.
_REGISTRY: dict[str, type[Metric]] = {}
M = TypeVar("M", bound=type[Metric])


def register(cls: M) -> M:
    """Class decorator: make a metric available by its ``id``."""
    if cls.id in _REGISTRY and _REGISTRY[cls.id] is not cls:
        raise ValueError(f"metric id {cls.id!r} registered twice")
    _REGISTRY[cls.id] = cls
    return cls


def metric_ids() -> list[str]:
    """Ids of all registered metrics, sorted.

    >>> ids = metric_ids()
    >>> ids == sorted(ids) and {"em", "f1", "contains", "smile"} <= set(ids)
    True
    """
    return sorted(_REGISTRY)


def default_inputs() -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """``(column, metric id, params)`` of every registered metric that declares
    ``calibrate_by_default``, in registration order (private ``_`` ids never).

    >>> default_inputs()[:3]
    (('em', 'em', {}), ('contains', 'contains', {}), ('f1', 'f1', {}))
    """
    out = []
    for mid, cls in _REGISTRY.items():
        if cls.calibrate_by_default and not mid.startswith("_"):
            column, params = cls.calibrated_as or (mid, {})
            out.append((column, mid, dict(params)))
    return tuple(out)


def metric_class(metric_id: str) -> type[Metric]:
    try:
        return _REGISTRY[metric_id]
    except KeyError:
        raise ConfigError(
            f"Unknown metric {metric_id!r}. Known metrics: {', '.join(sorted(_REGISTRY))}."
        ) from None


def get_metric(metric_id: str, **params: Any) -> Metric:
    """Build a registered metric with parameters; unknown parameters raise a clear error.

    >>> from qaeval_core.schema import Item
    >>> contains = get_metric("contains")
    >>> contains
    Contains(threshold=0.5, normalize='spaced')
    >>> result = contains.score_batch([Item("Capital of France?", ("Paris",), "It is Paris."),
    ...                                Item("Capital of France?", ("Paris",), "Lyon")])
    >>> result.scores.tolist(), result.decisions.tolist()
    ([1.0, 0.0], [True, False])
    >>> result.details[0]
    {'best_reference': 'Paris'}
    >>> get_metric("f1", threshold=0.4).get_params()
    {'threshold': 0.4, 'normalize': 'spaced'}
    """
    cls = metric_class(metric_id)
    known = cls._param_names()
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ConfigError(
            f"Metric {metric_id!r} has no parameter(s) {', '.join(unknown)}; "
            f"valid: {', '.join(known) or '(none)'}."
        )
    return cls(**params)


def with_profile(metric: Metric, profile: str) -> Metric:
    """``metric`` at ``normalize=profile`` when it takes that parameter, else itself (a
    calibration at one profile: every input that normalises reads the answer that way).

    >>> with_profile(get_metric("f1"), "robust")
    TokenF1(threshold=0.5, normalize='robust')
    """
    check_profile(profile)
    if "normalize" not in metric._param_names() or getattr(metric, "normalize", None) == profile:
        return metric
    return type(metric)(**{**metric.get_params(), "normalize": profile})


MetricFactory = Callable[..., Metric]
