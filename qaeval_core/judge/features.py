"""What a judge reads: one registered metric with its parameters, checked when rebuilt.

A :class:`FeatureSpec` pins the metric id, version, parameters and config hash seen during
calibration, so the scores a judge sees at scoring time are computed exactly as when it was
fitted (and a stored score with the same hash can be reused instead of recomputed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, get_metric

__all__ = ["FeatureSpec"]


@dataclass(frozen=True)
class FeatureSpec:
    """One metric a judge reads: which registered metric, with which parameters.

    ``column`` is the name the fitted model knows the score by (usually the metric id; a
    variant such as SMILE with a tuned ``w`` gets its own name).
    """

    column: str
    metric_id: str
    params: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    config_hash: str = ""

    @classmethod
    def from_metric(cls, metric: Metric, column: str | None = None) -> FeatureSpec:
        cfg = metric.config()
        return cls(
            column=column or metric.id,
            metric_id=metric.id,
            params=dict(cfg["params"]),
            version=str(cfg["version"]),
            config_hash=metric.config_hash(),
        )

    def build(self) -> Metric:
        """The metric, checked to compute exactly what it computed at calibration time."""
        metric = get_metric(self.metric_id, **self.params)
        if metric.version != self.version:
            raise ConfigError(
                f"Metric {self.metric_id!r} is at version {metric.version} but the judge was "
                f"calibrated with version {self.version}; its scores changed, so calibrate again "
                "to refit the judge."
            )
        if metric.config_hash() != self.config_hash:
            raise ConfigError(
                f"Metric {self.metric_id!r} with these parameters hashes to "
                f"{metric.config_hash()} but the judge recorded {self.config_hash}; the metric's "
                "configuration changed since calibration. Calibrate again."
            )
        return metric

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "metric": {"id": self.metric_id, "version": self.version, "params": self.params},
            "config_hash": self.config_hash,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> FeatureSpec:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where} must be an object.")
        column = data.get("column")
        metric = data.get("metric")
        chash = data.get("config_hash")
        if not isinstance(column, str) or not column:
            raise ConfigError(f"{where}.column must be a non-empty string.")
        if not isinstance(metric, Mapping):
            raise ConfigError(f"{where}.metric must be an object with id, version and params.")
        mid, version, params = metric.get("id"), metric.get("version"), metric.get("params")
        if not isinstance(mid, str) or not isinstance(version, str):
            raise ConfigError(f"{where}.metric.id and .version must be strings.")
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}.metric.params must be an object.")
        if not isinstance(chash, str) or not chash:
            raise ConfigError(f"{where}.config_hash must be a string.")
        return cls(column, mid, dict(params), version, chash)
