"""Calibration, the training side: fit judges to human labels and measure them honestly.

* :mod:`~qaeval_core.calibrate.options` - the calibration's options as small checked objects:
  :class:`CrossValidation`, :class:`TriagePolicy`, :class:`CostPolicy`, :class:`InputRule`,
  :class:`LLMTierPolicy`.
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

The names below are imported on first use (module ``__getattr__``, as the top-level package
does), so ``qaeval calibrate --help`` reads its defaults from :mod:`.options` without loading
scikit-learn or pandas.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from qaeval_core.calibrate.fit import (
        CANDIDATES,
        CalibrationReport,
        feature_scores,
        fit_judge,
    )
    from qaeval_core.calibrate.options import (
        DEFAULT_CANDIDATES,
        CostPolicy,
        CrossValidation,
        InputRule,
        LLMTierPolicy,
        TriagePolicy,
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
        select_inputs,
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

_LAZY = {
    "CANDIDATES": "qaeval_core.calibrate.fit",
    "CalibrationReport": "qaeval_core.calibrate.fit",
    "feature_scores": "qaeval_core.calibrate.fit",
    "fit_judge": "qaeval_core.calibrate.fit",
    "DEFAULT_CANDIDATES": "qaeval_core.calibrate.options",
    "CostPolicy": "qaeval_core.calibrate.options",
    "CrossValidation": "qaeval_core.calibrate.options",
    "InputRule": "qaeval_core.calibrate.options",
    "LLMTierPolicy": "qaeval_core.calibrate.options",
    "TriagePolicy": "qaeval_core.calibrate.options",
    "assign_folds": "qaeval_core.calibrate.protocol",
    "bootstrap_ci": "qaeval_core.calibrate.protocol",
    "cross_val_predict_proba": "qaeval_core.calibrate.protocol",
    "cross_validate": "qaeval_core.calibrate.protocol",
    "held_out_split": "qaeval_core.calibrate.protocol",
    "learning_curve": "qaeval_core.calibrate.protocol",
    "paired_bootstrap": "qaeval_core.calibrate.protocol",
    "quality": "qaeval_core.calibrate.protocol",
    "Selection": "qaeval_core.calibrate.select",
    "cv_select": "qaeval_core.calibrate.select",
    "select_avert_model": "qaeval_core.calibrate.select",
    "select_inputs": "qaeval_core.calibrate.select",
    "select_smile_weight": "qaeval_core.calibrate.select",
    "FusionClassifier": "qaeval_core.judge.combiners",
    "StackerClassifier": "qaeval_core.judge.combiners",
    "ThresholdClassifier": "qaeval_core.judge.combiners",
    "model_from_dict": "qaeval_core.judge.combiners",
    "model_types": "qaeval_core.judge.combiners",
    "rho": "qaeval_core.judge.combiners",
}

__all__ = [
    "CANDIDATES",
    "CalibrationReport",
    "CostPolicy",
    "CrossValidation",
    "DEFAULT_CANDIDATES",
    "FusionClassifier",
    "InputRule",
    "LLMTierPolicy",
    "Selection",
    "StackerClassifier",
    "ThresholdClassifier",
    "TriagePolicy",
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
    "select_inputs",
    "select_smile_weight",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'qaeval_core.calibrate' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
