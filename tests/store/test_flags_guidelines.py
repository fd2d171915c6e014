"""Skips, flags, active time and per-dataset guidelines in the store (SQLite and PostgreSQL).

Issue 14: skips must survive sessions (problem 6), an annotator can flag an item with a reason
that researchers list and resolve, labels keep active and wall time (problem 5), and each
dataset has versioned guidelines, rule list, label keys and idle cap (problem 10).
"""

from __future__ import annotations

import pytest

from qaeval_core import store
from qaeval_core.errors import ConfigError, InputError, NotFoundError, PermissionDenied

ROLES = ("researcher", "admin")


def _store(url: str) -> None:
    rows = [
        {"id": f"q{i}", "question": f"Q{i}?", "references": [f"a{i}"], "candidate": f"c{i}"}
        for i in range(5)
    ]
    store.import_items(url, "ds", rows, source="test")
    store.add_user(url, "ann1", "annotator", "pw-ann1-long")
    store.add_user(url, "ann2", "annotator", "pw-ann2-long")
    store.add_user(url, "res", "researcher", "pw-res-long")
    store.deal(url, "ds", ["ann1", "ann2"], options=store.DealOptions(base=2))


def _ids(url: str) -> list[int]:
    return [e.item_id for e in store.queue_entries(url, "ann1", "ds", "pending")]


def test_a_skip_is_stored_until_revisited(db_url: str) -> None:
    _store(db_url)
    first = store.next_item(db_url, "ann1", "ds")
    assert first is not None
    store.skip_item(db_url, "ann1", first.id)
    assert store.next_item(db_url, "ann1", "ds").id != first.id  # a new session too
    assert store.next_item(db_url, "ann2", "ds").id == first.id  # only ann1's queue
    assert [e.item_id for e in store.queue_entries(db_url, "ann1", "ds", "skipped")] == [first.id]
    assert store.skipped_count(db_url, "ann1", "ds") == 1
    assert store.revisit_skipped(db_url, "ann1", "ds") == 1
    assert store.next_item(db_url, "ann1", "ds").id == first.id
    with pytest.raises(PermissionDenied):
        store.skip_item(db_url, "ann1", 10_000)


def test_queue_filters_follow_labels_skips_and_flags(db_url: str) -> None:
    _store(db_url)
    ids = _ids(db_url)
    store.save_label(db_url, "ann1", ids[0], 2)
    store.skip_item(db_url, "ann1", ids[1])
    store.flag_item(db_url, "ann1", ids[2], "reference is wrong")

    def status(s: str) -> list[int]:
        return [e.item_id for e in store.queue_entries(db_url, "ann1", "ds", s)]

    assert status("done") == [ids[0]]
    assert status("skipped") == [ids[1], ids[2]]  # flagging skips too
    assert status("flagged") == [ids[2]]
    assert status("pending") == ids[3:]
    store.save_label(db_url, "ann1", ids[1], 0)  # labelling a skipped item makes it done
    assert status("skipped") == [ids[2]] and status("done") == [ids[0], ids[1]]
    with pytest.raises(InputError, match="pending, done, skipped, flagged"):
        store.queue_entries(db_url, "ann1", "ds", "all")  # type: ignore[arg-type]


def test_flags_are_listed_and_resolved_with_their_history(db_url: str) -> None:
    _store(db_url)
    ids = _ids(db_url)
    with pytest.raises(InputError, match="Say why"):
        store.flag_item(db_url, "ann1", ids[0], "   ")
    store.flag_item(db_url, "ann1", ids[0], "two correct answers")
    store.flag_item(db_url, "ann2", ids[0], "question is ambiguous")
    flags = store.list_flags(db_url, "ds")
    assert set(flags["reason"]) == {"two correct answers", "question is ambiguous"}
    assert list(flags.columns) == store.FLAG_COLUMNS
    first = int(flags["flag_id"].min())
    with pytest.raises(PermissionDenied):
        store.resolve_flag(db_url, first, "ann1", "no", roles=ROLES)
    store.resolve_flag(db_url, first, "res", "kept both answers", roles=ROLES)
    with pytest.raises(NotFoundError):
        store.resolve_flag(db_url, first, "res", "again", roles=ROLES)
    assert len(store.list_flags(db_url, "ds")) == 1
    everything = store.list_flags(db_url, "ds", open_only=False)
    done = everything[everything["flag_id"] == first].iloc[0]
    assert (done["resolved_by"], done["resolution"]) == ("res", "kept both answers")
    assert store.open_flags_for(db_url, "ann1", ids[0]) == []


def test_labels_keep_active_and_wall_seconds(db_url: str) -> None:
    _store(db_url)
    item = _ids(db_url)[0]
    rec = store.save_label(db_url, "ann1", item, 2, seconds=12.0, wall_seconds=64.0)
    assert (rec.seconds, rec.wall_seconds) == (12.0, 64.0)
    assert store.label_history(db_url, "ann1", item)[0].wall_seconds == 64.0
    assert store.user_progress(db_url, "ann1", "ds").seconds_total == 12.0  # active time


def test_guidelines_are_versioned_and_checked(db_url: str) -> None:
    _store(db_url)
    default = store.get_guidelines(db_url, "ds")
    assert default.version == 0 and len(default.rules) == 7
    assert dict(default.label_keys) == {"correct": "Y", "unclear": "U", "incorrect": "N"}
    kwargs = dict(
        text="Be strict.",
        rules=[{"name": "Exact"}, {"name": "Alias", "example": "NYC"}],
        label_keys={"correct": "j", "unclear": "k", "incorrect": "l"},
        idle_cap_seconds=30,
        roles=ROLES,
    )
    v1 = store.save_guidelines(db_url, "ds", "res", based_on=0, **kwargs)
    assert (v1.version, v1.rule_numbers, v1.label_keys["correct"]) == (1, (1, 2), "J")
    v2 = store.save_guidelines(db_url, "ds", "res", based_on=1, **{**kwargs, "text": "v2"})
    assert store.get_guidelines(db_url, "ds").text == "v2"
    assert [g.version for g in store.guideline_history(db_url, "ds")] == [2, 1]  # kept
    with pytest.raises(InputError, match="while you edited version 1"):
        store.save_guidelines(db_url, "ds", "res", based_on=1, **kwargs)  # stale editor
    with pytest.raises(PermissionDenied):
        store.save_guidelines(db_url, "ds", "ann1", **kwargs)
    bad = [
        ({"text": " "}, "empty"),
        ({"rules": []}, "between 1 and 9"),
        ({"rules": [{"name": ""}]}, "no name"),
        ({"label_keys": {"correct": "S", "unclear": "K", "incorrect": "L"}}, "used by"),
        ({"label_keys": {"correct": "J", "unclear": "J", "incorrect": "L"}}, "must differ"),
        ({"label_keys": {"correct": "1", "unclear": "K", "incorrect": "L"}}, "one letter"),
        ({"idle_cap_seconds": 1}, "between 5 and 3600"),
    ]
    for change, message in bad:
        with pytest.raises(InputError, match=message):
            store.save_guidelines(db_url, "ds", "res", **{**kwargs, **change})
    assert v2.version == 2


def test_a_project_rule_list_bounds_the_rule_of_a_label(db_url: str) -> None:
    _store(db_url)
    item = _ids(db_url)[0]
    rec = store.save_label(db_url, "ann1", item, 2, rule=9, rules=range(1, 10))
    assert rec.rule == 9  # the store takes rules 1-9 (migration 0006)
    with pytest.raises(ConfigError, match="Rule must be one of 1-2"):
        store.save_label(db_url, "ann1", item, 2, rule=3, rules=(1, 2))
