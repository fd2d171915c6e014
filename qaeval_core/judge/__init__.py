"""A calibrated judge: which metrics to run, the fitted combiner, one checksummed JSON file.

This package is all that applying a saved judge needs (``Judge.from_config(path)`` then
``judge``, or ``predict`` / ``predict_proba``): the :class:`Judge` (:mod:`.judge`) and its file
format (:mod:`.config_file`), the metric it reads per input (:class:`FeatureSpec`,
:mod:`.features`), the fitted combiners (:mod:`.combiners`), its calibrated probability and
triage band (:mod:`.triage`) and the snapshot of answers people taught it
(:class:`JudgeKnowledge`, :mod:`.knowledge`). It never imports :mod:`qaeval_core.calibrate`, the
training side that builds judges, nor the store.
"""

from qaeval_core.io.item_frames import items_frame
from qaeval_core.io.item_frames import items_from_frame as frame_to_items
from qaeval_core.judge.combiners import (
    CalibratedClassifier,
    FusionClassifier,
    PandaFitClassifier,
    StackerClassifier,
    ThresholdClassifier,
    model_from_dict,
    model_types,
)
from qaeval_core.judge.config_file import JUDGE_KIND, JUDGE_SCHEMA_VERSION, config_checksum
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.judge.judge import COLUMN_PREFIX, Judge
from qaeval_core.judge.knowledge import JudgeKnowledge
from qaeval_core.judge.triage import OUTCOMES, ProbabilityCalibrator, TriageBand

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
