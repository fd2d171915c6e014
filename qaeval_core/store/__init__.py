"""The store: every SQL statement of qaeval lives in this package, one module per entity.

Everything public is importable from here (``from qaeval_core import store;
store.list_datasets(db)``); the modules, by what they store:

- :mod:`.datasets`: create, list, delete; :func:`~.datasets.find_dataset`, the one resolver of
  a dataset by name or id (one "known datasets: ..." message everywhere);
- :mod:`.items`: the items (:mod:`.items.records`) and importing files into a dataset
  (:mod:`.items.imports` and its chunked paths);
- :mod:`.labels`: saving a label, one's own labels, the label tables; :mod:`.adjudications`:
  researchers' final labels;
- :mod:`.queues`: putting items in annotators' queues and serving them: one
  :func:`~.queues.assignment.deal` taking a selection (:class:`AllItems`, :class:`ItemBatch`,
  :class:`AuditSample`, :class:`TriageItems`, :class:`TriageByChance`) and
  :class:`DealOptions`; the recorded deals, release, serving, skips, ordering, progress;
- :mod:`.flags`: annotators flag items, researchers resolve them;
- :mod:`.users`: accounts, passwords, the login throttle and login sessions;
  :func:`~.users.find_user`, the one resolver of a user by name or id;
- :mod:`.calibrations`, :mod:`.answer_knowledge`, :mod:`.guidelines`, :mod:`.stored_scores`:
  saved judges, taught answers, per-dataset guidelines, metric scores;
- :mod:`.frames` and :mod:`.exports`: the reads behind :mod:`qaeval_core.analysis` and the
  table exports.

Beneath them: :mod:`.session` (URL resolution, engines, transactions, Alembic upgrades),
:mod:`.scope` (the ``db`` every function takes and :func:`store_scope`, the one context
manager), :mod:`.orm` (the schema, changed only through ``migrations/``), :mod:`.auth`
(password hashing; never touches the store), :mod:`.own_transaction` and :mod:`.nul_guard`.

Nothing outside this package imports SQLAlchemy (the Alembic environment in ``migrations/``
aside): the rest of qaeval gets DataFrames and frozen dataclasses, never ORM objects.

Passing the store
-----------------
Every store function takes the store **first, as** ``db``, positional: a store URL, or ``None``
for the default store (``QAEVAL_DATABASE_URL`` or the SQLite file under ``.qaeval/``).

- Most also accept an open SQLAlchemy ``Session`` and then join the caller's transaction, so
  several calls read one snapshot or commit together; with a URL or ``None`` each runs in its
  own transaction. The type is :data:`Store`; :func:`store_scope` opens such a session for
  callers that do not import SQLAlchemy.
- Functions marked ``@own_transaction`` (:mod:`.own_transaction`) always run their own short
  transaction (a label is committed when ``save_label`` returns, which joining a caller's
  transaction would break; a deal, an import, a login session): their ``db`` is a
  :data:`~.own_transaction.StoreURL` (a URL or ``None``) and a Session is refused with a message
  naming the function.

New store functions follow this convention and go in the module of the entity they store.
:mod:`.session` is the layer below: it turns a ``url`` into an engine or a transaction, so its
functions name it ``url``.
"""

from __future__ import annotations

from qaeval_core.store.adjudications import (
    ADJUDICATION_COLUMNS,
    AdjudicationRecord,
    add_adjudication,
    adjudication_rows,
)
from qaeval_core.store.calibrations import (
    CalibrationInfo,
    get_calibration,
    list_calibrations,
    save_calibration,
)
from qaeval_core.store.datasets import (
    DatasetInfo,
    create_dataset,
    delete_dataset,
    get_dataset,
    list_datasets,
)
from qaeval_core.store.exports import STORE_EXPORTS, export_store_records
from qaeval_core.store.flags import (
    FLAG_COLUMNS,
    FlagRecord,
    flag_item,
    list_flags,
    open_flags_for,
    resolve_flag,
)
from qaeval_core.store.frames import (
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
from qaeval_core.store.guidelines import (
    Guidelines,
    default_guidelines,
    get_guidelines,
    guideline_history,
    save_guidelines,
)
from qaeval_core.store.items.import_pending import ImportCleanup, cleanup_imports
from qaeval_core.store.items.import_staging import IMPORT_SOURCE
from qaeval_core.store.items.imports import ImportReport, import_file, import_items, import_scan
from qaeval_core.store.items.records import ITEM_COLUMNS, list_items, load_item, load_items
from qaeval_core.store.labels import (
    LABEL_COLUMNS,
    LabelledEntry,
    LabelRecord,
    current_label,
    current_labels,
    label_history,
    label_history_frame,
    labelled_items,
    save_label,
)
from qaeval_core.store.queues.assignment import (
    AllItems,
    ReassignResult,
    deal,
    queue_users,
    reassign,
)
from qaeval_core.store.queues.batch import ItemBatch
from qaeval_core.store.queues.by_chance import SELECTION_BY_CHANCE, TriageByChance
from qaeval_core.store.queues.dealing import DealOptions, DealResult, Holder, check_queue_users
from qaeval_core.store.queues.deals import (
    DEAL_COLUMNS,
    DEAL_ITEM_COLUMNS,
    LABEL_ORIGIN_COLUMNS,
    LEGACY_DEAL_KIND,
    deal_item_rows,
    label_origins,
    list_deals,
)
from qaeval_core.store.queues.labelling_progress import (
    AnnotatorProgress,
    DatasetProgress,
    dataset_progress,
    user_progress,
)
from qaeval_core.store.queues.ordering import (
    QueueSlot,
    set_assignment_positions,
    unlabelled_assignments,
)
from qaeval_core.store.queues.release import ReleaseResult, release_queue
from qaeval_core.store.queues.sampled import AuditSample, TriageItems
from qaeval_core.store.queues.serving import (
    QueueItem,
    datasets_for_user,
    following_item,
    get_item,
    next_item,
    previous_item,
)
from qaeval_core.store.queues.skips import (
    QUEUE_FILTERS,
    QueueEntry,
    QueueFilter,
    queue_entries,
    revisit_skipped,
    skip_item,
    skipped_count,
)
from qaeval_core.store.scope import Store, store_scope
from qaeval_core.store.stored_scores import SCORE_COLUMNS, add_scores, scores
from qaeval_core.store.users import (
    IDLE_ENV,
    LoginEnded,
    LoginThrottled,
    UserInfo,
    add_user,
    authenticate,
    close_session,
    get_user,
    idle_minutes,
    list_users,
    open_session,
    resume_session,
    set_active,
    set_password,
    set_role,
    user_info,
)

__all__ = [
    "Store",
    "store_scope",
    "DatasetInfo",
    "create_dataset",
    "get_dataset",
    "list_datasets",
    "delete_dataset",
    "list_items",
    "load_item",
    "load_items",
    "ITEM_COLUMNS",
    "ImportReport",
    "import_items",
    "import_file",
    "import_scan",
    "ImportCleanup",
    "cleanup_imports",
    "IMPORT_SOURCE",
    "current_labels",
    "label_history_frame",
    "LABEL_COLUMNS",
    "LabelRecord",
    "LabelledEntry",
    "save_label",
    "label_history",
    "current_label",
    "labelled_items",
    "AdjudicationRecord",
    "add_adjudication",
    "adjudication_rows",
    "ADJUDICATION_COLUMNS",
    "DealResult",
    "DealOptions",
    "check_queue_users",
    "Holder",
    "ReassignResult",
    "deal",
    "AllItems",
    "reassign",
    "queue_users",
    "ItemBatch",
    "AuditSample",
    "TriageItems",
    "TriageByChance",
    "SELECTION_BY_CHANCE",
    "list_deals",
    "deal_item_rows",
    "label_origins",
    "LEGACY_DEAL_KIND",
    "DEAL_COLUMNS",
    "DEAL_ITEM_COLUMNS",
    "LABEL_ORIGIN_COLUMNS",
    "release_queue",
    "ReleaseResult",
    "QueueItem",
    "next_item",
    "previous_item",
    "following_item",
    "get_item",
    "datasets_for_user",
    "skip_item",
    "revisit_skipped",
    "skipped_count",
    "queue_entries",
    "QueueEntry",
    "QueueFilter",
    "QUEUE_FILTERS",
    "QueueSlot",
    "unlabelled_assignments",
    "set_assignment_positions",
    "AnnotatorProgress",
    "DatasetProgress",
    "user_progress",
    "dataset_progress",
    "list_flags",
    "resolve_flag",
    "FLAG_COLUMNS",
    "flag_item",
    "open_flags_for",
    "FlagRecord",
    "UserInfo",
    "user_info",
    "add_user",
    "get_user",
    "list_users",
    "set_password",
    "authenticate",
    "open_session",
    "resume_session",
    "close_session",
    "LoginEnded",
    "IDLE_ENV",
    "idle_minutes",
    "LoginThrottled",
    "set_active",
    "set_role",
    "CalibrationInfo",
    "save_calibration",
    "get_calibration",
    "list_calibrations",
    "Guidelines",
    "default_guidelines",
    "get_guidelines",
    "guideline_history",
    "save_guidelines",
    "scores",
    "add_scores",
    "SCORE_COLUMNS",
    "data_fingerprint",
    "score_config_rows",
    "frame_items",
    "frame_labels",
    "frame_scores",
    "item_row",
    "item_scores",
    "FRAME_ITEM_COLUMNS",
    "FRAME_LABEL_COLUMNS",
    "FRAME_SCORE_COLUMNS",
    "SCORE_CONFIG_COLUMNS",
    "STORE_EXPORTS",
    "export_store_records",
]
