"""Calibration: fit automatic judges to human labels and measure them honestly.

* :class:`ThresholdClassifier` - a cut on one metric's score (accuracy / balanced accuracy / F1).
* :class:`FusionClassifier` - the fusion paper's precision filters + odd voting subset.
* :class:`StackerClassifier` - logistic regression on all metric scores.
* :mod:`~qaeval_core.calibrate.select` - SMILE's ``w`` and A-VERT's model by cross-validation.
* :mod:`~qaeval_core.calibrate.protocol` - grouped folds, held-out splits, learning curves,
  bootstrap CIs; nothing is ever scored by a model fitted on it.
* :func:`fit_judge` - compare the combiners by CV and export the winner as a
  :class:`~qaeval_core.judge.Judge`.

Every fitted model serialises to plain JSON (``to_dict`` / :func:`model_from_dict`), never pickle.
"""

from qaeval_core.calibrate._base import model_from_dict, model_types, rho
from qaeval_core.calibrate.fit import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    CalibrationReport,
    fit_judge,
    score_items,
)
from qaeval_core.calibrate.fusion import FusionClassifier
from qaeval_core.calibrate.protocol import (
    assign_folds,
    bootstrap_ci,
    cross_val_predict_proba,
    cross_validate,
    held_out_split,
    learning_curve,
    paired_bootstrap,
    quality,
)
from qaeval_core.calibrate.select import (
    Selection,
    cv_select,
    select_avert_model,
    select_smile_weight,
)
from qaeval_core.calibrate.stacker import StackerClassifier
from qaeval_core.calibrate.thresholds import ThresholdClassifier

__all__ = [
    "CANDIDATES",
    "DEFAULT_CANDIDATES",
    "CalibrationReport",
    "FusionClassifier",
    "Selection",
    "StackerClassifier",
    "ThresholdClassifier",
    "assign_folds",
    "bootstrap_ci",
    "cross_val_predict_proba",
    "cross_validate",
    "cv_select",
    "fit_judge",
    "held_out_split",
    "learning_curve",
    "model_from_dict",
    "model_types",
    "paired_bootstrap",
    "quality",
    "rho",
    "score_items",
    "select_avert_model",
    "select_smile_weight",
]
