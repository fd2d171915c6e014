"""The fitted combiners a judge applies: metric scores (or text) in, P(correct) out.

* :class:`ThresholdClassifier` - a calibrated cut on one metric's score.
* :class:`FusionClassifier` - the fusion paper's precision filters + odd voting subset.
* :class:`StackerClassifier` - logistic regression on all metric scores.
* :class:`PandaFitClassifier` - PANDA refitted on the labels (reads the items' text).

They are scikit-learn estimators (``fit`` / ``predict`` / ``predict_proba`` / ``score``), so
the training side (:mod:`qaeval_core.calibrate`) fits and compares them, while a saved judge
only needs this package: each serialises to plain JSON (``to_dict`` / :func:`model_from_dict`),
never pickle. Importing the package registers every type :func:`model_from_dict` can rebuild.
"""

from qaeval_core.judge.combiners.base import (
    CalibratedClassifier,
    as_binary,
    model_from_dict,
    model_types,
    rho,
)
from qaeval_core.judge.combiners.folds import assign_folds
from qaeval_core.judge.combiners.fusion import FusionClassifier
from qaeval_core.judge.combiners.panda_refit import TEXT_COLUMNS, PandaFitClassifier
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.combiners.threshold import ThresholdClassifier

__all__ = [
    "TEXT_COLUMNS",
    "CalibratedClassifier",
    "FusionClassifier",
    "PandaFitClassifier",
    "StackerClassifier",
    "ThresholdClassifier",
    "as_binary",
    "assign_folds",
    "model_from_dict",
    "model_types",
    "rho",
]
