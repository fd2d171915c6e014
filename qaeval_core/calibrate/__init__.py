"""Calibration, the training side: fit judges to human labels and measure them honestly.

* :mod:`~qaeval_core.calibrate.protocol` - grouped folds, held-out splits, learning curves,
  bootstrap CIs; nothing is ever scored by a model fitted on it.
* :mod:`~qaeval_core.calibrate.fit` - :func:`fit_judge` compares the combiners of
  :mod:`qaeval_core.judge.combiners` by CV and exports the winner as a
  :class:`~qaeval_core.judge.Judge`.
* :mod:`~qaeval_core.calibrate.select` - SMILE's ``w``, A-VERT's model and the judge's input
  set (cheapest within a tolerance of the best) by cross-validation.
* :mod:`~qaeval_core.calibrate.cost` - each input's measured cost per 1,000 rows.
* :mod:`~qaeval_core.calibrate.inputs` - the default input metrics and question grouping.
* :mod:`~qaeval_core.calibrate.summary` - the quality tables and learning curves the page shows.
* :mod:`~qaeval_core.calibrate.active` - which unlabelled items to label next.

It never touches the store: :mod:`qaeval_core.workflows` joins the store, scoring and this
package. The combiner classes are re-exported here for code written against the old layout.
"""

from qaeval_core.calibrate.fit import (
    CANDIDATES,
    DEFAULT_CANDIDATES,
    CalibrationReport,
    feature_scores,
    fit_judge,
)
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
from qaeval_core.judge.combiners import (
    FusionClassifier,
    StackerClassifier,
    ThresholdClassifier,
    model_from_dict,
    model_types,
    rho,
)

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
    "feature_scores",
    "fit_judge",
    "held_out_split",
    "learning_curve",
    "model_from_dict",
    "model_types",
    "paired_bootstrap",
    "quality",
    "rho",
    "select_avert_model",
    "select_smile_weight",
]
