"""Dealing the items a judge doubts **at random, with known probabilities** (issue 24, item 1).

:class:`~.sampled.TriageItems` deals the most doubtful items: their labels are not a random
sample, so estimates must leave them out. :class:`TriageByChance` draws instead: every
item not yet labelled is drawn independently (Poisson sampling, a seeded hash per item) with
the probability the caller gives (:func:`qaeval_core.analysis.selection_design.
inclusion_probabilities`: growing with the judge's doubt, never below a floor), and each
probability is recorded (``deal_items.inclusion_probability``, migration 0008), so every label
the deal brings counts in the estimates, weighted by ``1 / probability``
(:mod:`qaeval_core.analysis.ipw_estimates`).

What the deal records, decided under the dataset's lock:

* items drawn: with their probability; those already in someone's queue are drawn but get no
  new assignment (``skipped_queued``), as an audit keeps queued items in its sample;
* items that already have a human label: with probability 1, as known for sure. Given
  everything labelled before the deal, the draw is a Poisson sample of the rest, so these
  labels count with weight 1 and the drawn ones with ``1 / p`` (conditionally unbiased given
  the history, hence unbiased). Their ids are not dealt (``skipped_labelled``);
* ``params["drawn_for_sure"]``: drawn items whose probability was 1, so a reader tells them from
  the items known for sure (both are recorded with 1).

The dealt items are served in a seeded random order, so the part labelled so far is itself a
random part of the draw (:func:`qaeval_core.workflows.sample_probabilities` scales the
probabilities by the share labelled).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.store.datasets import DatasetRef
from qaeval_core.store.orm import ItemRecord
from qaeval_core.store.own_transaction import StoreURL
from qaeval_core.store.queues.dealing import (
    DealOptions,
    DealResult,
    check_fraction,
    finish_deal,
    holders_by_item,
    open_deal,
    record_deal,
)
from qaeval_core.store.queues.sampled import (
    deal_in_order,
    items_with_human_label,
    record_deal_items,
)
from qaeval_core.store.session import write_scope

__all__ = ["SELECTION_BY_CHANCE", "TriageByChance", "uniform_of"]

#: ``params["selection"]`` of a triage deal drawn at random with known probabilities.
SELECTION_BY_CHANCE = "by_chance"


def uniform_of(seed: int, item_id: int) -> float:
    """A seeded uniform number in [0, 1) per item: the item is drawn when it is below its
    probability. A hash, so the draw of an item does not depend on which other items exist."""
    digest = hashlib.sha256(f"by_chance:{seed}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _serving_rank(seed: int, item_id: int) -> bytes:
    return hashlib.sha256(f"by_chance_order:{seed}:{item_id}".encode()).digest()


def _checked(probabilities: Mapping[int, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for key, value in probabilities.items():
        p = float(value)
        if not 0 < p <= 1:
            raise InputError(
                f"Every item needs an inclusion probability in (0, 1] (a floor above 0 keeps "
                f"each item drawable); item {key} has {value!r}."
            )
        out[int(key)] = p
    return out


@dataclass(frozen=True)
class TriageByChance:
    """The dataset's unlabelled items drawn at random, item ``i`` with ``probabilities[i]``,
    the drawn ones dealt as a ``triage`` deal recording every probability (module docstring).

    ``probabilities`` must give every item without a human label a probability in (0, 1];
    an item missing from it is a :class:`ConfigError` (it could never be drawn, so estimates
    could not be valid). ``options.seed`` is required; the same seed and probabilities draw
    the same items, served in a seeded random order. ``params`` is recorded with the deal. The
    result's ``item_ids`` are the dealt items, ``skipped_labelled`` the items held as known,
    ``skipped_queued`` the drawn items already queued. When nothing is drawn no deal is
    recorded (``deal_id`` is None).
    """

    probabilities: Mapping[int, float]
    params: Mapping[str, Any] | None = None

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult:
        seed = options.seed
        options.fixed_order("shuffled", "a deal drawn by chance")
        check_fraction(options.extra_fraction)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(f"seed must be an integer, got {seed!r}.")
        probs = _checked(self.probabilities)
        with write_scope(db) as session:
            ds, users = open_deal(session, dataset, annotators, options, order="shuffled")
            items = list(
                session.scalars(
                    select(ItemRecord.id)
                    .where(ItemRecord.dataset_id == ds.id)
                    .order_by(ItemRecord.id)
                )
            )
            foreign = sorted(set(probs) - set(items))
            if foreign:
                raise ConfigError(
                    f"{len(foreign)} item id(s) are not in dataset {ds.name!r} (e.g. {foreign[0]})."
                )
            labelled = items_with_human_label(session, ds.id)
            open_items = [i for i in items if i not in labelled]
            missing = [i for i in open_items if i not in probs]
            if missing:
                raise ConfigError(
                    f"{len(missing)} unlabelled item(s) of {ds.name!r} have no inclusion "
                    f"probability (e.g. item {missing[0]}); give every unlabelled item one (score "
                    "the dataset again if items were imported since)."
                )
            drawn = [i for i in open_items if uniform_of(seed, i) < probs[i]]
            if not drawn:
                names = {u.name: 0 for u in users}
                return DealResult(ds.name, 0, 0, names, kind="triage")
            existing = holders_by_item(session, ds.id)
            todo = sorted(
                (i for i in drawn if i not in existing), key=lambda i: _serving_rank(seed, i)
            )
            queued = tuple(i for i in drawn if i in existing)
            known = sorted(labelled)
            record = record_deal(
                session,
                ds.id,
                "triage",
                seed=seed,
                params={
                    **dict(self.params or {}),
                    "selection": SELECTION_BY_CHANCE,
                    "annotators": [u.name for u in users],
                    "drawn": len(drawn),
                    "expected": sum(probs[i] for i in open_items),
                    "known_for_sure": len(known),
                    "drawn_for_sure": [i for i in drawn if probs[i] >= 1.0],
                    "skipped_queued": len(queued),
                    "base": options.base,
                    "extra_fraction": options.extra_fraction,
                    "extra_k": options.extra_k,
                },
                created_by=options.created_by,
            )
            record_deal_items(session, record.id, list(known), probability=1.0)
            record_deal_items(session, record.id, list(drawn), probability=probs)
            plan = deal_in_order(
                session,
                ds.id,
                existing,
                todo,
                users,
                options,
                seed,
                record.id,
            )
            return finish_deal(
                session,
                record,
                ds.name,
                users,
                plan.rows,
                plan.short,
                len(drawn),
                covered=plan.covered,
                item_ids=tuple(todo),
                skipped_labelled=tuple(known),
                skipped_queued=queued,
            )
