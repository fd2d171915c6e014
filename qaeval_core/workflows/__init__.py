"""Store + scoring + calibration: the only code that joins them (the CLI and the app call it).

* :mod:`.stored_scoring` - :func:`score_dataset` (metrics on a stored dataset, saved, stored
  scores reused) and :func:`judge_dataset` (a calibrated judge on a stored dataset);
* :mod:`.calibration` - :func:`calibrate_dataset` (fit a judge on a dataset's human labels)
  and :func:`labelled_data` (what a calibration used, for the page's summaries);
* :mod:`.queue_order` - :func:`reorder_queue` (annotators' queues by metric disagreement);
* :mod:`.triage` - :func:`route_uncertain` (deal the items a saved judge is unsure of),
  :func:`final_labels` (one label per item: adjudication > annotators > judge, and whether it
  belongs to the random audit sample), :func:`estimation_frame` (the input of
  :func:`qaeval_core.analysis.estimates.estimate_accuracy`) and :func:`export_records`
  (the store's exports plus ``final``).
* :mod:`.answer_knowledge` - the answers people taught the judge on a stored dataset:
  suggestions with their decisions, :func:`~.answer_knowledge.decide`, rescoring with the
  accepted ones and the leave-one-out similarity inputs (imported from the module).
* :mod:`.harness` - :func:`~.harness.harness_results`, ``qaeval report``'s numbers on imported
  harness logs (imported from the module).

Metrics always run through :func:`qaeval_core.scoring.run_jobs` (one loop, one NaN policy).
"""

from qaeval_core.workflows.calibration import DatasetCalibration, calibrate_dataset, labelled_data
from qaeval_core.workflows.queue_order import ReorderResult, reorder_queue
from qaeval_core.workflows.stored_scoring import judge_dataset, score_dataset
from qaeval_core.workflows.triage import (
    EXPORTS,
    TriageResult,
    estimation_frame,
    export_records,
    final_labels,
    route_uncertain,
)

__all__ = [
    "EXPORTS",
    "DatasetCalibration",
    "ReorderResult",
    "TriageResult",
    "calibrate_dataset",
    "estimation_frame",
    "export_records",
    "final_labels",
    "judge_dataset",
    "labelled_data",
    "reorder_queue",
    "route_uncertain",
    "score_dataset",
]
