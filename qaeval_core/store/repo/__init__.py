"""The store API: datasets, imports, users, label readers, scores, calibrations, exports, and
the reads and writes behind analysis, adjudication and queue ordering.

Every function takes ``db`` first: a store URL (``None`` = ``QAEVAL_DATABASE_URL`` or the default
SQLite file) or an open :class:`~sqlalchemy.orm.Session`. With a URL the function runs in its
own transaction; with a Session it joins the caller's, so several calls can commit together
(:func:`store_scope` opens one without importing SQLAlchemy).

Tables come back as pandas DataFrames (what the app, comparisons and exports consume); single
objects as small frozen dataclasses, so callers never hold ORM objects after the session closes.

Everything is importable from here (``from qaeval_core.store import repo; repo.X``); one module
per concern:

- :mod:`._common`: the :data:`Store` type, opening a transaction, error messages, name checks;
- :mod:`.datasets`, :mod:`.imports` (item identity and idempotent re-imports are described
  there), :mod:`.items`, :mod:`.users`, :mod:`.labels` (readers; the app writes labels through
  :mod:`qaeval_core.store.annotation`), :mod:`.stored_scores`, :mod:`.calibrations`,
  :mod:`.exports`;
- :mod:`.frames`: the reads of :mod:`qaeval_core.analysis.frames`;
- :mod:`.adjudications`: researchers' final labels (write and history);
- :mod:`.ordering`: the reads and the write of :func:`qaeval_core.workflows.reorder_queue`;
- :mod:`.flags`: annotators' flags for review, listed and resolved by researchers;
- :mod:`.guidelines`: per-dataset guidelines, rule list, label keys and idle cap, versioned;
- :mod:`.deals`: the recorded deals (queue, audit, triage), the items audit and triage deals
  drew, and through which deal each label's item reached its rater.
"""

from __future__ import annotations

from qaeval_core.store.repo._common import Store, store_scope
from qaeval_core.store.repo.adjudications import (
    ADJUDICATION_COLUMNS,
    AdjudicationRecord,
    add_adjudication,
    adjudication_rows,
)
from qaeval_core.store.repo.calibrations import (
    CalibrationInfo,
    get_calibration,
    list_calibrations,
    save_calibration,
)
from qaeval_core.store.repo.datasets import (
    DatasetInfo,
    create_dataset,
    delete_dataset,
    get_dataset,
    list_datasets,
)
from qaeval_core.store.repo.deals import (
    DEAL_COLUMNS,
    DEAL_ITEM_COLUMNS,
    LABEL_ORIGIN_COLUMNS,
    LEGACY_DEAL_KIND,
    deal_item_rows,
    label_origins,
    list_deals,
)
from qaeval_core.store.repo.exports import STORE_EXPORTS, export_store_records
from qaeval_core.store.repo.flags import FLAG_COLUMNS, list_flags, resolve_flag
from qaeval_core.store.repo.frames import (
    FRAME_ITEM_COLUMNS,
    FRAME_LABEL_COLUMNS,
    FRAME_SCORE_COLUMNS,
    SCORE_CONFIG_COLUMNS,
    data_fingerprint,
    frame_items,
    frame_labels,
    frame_scores,
    item_row,
    item_scores,
    score_config_rows,
)
from qaeval_core.store.repo.guidelines import (
    Guidelines,
    default_guidelines,
    get_guidelines,
    guideline_history,
    save_guidelines,
)
from qaeval_core.store.repo.import_pending import ImportCleanup, cleanup_imports
from qaeval_core.store.repo.imports import (
    IMPORT_SOURCE,
    ImportReport,
    import_file,
    import_items,
    import_scan,
)
from qaeval_core.store.repo.items import ITEM_COLUMNS, list_items, load_item, load_items
from qaeval_core.store.repo.labels import (
    LABEL_COLUMNS,
    current_labels,
    label_history_frame,
)
from qaeval_core.store.repo.ordering import (
    QueueSlot,
    set_assignment_positions,
    unlabelled_assignments,
)
from qaeval_core.store.repo.stored_scores import SCORE_COLUMNS, add_scores, scores
from qaeval_core.store.repo.users import (
    UserInfo,
    add_user,
    authenticate,
    get_user,
    list_users,
    set_password,
    user_info,
)

__all__ = [
    "STORE_EXPORTS",
    "export_store_records",
    "Store",
    "store_scope",
    "DatasetInfo",
    "UserInfo",
    "user_info",
    "CalibrationInfo",
    "ImportReport",
    "ImportCleanup",
    "create_dataset",
    "get_dataset",
    "list_datasets",
    "delete_dataset",
    "import_items",
    "cleanup_imports",
    "import_file",
    "import_scan",
    "list_items",
    "load_item",
    "load_items",
    "add_user",
    "get_user",
    "list_users",
    "set_password",
    "authenticate",
    "current_labels",
    "label_history_frame",
    "scores",
    "add_scores",
    "save_calibration",
    "get_calibration",
    "list_calibrations",
    # the reads behind qaeval_core.analysis.frames
    "data_fingerprint",
    "score_config_rows",
    "frame_items",
    "frame_labels",
    "frame_scores",
    "item_row",
    "item_scores",
    # adjudications
    "AdjudicationRecord",
    "add_adjudication",
    "adjudication_rows",
    # recorded deals (written by qaeval_core.store.annotation)
    "list_deals",
    "deal_item_rows",
    "label_origins",
    "LEGACY_DEAL_KIND",
    # queue ordering (qaeval_core.workflows.reorder_queue)
    "QueueSlot",
    "unlabelled_assignments",
    "set_assignment_positions",
    # flags for review (written by qaeval_core.store.annotation.flag_item)
    "list_flags",
    "resolve_flag",
    "FLAG_COLUMNS",
    # per-dataset guidelines, rule list, label keys and idle cap (versioned)
    "Guidelines",
    "default_guidelines",
    "get_guidelines",
    "guideline_history",
    "save_guidelines",
    # column lists
    "ITEM_COLUMNS",
    "LABEL_COLUMNS",
    "SCORE_COLUMNS",
    "IMPORT_SOURCE",
    "ADJUDICATION_COLUMNS",
    "FRAME_ITEM_COLUMNS",
    "FRAME_LABEL_COLUMNS",
    "FRAME_SCORE_COLUMNS",
    "SCORE_CONFIG_COLUMNS",
    "DEAL_COLUMNS",
    "DEAL_ITEM_COLUMNS",
    "LABEL_ORIGIN_COLUMNS",
]
