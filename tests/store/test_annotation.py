"""The annotation workflow in the library: dealing, serving, labelling, editing, progress.

The store is built with the ORM directly (not the importer) so these tests pin down the
workflow alone. Every test runs on SQLite and, when ``QAEVAL_TEST_POSTGRES_URL`` is set, on
PostgreSQL too (the ``db_url`` fixture).
"""

from __future__ import annotations

from collections import Counter

import pytest
from _annotation_store import assignments, make_store
from sqlalchemy import func, select

from qaeval_core import store
from qaeval_core.errors import ConfigError, NotFoundError, PermissionDenied
from qaeval_core.schema import LabelValue
from qaeval_core.store.orm import Dataset, Label, User
from qaeval_core.store.orm import ItemRecord as Item
from qaeval_core.store.session import session_scope, write_scope

# ------------------------------------------------------------------ dealing


def test_deal_round_robin_with_overlap(db_url: str) -> None:
    ids = make_store(db_url, n_items=100)
    result = store.deal(
        db_url,
        "ds",
        ["ann1", "ann2", "ann3"],
        options=store.DealOptions(base=1, extra_fraction=0.2, extra_k=3),
    )
    rows = assignments(db_url)
    per_item = Counter(i for i, _ in rows)
    assert set(per_item) == set(ids)
    assert sorted(Counter(per_item.values()).items()) == [(1, 80), (3, 20)]
    assert result.added == len(rows) == 80 + 60
    # Balanced queues: round-robin, least loaded first.
    per_user = Counter(n for _, n in rows)
    assert max(per_user.values()) - min(per_user.values()) <= 1
    assert result.per_annotator == dict(per_user)


def test_deal_is_idempotent_and_tops_up(db_url: str) -> None:
    make_store(db_url, n_items=30)
    args = store.DealOptions(base=1, extra_fraction=0.5, extra_k=2, seed=7)
    first = store.deal(db_url, "ds", ["ann1", "ann2"], options=args)
    before = sorted(assignments(db_url))
    again = store.deal(db_url, "ds", ["ann1", "ann2"], options=args)
    assert again.added == 0
    assert sorted(assignments(db_url)) == before
    assert first.added == 30 + 15
    # New items arrive: dealing again only gives out the new ones.
    with write_scope(db_url) as s:
        ds_id = s.scalar(select(Dataset.id).where(Dataset.name == "ds"))
        s.add(
            Item(
                dataset_id=ds_id,
                external_id="new",
                question="q",
                references=["r"],
                candidate="c",
                content_hash="new",
            )
        )
    third = store.deal(db_url, "ds", ["ann1", "ann2"], options=args)
    assert 1 <= third.added <= 2
    # Never the same item twice to a person (also guarded by the unique constraint).
    rows = assignments(db_url)
    assert len(rows) == len(set(rows))


def test_deal_validates_arguments(db_url: str) -> None:
    make_store(db_url)
    with pytest.raises(ConfigError, match="base must be between 1 and the number"):
        store.deal(db_url, "ds", ["ann1"], options=store.DealOptions(base=2))
    with pytest.raises(ConfigError, match="extra_k"):
        store.deal(
            db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(extra_fraction=0.2, extra_k=3)
        )
    with pytest.raises(ConfigError, match="listed twice"):
        store.deal(db_url, "ds", ["ann1", "ann1"])
    with pytest.raises(NotFoundError, match="No dataset named 'nope' \\(known datasets: ds\\)"):
        store.deal(db_url, "nope", ["ann1"])
    with pytest.raises(NotFoundError, match="No user named 'ghost'"):
        store.deal(db_url, "ds", ["ghost"])
    with write_scope(db_url) as s:
        s.add(User(name="rater", role="external"))
    with pytest.raises(ConfigError, match="role 'external'"):
        store.deal(db_url, "ds", ["rater"])


def test_shuffled_order_is_seeded_and_shared(db_url: str) -> None:
    make_store(db_url, n_items=20)
    store.deal(
        db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(base=2, seed=3, order="shuffled")
    )
    first1 = store.next_item(db_url, "ann1", "ds")
    first2 = store.next_item(db_url, "ann2", "ds")
    assert first1 is not None and first2 is not None
    assert first1.id == first2.id  # same order for everyone: overlap labels arrive early


# ------------------------------------------------------------------ serving and labelling


def test_next_item_walks_the_queue_and_is_blind(db_url: str) -> None:
    ids = make_store(db_url, n_items=4)
    store.deal(db_url, "ds", ["ann1"])
    item = store.next_item(db_url, "ann1", "ds")
    assert item is not None and item.id == ids[0]
    assert item.question == "question 0?" and item.references == ("ref 0",)
    # Blind: nothing about models, scores, metadata or other labels is exposed.
    assert not {"qa_model", "meta", "wrong_answers", "scores", "labels"} & set(vars(item))
    store.save_label(db_url, "ann1", ids[0], LabelValue.CORRECT, rule=4, note=" fine ", seconds=3.5)
    assert store.next_item(db_url, "ann1", "ds").id == ids[1]
    # Skip: the skipped item is passed over this session but stays in the queue.
    assert store.next_item(db_url, "ann1", "ds", skip=[ids[1]]).id == ids[2]
    for i in ids[1:]:
        store.save_label(db_url, "ann1", i, 0)
    assert store.next_item(db_url, "ann1", "ds") is None


def test_save_label_appends_and_edits_keep_history(db_url: str) -> None:
    ids = make_store(db_url, n_items=2)
    store.deal(db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(base=2))
    first = store.save_label(db_url, "ann1", ids[0], 2, rule=1, note="alias", seconds=4.0)
    second = store.save_label(db_url, "ann1", ids[0], 1, rule=5, seconds=2.0)
    assert second.id > first.id
    history = store.label_history(db_url, "ann1", ids[0])
    assert [(h.value, h.rule, h.note) for h in history] == [
        (LabelValue.CORRECT, 1, "alias"),
        (LabelValue.UNCLEAR, 5, None),
    ]
    assert store.current_label(db_url, "ann1", ids[0]).value == LabelValue.UNCLEAR
    # Another annotator's labels are invisible to ann2's functions.
    assert store.label_history(db_url, "ann2", ids[0]) == []
    assert store.current_label(db_url, "ann2", ids[0]) is None
    entries = store.labelled_items(db_url, "ann1", "ds")
    assert [(e.item_id, e.value, e.edits) for e in entries] == [(ids[0], LabelValue.UNCLEAR, 1)]
    with session_scope(db_url) as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 2


def test_save_label_refuses_items_outside_the_queue_and_bad_values(db_url: str) -> None:
    ids = make_store(db_url, n_items=2)
    store.deal(db_url, "ds", ["ann1", "ann2"])  # ann1 gets ids[0], ann2 gets ids[1]
    with pytest.raises(PermissionDenied, match="not \\(or no longer\\) in your queue"):
        store.save_label(db_url, "ann1", ids[1], 2)
    with pytest.raises(PermissionDenied, match="not in your queue"):
        store.get_item(db_url, "ann1", ids[1])
    with pytest.raises(ConfigError, match="Label value must be 0"):
        store.save_label(db_url, "ann1", ids[0], 3)
    with pytest.raises(ConfigError, match="Rule must be one of 1-7"):
        store.save_label(db_url, "ann1", ids[0], 2, rule=8)
    rec = store.save_label(db_url, "ann1", ids[1], 2, require_assignment=False)
    assert rec.item_id == ids[1]
    assert store.save_label(db_url, "ann1", ids[0], 2, seconds=-5).seconds is None


def test_back_and_forward_follow_first_label_order(db_url: str) -> None:
    ids = make_store(db_url, n_items=4)
    store.deal(db_url, "ds", ["ann1"])
    for i in ids[:3]:
        store.save_label(db_url, "ann1", i, 2)
    store.save_label(db_url, "ann1", ids[0], 0)  # an edit does not reorder
    current = store.next_item(db_url, "ann1", "ds")
    assert current.id == ids[3]
    back1 = store.previous_item(db_url, "ann1", "ds", before=current.id)
    back2 = store.previous_item(db_url, "ann1", "ds", before=back1.id)
    back3 = store.previous_item(db_url, "ann1", "ds", before=back2.id)
    assert [back1.id, back2.id, back3.id] == [ids[2], ids[1], ids[0]]
    assert store.previous_item(db_url, "ann1", "ds", before=back3.id) is None
    assert store.following_item(db_url, "ann1", "ds", after=ids[0]).id == ids[1]
    assert store.following_item(db_url, "ann1", "ds", after=ids[2]) is None
    assert store.get_item(db_url, "ann1", ids[1]).id == ids[1]


# ------------------------------------------------------------------ reassign and progress


def test_reassign_moves_only_unlabelled_items_without_duplicates(db_url: str) -> None:
    ids = make_store(db_url, n_items=12)
    store.deal(db_url, "ds", ["ann1", "ann2", "ann3"], options=store.DealOptions(base=2))
    mine = [i for i, n in assignments(db_url) if n == "ann1"]
    store.save_label(db_url, "ann1", mine[0], 2)
    result = store.reassign(db_url, "ds", "ann1", ["ann2", "ann3"])
    rows = assignments(db_url)
    assert len(rows) == len(set(rows))
    assert [i for i, n in rows if n == "ann1"] == [mine[0]]  # labelled item stays
    assert result.moved == len(mine) - 1 and result.kept == 0
    assert sum(result.per_recipient.values()) == result.moved
    # Every item still has two holders (the one already labelled by ann1 included).
    assert set(Counter(i for i, _ in rows).values()) == {2}
    assert set(Counter(i for i, _ in rows)) == set(ids)
    with pytest.raises(PermissionDenied):
        store.save_label(db_url, "ann1", mine[1], 2)


def test_reassign_keeps_items_nobody_can_take(db_url: str) -> None:
    make_store(db_url, n_items=4)
    store.deal(db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(base=2))
    result = store.reassign(db_url, "ds", "ann1", ["ann2"])
    assert (result.moved, result.kept) == (0, 4)
    with pytest.raises(ConfigError, match="other than 'ann1'"):
        store.reassign(db_url, "ds", "ann1", ["ann1"])


def test_progress_per_annotator_and_overall(db_url: str) -> None:
    ids = make_store(db_url, n_items=6)
    store.deal(
        db_url,
        "ds",
        ["ann1", "ann2"],
        options=store.DealOptions(base=1, extra_fraction=1 / 3, extra_k=2),
    )
    queue1 = [i for i, n in assignments(db_url) if n == "ann1"]
    for i in queue1[:2]:
        store.save_label(db_url, "ann1", i, 2, seconds=10)
    store.save_label(db_url, "ann1", queue1[0], 1, seconds=99)  # edit: time not re-counted
    own = store.user_progress(db_url, "ann1", "ds")
    assert (own.assigned, own.labelled, own.remaining) == (len(queue1), 2, len(queue1) - 2)
    assert own.seconds_total == pytest.approx(20.0)
    overall = store.dataset_progress(db_url, "ds")
    assert overall.items == len(ids) == overall.assigned_items
    assert overall.assignments == 8 and overall.done_assignments == 2
    assert overall.labelled_items == 2
    assert [p.user for p in overall.annotators] == ["ann1", "ann2"]
    assert store.datasets_for_user(db_url, "ann1") == ["ds"]
    assert ("ann1", "annotator") in store.queue_users(db_url)


def test_datasets_are_separate_queues(db_url: str) -> None:
    a = make_store(db_url, n_items=2, dataset="a")
    b = make_store(db_url, n_items=2, dataset="b")
    store.deal(db_url, "a", ["ann1"])
    store.deal(db_url, "b", ["ann1"])
    assert store.next_item(db_url, "ann1", "b").id == b[0]
    store.save_label(db_url, "ann1", a[0], 2)
    assert store.previous_item(db_url, "ann1", "b") is None
    assert store.datasets_for_user(db_url, "ann1") == ["a", "b"]
