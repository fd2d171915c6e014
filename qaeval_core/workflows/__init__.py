"""Store + scoring + calibration: the only code that joins them (the CLI and the app call it).

* :mod:`.stored_scoring` - :func:`score_dataset` (metrics on a stored dataset, saved, stored
  scores reused) and :func:`judge_dataset` (a calibrated judge on a stored dataset);
* :mod:`.calibration` - :func:`calibrate_dataset` (fit a judge on a dataset's human labels)
  and :func:`labelled_data` (what a calibration used, for the page's summaries);
* :mod:`.queue_order` - :func:`reorder_queue` (annotators' queues by metric disagreement).

Metrics always run through :func:`qaeval_core.scoring.run_jobs` (one loop, one NaN policy).
"""

from qaeval_core.workflows.calibration import DatasetCalibration, calibrate_dataset, labelled_data
from qaeval_core.workflows.queue_order import ReorderResult, reorder_queue
from qaeval_core.workflows.stored_scoring import judge_dataset, score_dataset

__all__ = [
    "DatasetCalibration",
    "ReorderResult",
    "calibrate_dataset",
    "judge_dataset",
    "labelled_data",
    "reorder_queue",
    "score_dataset",
]
