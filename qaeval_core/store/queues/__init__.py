"""Queues: putting items in annotators' queues, serving them, and what the queues say.

* **Queues are dealt up front.** :func:`~.assignment.deal` writes one ``assignments`` row per
  (item, annotator); the unique constraint makes it impossible to hand an item twice to one
  person, and dealing again only tops queues up (idempotent). Nobody "claims" items at run
  time, so serving the next item is a read, never a write race.
* **One deal function, recorded.** ``deal(db, dataset, annotators, selection, options)``: the
  selection says which items (:class:`~.assignment.AllItems`, :class:`~.batch.ItemBatch`,
  :class:`~.sampled.AuditSample`, :class:`~.sampled.TriageItems`,
  :class:`~.by_chance.TriageByChance`), :class:`~.dealing.DealOptions` how they are handed
  out. Every deal is a ``deals`` row (``queue``, ``audit`` or ``triage``) with its seed,
  parameters, author and time; each assignment names its deal (:mod:`.deals` reads them).
* **The next item is one indexed query** (:mod:`.serving`): the user's queue in order over the
  covering index ``(user_id, position, item_id)``, stopping at the first item without a label
  by that user (migration 0002).
* **Blind by construction.** What an annotator is shown (:class:`~.serving.QueueItem`) has no
  metric scores, no QA-model name, no metadata and no other annotator's labels.

:mod:`.dealing` is what every deal shares (recording, locking, choosing annotators),
:mod:`.release` frees someone's unlabelled items, :mod:`.skips` keeps skips and the
annotator's queue filters, :mod:`.ordering` re-positions a queue, :mod:`.labelling_progress`
counts progress. Everything public is importable from :mod:`qaeval_core.store`.
"""
