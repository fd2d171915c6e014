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

from importlib import import_module
from typing import Any

#: The public names by the module that defines them. Importing :mod:`qaeval_core.store` loads
#: none of them (nor pandas or SQLAlchemy): a name's module is imported when the name is first
#: used, so ``qaeval --help`` and ``from qaeval_core.store import session`` stay light.
_MODULES: dict[str, tuple[str, ...]] = {
    "adjudications": (
        "ADJUDICATION_COLUMNS",
        "AdjudicationRecord",
        "add_adjudication",
        "adjudication_rows",
    ),
    "calibrations": ("CalibrationInfo", "get_calibration", "list_calibrations", "save_calibration"),
    "datasets": ("DatasetInfo", "create_dataset", "delete_dataset", "get_dataset", "list_datasets"),
    "exports": ("STORE_EXPORTS", "export_store_records"),
    "flags": (
        "FLAG_COLUMNS",
        "FlagRecord",
        "flag_item",
        "list_flags",
        "open_flags_for",
        "resolve_flag",
    ),
    "frames": (
        "FRAME_ITEM_COLUMNS",
        "FRAME_LABEL_COLUMNS",
        "FRAME_SCORE_COLUMNS",
        "SCORE_CONFIG_COLUMNS",
        "data_fingerprint",
        "frame_items",
        "frame_labels",
        "frame_scores",
        "item_row",
        "item_scores",
        "score_config_rows",
    ),
    "guidelines": (
        "Guidelines",
        "default_guidelines",
        "get_guidelines",
        "guideline_history",
        "save_guidelines",
    ),
    "items.import_pending": ("ImportCleanup", "cleanup_imports"),
    "items.import_staging": ("IMPORT_SOURCE",),
    "items.imports": ("ImportReport", "import_file", "import_items", "import_scan"),
    "items.records": ("ITEM_COLUMNS", "list_items", "load_item", "load_items"),
    "labels": (
        "LABEL_COLUMNS",
        "LabelledEntry",
        "LabelRecord",
        "current_label",
        "current_labels",
        "label_history",
        "label_history_frame",
        "labelled_items",
        "save_label",
    ),
    "queues.assignment": ("AllItems", "ReassignResult", "deal", "queue_users", "reassign"),
    "queues.batch": ("ItemBatch",),
    "queues.by_chance": ("SELECTION_BY_CHANCE", "TriageByChance"),
    "queues.dealing": ("DealOptions", "DealResult", "Holder", "check_queue_users"),
    "queues.deals": (
        "DEAL_COLUMNS",
        "DEAL_ITEM_COLUMNS",
        "LABEL_ORIGIN_COLUMNS",
        "LEGACY_DEAL_KIND",
        "deal_item_rows",
        "label_origins",
        "list_deals",
    ),
    "queues.labelling_progress": (
        "AnnotatorProgress",
        "DatasetProgress",
        "dataset_progress",
        "user_progress",
    ),
    "queues.ordering": ("QueueSlot", "set_assignment_positions", "unlabelled_assignments"),
    "queues.release": ("ReleaseResult", "release_queue"),
    "queues.sampled": ("AuditSample", "TriageItems"),
    "queues.serving": (
        "QueueItem",
        "datasets_for_user",
        "following_item",
        "get_item",
        "next_item",
        "previous_item",
    ),
    "queues.skips": (
        "QUEUE_FILTERS",
        "QueueEntry",
        "QueueFilter",
        "queue_entries",
        "revisit_skipped",
        "skip_item",
        "skipped_count",
    ),
    "scope": ("Store", "store_scope"),
    "stored_scores": ("SCORE_COLUMNS", "add_scores", "scores"),
    "users": (
        "IDLE_ENV",
        "LoginEnded",
        "LoginThrottled",
        "UserInfo",
        "add_user",
        "authenticate",
        "close_session",
        "get_user",
        "idle_minutes",
        "list_users",
        "open_session",
        "resume_session",
        "set_active",
        "set_password",
        "set_role",
        "user_info",
    ),
}
_HOMES = {name: module for module, names in _MODULES.items() for name in names}
__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
