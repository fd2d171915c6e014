"""Dealing as a new team does it (issue 14, problems 2 and 7), on SQLite and PostgreSQL.

A researcher first queues the whole dataset for themselves ("Queue it for me"), then deals it
to two annotators: the deal must say which items it left alone and who holds them, and the
researcher must be able to release their own queue so the next deal reaches the team. A deal
can also cover part of a dataset: a range, the next N items, a quota per person.
"""

from __future__ import annotations

from collections import Counter

import pytest
from _annotation_store import assignments, make_store
from sqlalchemy import select

from qaeval_core import store
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.store.orm import Deal, User
from qaeval_core.store.queues.assignment import deal
from qaeval_core.store.queues.batch import ItemBatch
from qaeval_core.store.queues.dealing import DealOptions, Holder
from qaeval_core.store.queues.release import release_queue
from qaeval_core.store.session import session_scope, write_scope


def team(url: str, n_items: int = 40) -> list[int]:
    """``n_items`` items, annotators ann1 and ann2, and a researcher ``res``."""
    ids = make_store(url, n_items=n_items, users=("ann1", "ann2"))
    with write_scope(url) as s:
        s.add(User(name="res", role="researcher"))
    return ids


def per_user(url: str) -> Counter[str]:
    return Counter(name for _, name in assignments(url))


def test_deal_after_queue_it_for_me_names_the_holder(db_url: str) -> None:
    ids = team(db_url)
    store.deal(db_url, "ds", ["res"])  # what "Queue it for me" does
    store.save_label(db_url, "res", ids[0], 2)
    result = store.deal(
        db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(extra_fraction=0.25, extra_k=2)
    )
    # The overlap items (10 of 40) get one more person; the other 30 are left alone, and the
    # result says so and who holds them.
    assert result.added == 10
    assert result.already_covered == 30
    # res labelled one item; it counts as labelled only when it is among the 30 left alone.
    labelled = int(ids[0] in covered(db_url))
    assert result.held_by == (Holder("res", "researcher", 30, labelled),)
    notes = " ".join(result.notes())
    assert "30 item(s) already had as many annotators as asked" in notes
    assert "res (researcher) holds 30" in notes
    assert "Release res's queue" in notes


def covered(url: str) -> set[int]:
    """Items only ``res`` holds."""
    holders: dict[int, set[str]] = {}
    for item_id, name in assignments(url):
        holders.setdefault(item_id, set()).add(name)
    return {i for i, names in holders.items() if names == {"res"}}


def test_release_my_queue_then_deal_reaches_the_team(db_url: str) -> None:
    ids = team(db_url)
    store.deal(db_url, "ds", ["res"])
    store.save_label(db_url, "res", ids[3], 1)
    released = release_queue(db_url, "ds", "res", by="res")
    assert (released.released, released.kept) == (39, 1)
    assert "Released 39 unlabelled item(s) from res's queue" in released.summary()
    # The label and its assignment stay: progress still counts it as done.
    assert store.current_label(db_url, "res", ids[3]).value == 1
    assert per_user(db_url) == {"res": 1}
    result = store.deal(db_url, "ds", ["ann1", "ann2"])
    assert result.added == 39
    assert sorted(result.per_annotator.values()) == [19, 20]  # balanced
    assert result.already_covered == 1
    assert result.held_by == (Holder("res", "researcher", 1, 1),)
    assert "Raise 'Annotators per item'" in result.notes()[0]  # nothing left to release


def test_release_is_refused_to_annotators_and_keeps_other_datasets(db_url: str) -> None:
    team(db_url)
    make_store(db_url, n_items=5, users=("ann1",), dataset="other")
    store.deal(db_url, "ds", ["ann1"])
    store.deal(db_url, "other", ["ann1"])
    with pytest.raises(ConfigError, match="cannot release queues"):
        release_queue(db_url, "ds", "ann1", by="ann2")
    assert release_queue(db_url, "ds", "ann1", by="res").released == 40
    assert per_user(db_url) == {"ann1": 5}  # the other dataset's queue is untouched
    assert release_queue(db_url, "ds", "ann1").released == 0


def test_default_assign_form_values_work_for_two_annotators(db_url: str) -> None:
    """The Assign page's defaults (20% overlap, 2 per overlap item) with two annotators."""
    team(db_url)
    result = store.deal(
        db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(extra_fraction=0.2, extra_k=2)
    )
    assert result.added == 48 and result.notes() == []


def test_deal_batch_next_n_items_with_overlap(db_url: str) -> None:
    ids = team(db_url, n_items=100)
    first = deal(
        db_url, "ds", ["ann1", "ann2"], ItemBatch(n=40), DealOptions(extra_fraction=0.25, extra_k=2)
    )
    assert first.items == 40 and first.item_ids == tuple(ids[:40])
    assert first.added == 50  # 30 items once, 10 overlap items twice
    assert first.per_annotator == {"ann1": 25, "ann2": 25}
    second = deal(db_url, "ds", ["ann1", "ann2"], ItemBatch(n=40))
    assert second.item_ids == tuple(ids[40:80])  # the next batch, not the same one again
    # Queued after the first batch: ann1's next item is still from the first batch.
    assert store.next_item(db_url, "ann1", "ds").id in ids[:40]
    with session_scope(db_url) as s:
        params = s.scalars(select(Deal.params).order_by(Deal.id)).all()
    assert params[0]["batch"]["n"] == 40 and params[0]["batch"]["selected"] == 40


def test_deal_batch_range_and_quota(db_url: str) -> None:
    ids = team(db_url, n_items=30)
    result = deal(db_url, "ds", ["ann1", "ann2"], ItemBatch(item_range=(11, 30), quota=5))
    assert result.per_annotator == {"ann1": 5, "ann2": 5}
    assert result.quota_left == 10
    assert {i for i, _ in assignments(db_url)} == set(ids[10:20])
    assert "10 item(s) were left undealt: every annotator reached the quota" in result.notes()[0]
    # A quota never half-deals an overlap item.
    team_ids = deal(
        db_url, "ds", ["ann1", "ann2"], ItemBatch(item_ids=ids[:4], quota=3), DealOptions(base=2)
    ).item_ids
    assert team_ids == tuple(ids[:4])
    holders = Counter(i for i, _ in assignments(db_url) if i in ids[:4])
    assert set(holders.values()) == {2} and len(holders) == 3


def test_deal_batch_validates(db_url: str) -> None:
    ids = team(db_url, n_items=10)
    with pytest.raises(InputError, match="1 <= FIRST <= LAST <= 10"):
        deal(db_url, "ds", ["ann1"], ItemBatch(item_range=(5, 11)))
    with pytest.raises(InputError, match="quota must be a whole number"):
        deal(db_url, "ds", ["ann1"], ItemBatch(quota=0))
    with pytest.raises(InputError, match="not in dataset"):
        deal(db_url, "ds", ["ann1"], ItemBatch(item_ids=[max(ids) + 100]))
    assert assignments(db_url) == []
