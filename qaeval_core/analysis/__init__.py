"""The analysis of stored data: load one dataset's frames, run agreement / comparison, adjudicate.

:mod:`.agreement`, :mod:`.compare` and :mod:`.report` are pure
functions on frames; this package is the one place that reads those frames out of the store, so
the app pages and ``qaeval report`` analyse exactly the same data the same way. Everything is
importable from here:

- :mod:`~qaeval_core.analysis.frames`: reading the store into :class:`Frames` (the columns of
  each frame are described there) and one item's :class:`ItemDetail`;
- :mod:`~qaeval_core.analysis.analyses`: agreement tables, metric statistics and views, the
  leaderboard and the dataset report, all computed from loaded frames;
- :mod:`~qaeval_core.analysis.adjudication`: the disagreement queue and final labels (the only
  write here);
- :mod:`~qaeval_core.analysis.formatting`: label, rule and metric details as text.
"""

from __future__ import annotations

from qaeval_core.analysis.adjudication import (
    ADJUDICATOR_ROLES,
    AdjudicationRecord,
    adjudicate,
    adjudication_history,
    disagreement_queue,
)
from qaeval_core.analysis.analyses import (
    AgreementTables,
    Leaderboard,
    MetricView,
    agreement_tables,
    dataset_report,
    human_verdicts,
    leaderboard,
    metric_statistics,
    metric_view,
)
from qaeval_core.analysis.formatting import format_details, label_text, rule_text
from qaeval_core.analysis.frames import (
    Frames,
    ItemDetail,
    data_version,
    item_detail,
    load_frames,
    load_scores,
    score_configs,
)

__all__ = [
    "ADJUDICATOR_ROLES",
    "Frames",
    "AgreementTables",
    "MetricView",
    "Leaderboard",
    "AdjudicationRecord",
    "ItemDetail",
    "data_version",
    "score_configs",
    "load_frames",
    "load_scores",
    "human_verdicts",
    "agreement_tables",
    "metric_statistics",
    "metric_view",
    "leaderboard",
    "dataset_report",
    "adjudicate",
    "adjudication_history",
    "disagreement_queue",
    "item_detail",
    "format_details",
    "label_text",
    "rule_text",
]
