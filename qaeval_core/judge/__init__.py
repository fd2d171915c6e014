"""A calibrated judge: which metrics to run, the fitted combiner, one checksummed JSON file.

This package is all that applying a saved judge needs (``Judge.from_config(path)`` then
``judge``, or ``predict`` / ``predict_proba``): the :class:`Judge` (:mod:`.judge`) and its file
format (:mod:`.config_file`), the metric it reads per input (:class:`FeatureSpec`,
:mod:`.features`), the fitted combiners (:mod:`.combiners`), its calibrated probability and
triage band (:mod:`.triage`) and the snapshot of answers people taught it
(:class:`JudgeKnowledge`, :mod:`.knowledge`). It never imports :mod:`qaeval_core.calibrate`, the
training side that builds judges, nor the store.

The names below are imported on first use (module ``__getattr__``, as :mod:`qaeval_core.calibrate`
does), so a light module of this package (:mod:`.gold_check`, read by ``qaeval check --help``)
loads neither pandas nor scikit-learn.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from qaeval_core.io.item_frames import (
        items_frame,
    )
    from qaeval_core.io.item_frames import (
        items_from_frame as frame_to_items,
    )
    from qaeval_core.judge.combiners import (
        CalibratedClassifier,
        FusionClassifier,
        PandaFitClassifier,
        StackerClassifier,
        ThresholdClassifier,
        model_from_dict,
        model_types,
    )
    from qaeval_core.judge.config_file import (
        JUDGE_KIND,
        JUDGE_SCHEMA_VERSION,
        config_checksum,
    )
    from qaeval_core.judge.features import (
        FeatureSpec,
    )
    from qaeval_core.judge.judge import (
        COLUMN_PREFIX,
        Judge,
    )
    from qaeval_core.judge.knowledge import (
        JudgeKnowledge,
    )
    from qaeval_core.judge.triage import (
        OUTCOMES,
        ProbabilityCalibrator,
        TriageBand,
    )

_LAZY = {
    "items_frame": ("qaeval_core.io.item_frames", "items_frame"),
    "frame_to_items": ("qaeval_core.io.item_frames", "items_from_frame"),
    "CalibratedClassifier": ("qaeval_core.judge.combiners", "CalibratedClassifier"),
    "FusionClassifier": ("qaeval_core.judge.combiners", "FusionClassifier"),
    "PandaFitClassifier": ("qaeval_core.judge.combiners", "PandaFitClassifier"),
    "StackerClassifier": ("qaeval_core.judge.combiners", "StackerClassifier"),
    "ThresholdClassifier": ("qaeval_core.judge.combiners", "ThresholdClassifier"),
    "model_from_dict": ("qaeval_core.judge.combiners", "model_from_dict"),
    "model_types": ("qaeval_core.judge.combiners", "model_types"),
    "JUDGE_KIND": ("qaeval_core.judge.config_file", "JUDGE_KIND"),
    "JUDGE_SCHEMA_VERSION": ("qaeval_core.judge.config_file", "JUDGE_SCHEMA_VERSION"),
    "config_checksum": ("qaeval_core.judge.config_file", "config_checksum"),
    "FeatureSpec": ("qaeval_core.judge.features", "FeatureSpec"),
    "COLUMN_PREFIX": ("qaeval_core.judge.judge", "COLUMN_PREFIX"),
    "Judge": ("qaeval_core.judge.judge", "Judge"),
    "JudgeKnowledge": ("qaeval_core.judge.knowledge", "JudgeKnowledge"),
    "OUTCOMES": ("qaeval_core.judge.triage", "OUTCOMES"),
    "ProbabilityCalibrator": ("qaeval_core.judge.triage", "ProbabilityCalibrator"),
    "TriageBand": ("qaeval_core.judge.triage", "TriageBand"),
}

__all__ = [
    "COLUMN_PREFIX",
    "JUDGE_KIND",
    "JUDGE_SCHEMA_VERSION",
    "OUTCOMES",
    "CalibratedClassifier",
    "FeatureSpec",
    "FusionClassifier",
    "Judge",
    "JudgeKnowledge",
    "PandaFitClassifier",
    "ProbabilityCalibrator",
    "StackerClassifier",
    "ThresholdClassifier",
    "TriageBand",
    "config_checksum",
    "frame_to_items",
    "items_frame",
    "model_from_dict",
    "model_types",
]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'qaeval_core.judge' has no attribute {name!r}")
    module, attribute = target
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
