"""The annotation workflow: dealing queues, serving the next item, saving labels, progress.

Everything the labelling app does with the store goes through these functions, so the rules
that keep labels safe live in one place and are tested without a browser:

* **Queues are dealt up front.** :func:`deal` writes one ``assignments`` row per (item,
  annotator); the unique constraint makes it impossible to hand an item twice to one person, and
  dealing again only tops queues up (idempotent). Nobody "claims" items at run time, so serving
  the next item is a read, never a write race.
* **The next item is one indexed query.** :func:`next_item` walks the user's queue in order over
  the covering index ``(user_id, position, item_id)`` and stops at the first item without a label
  by that user (migration 0002).
* **Labels are appended, never updated.** :func:`save_label` is a single ``INSERT ... SELECT``
  in a short ``BEGIN IMMEDIATE`` transaction that also checks the item is in the user's queue;
  an edit is a new row and the latest row per (item, user) is the current label. A label whose
  id was returned is committed and can never be lost or overwritten.
* **Blind by construction.** What an annotator is shown (:class:`QueueItem`) has no metric
  scores, no QA-model name, no metadata and no other annotator's labels; the label functions only
  ever read the asking user's own rows.
* **One deal function, recorded.** :func:`deal` takes a selection (which items) and
  :class:`DealOptions` (how they are handed out: overlap, seed, order, author). Every deal is
  a ``deals`` row of kind ``queue`` (:class:`AllItems`, :class:`ItemBatch`), ``audit``
  (:class:`AuditSample`: a seeded uniform random sample, the labels that PPI-style estimates
  need) or ``triage`` (:class:`TriageItems`, or :class:`TriageByChance`: drawn at random with
  known probabilities that grow with the judge's doubt, so their labels still count in
  estimates; items a judge routes to people), with its seed, parameters, author and time; each
  assignment names its deal.

Every public function takes the store first, as ``db``: a store URL, or ``None`` for the default
store. It runs its own short transaction (a label is committed when :func:`save_label` returns),
so it refuses an open Session (:mod:`qaeval_core.store.own_transaction`).

Example
-------
>>> from qaeval_core.store import annotation  # doctest: +SKIP
>>> options = annotation.DealOptions(base=1, extra_fraction=0.2, extra_k=2)
>>> annotation.deal(None, "demo-nq301", ["ann1", "ann2"], options=options)  # doctest: +SKIP
>>> item = annotation.next_item(None, "ann1", "demo-nq301")  # doctest: +SKIP
>>> annotation.save_label(None, "ann1", item.id, 2, rule=4, seconds=7.5)  # doctest: +SKIP

Layout (everything is importable from this package): :mod:`.assignment` deals (:func:`deal`,
every item) and reassigns queues, :mod:`.sampled` selects an audit sample or triaged items,
:mod:`.dealing` is what they share (recording, locking, choosing annotators), :mod:`.serving`
serves items, :mod:`.labels` saves and reads one's own labels, :mod:`.labelling_progress` counts
progress, :mod:`.skips` keeps skips and the annotator's queue filters, :mod:`.flags` lets an
annotator flag an item for review, :mod:`.batch` selects part of a dataset (the next N items, a
range, a quota per person), :mod:`.by_chance` draws triaged items by chance, :mod:`.release`
frees someone's unlabelled items. Results are plain frozen dataclasses: no ORM objects leave the
package, so callers never trigger lazy loads.
"""

from __future__ import annotations

from qaeval_core.store.annotation.assignment import (
    AllItems,
    DealResult,
    ReassignResult,
    deal,
    queue_users,
    reassign,
)
from qaeval_core.store.annotation.batch import ItemBatch
from qaeval_core.store.annotation.by_chance import SELECTION_BY_CHANCE, TriageByChance
from qaeval_core.store.annotation.dealing import DealOptions, Holder, check_queue_users
from qaeval_core.store.annotation.flags import FlagRecord, flag_item, open_flags_for
from qaeval_core.store.annotation.labelling_progress import (
    AnnotatorProgress,
    DatasetProgress,
    dataset_progress,
    user_progress,
)
from qaeval_core.store.annotation.labels import (
    LabelledEntry,
    LabelRecord,
    current_label,
    label_history,
    labelled_items,
    save_label,
)
from qaeval_core.store.annotation.release import ReleaseResult, release_queue
from qaeval_core.store.annotation.sampled import AuditSample, TriageItems
from qaeval_core.store.annotation.serving import (
    QueueItem,
    datasets_for_user,
    following_item,
    get_item,
    next_item,
    previous_item,
)
from qaeval_core.store.annotation.skips import (
    QUEUE_FILTERS,
    QueueEntry,
    QueueFilter,
    queue_entries,
    revisit_skipped,
    skip_item,
    skipped_count,
)

__all__ = [
    "QueueItem",
    "LabelRecord",
    "DealResult",
    "ReassignResult",
    "AnnotatorProgress",
    "DatasetProgress",
    "LabelledEntry",
    # one deal function: which items (a selection), how they are handed out (DealOptions)
    "deal",
    "DealOptions",
    "AllItems",
    "ItemBatch",
    "AuditSample",
    "TriageItems",
    "TriageByChance",
    "SELECTION_BY_CHANCE",
    "check_queue_users",
    # who holds what, releasing a queue
    "Holder",
    "release_queue",
    "ReleaseResult",
    "reassign",
    "next_item",
    "previous_item",
    "following_item",
    "get_item",
    "save_label",
    "label_history",
    "current_label",
    "labelled_items",
    "user_progress",
    "dataset_progress",
    "datasets_for_user",
    "queue_users",
    # skips, flags and the annotator's queue filters
    "skip_item",
    "revisit_skipped",
    "skipped_count",
    "queue_entries",
    "QueueEntry",
    "QueueFilter",
    "QUEUE_FILTERS",
    "flag_item",
    "open_flags_for",
    "FlagRecord",
]
