"""A NUL character (``\\x00``) in any text written to the store is refused with one message,
on SQLite and PostgreSQL alike, and nothing is saved (issue 31, item 7).

PostgreSQL cannot hold NUL in text (its driver raised a bare ValueError: a traceback on the
Taught answers page); SQLite kept it. The store's engines now refuse it in every statement
(:mod:`qaeval_core.store.nul_guard`), so each door below behaves the same on both stores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from qaeval_core import io, store
from qaeval_core.errors import InputError, QAEvalError
from qaeval_core.store.answer_knowledge import knowledge_decisions
from qaeval_core.store.nul_guard import nul_message
from qaeval_core.workflows import answer_knowledge as wf

ROLES = ("researcher", "admin")
BAD = "bad\x00text"
#: The one message, whichever field: "<field> contains a NUL character (\u0000), ...".
ONE_MESSAGE = r"contains a NUL character \(\\u0000\), which the store cannot keep; remove it"


def _store(url: str) -> list[int]:
    rows = [
        {
            "id": "r0",
            "question": "Capital of France?",
            "references": ["Paris"],
            "candidate": "City of Light",
            "meta": {"qid": "1"},
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": 2}]},
        },
        {
            "id": "r1",
            "question": "Capital of France?",
            "references": ["Paris"],
            "candidate": "London",
            "meta": {"qid": "1"},
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": 0}]},
        },
    ]
    store.import_items(url, "ds", rows, source="test")
    store.add_user(url, "ann1", "annotator", "pw-ann1-long")
    store.add_user(url, "res", "researcher", "pw-res-long")
    store.deal(url, "ds", ["ann1"], options=store.DealOptions(base=1))
    return [e.item_id for e in store.queue_entries(url, "ann1", "ds", "pending")]


def _alias(url: str) -> Any:
    found = wf.question_suggestions(url, "ds")
    return found[found["kind"] == "alias"].iloc[0]


def _guidelines(url: str, text: str) -> Any:
    return store.save_guidelines(
        url,
        "ds",
        "res",
        text=text,
        rules=[{"name": "Exact"}],
        label_keys={"correct": "j", "unclear": "k", "incorrect": "l"},
        idle_cap_seconds=30,
        roles=ROLES,
    )


def _resolve(url: str, ids: list[int], text: str) -> None:
    """Resolve the open flag (made first if there is none) with ``text``."""
    open_flags = store.list_flags(url, "ds")
    if open_flags.empty:
        flag_id = int(store.flag_item(url, "ann1", ids[1], "two answers").id)
    else:
        flag_id = int(open_flags["flag_id"].iloc[0])
    store.resolve_flag(url, flag_id, "res", text, roles=ROLES)


def _stage_item(url: str, text: str) -> Any:
    """An item handed to the store as a validated row, so only the store can refuse it."""
    row = io.ItemRow(rows=[1], external_id="x1", question=text, references=["a"], candidate="a")
    return store.import_items(url, "other", [row], source="test")


#: (what is written, how; a reader that shows whether it was saved)
DOORS: list[tuple[str, Callable[[str, list[int], str], Any], Callable[[str], Any]]] = [
    (
        "a label's note",
        lambda u, ids, t: store.save_label(u, "ann1", ids[0], 2, note=t),
        lambda u: len(store.label_history_frame(u, "ds")),
    ),
    (
        "a flag's reason",
        lambda u, ids, t: store.flag_item(u, "ann1", ids[0], t),
        lambda u: len(store.list_flags(u, "ds")),
    ),
    (
        "a flag's resolution",
        lambda u, ids, t: _resolve(u, ids, t),
        lambda u: int(store.list_flags(u, "ds", open_only=False)["resolution"].notna().sum()),
    ),
    (
        "an adjudication's reason",
        lambda u, ids, t: store.add_adjudication(u, ids[0], "res", 2, t, roles=ROLES),
        lambda u: len(store.adjudication_rows(u, "ds")),
    ),
    (
        "a taught answer's note",
        lambda u, ids, t: wf.decide(u, "ds", "res", _alias(u), "accepted", note=t),
        lambda u: len(knowledge_decisions(u, "ds")),
    ),
    (
        "a guidelines text",
        lambda u, ids, t: _guidelines(u, t),
        lambda u: store.get_guidelines(u, "ds").version,
    ),
    (
        "a dataset name",
        lambda u, ids, t: store.create_dataset(u, t),
        lambda u: len(store.list_datasets(u)),
    ),
    (
        "a dataset description",
        lambda u, ids, t: store.create_dataset(u, "described", description=t),
        lambda u: len(store.list_datasets(u)),
    ),
    (
        "a user name",
        lambda u, ids, t: store.add_user(u, t, "annotator", "pw-long-enough"),
        lambda u: len(store.list_users(u)),
    ),
    (
        "an imported item's text",
        lambda u, ids, t: _stage_item(u, t),
        lambda u: len(store.list_datasets(u)),
    ),
    (
        "a calibration's name",
        lambda u, ids, t: store.save_calibration(u, t, {"kind": "x"}),
        lambda u: len(store.list_calibrations(u)),
    ),
]


@pytest.mark.parametrize(("what", "write", "saved"), DOORS, ids=[d[0] for d in DOORS])
def test_a_nul_is_refused_in_one_message_and_nothing_is_saved(
    db_url: str, what: str, write: Callable, saved: Callable
) -> None:
    ids = _store(db_url)
    before = saved(db_url)
    with pytest.raises(InputError, match=ONE_MESSAGE) as caught:
        write(db_url, ids, BAD)
    assert "\n" not in str(caught.value)
    assert saved(db_url) == before  # nothing was saved
    write(db_url, ids, "fine text")  # the same door without the NUL works
    assert saved(db_url) != before


def test_the_message_names_the_field(db_url: str) -> None:
    ids = _store(db_url)
    with pytest.raises(InputError) as caught:
        store.save_label(db_url, "ann1", ids[0], 2, note=BAD)
    assert str(caught.value) == nul_message("labels.note")
    with pytest.raises(InputError, match=r"^answer_knowledge\.note contains a NUL"):
        wf.decide(db_url, "ds", "res", _alias(db_url), "accepted", note=BAD)


def test_reads_with_a_nul_are_refused_alike(db_url: str) -> None:
    """PostgreSQL's driver also refuses a NUL in a lookup; SQLite would answer "not found".
    Both now give the one message, never a driver traceback."""
    _store(db_url)
    with pytest.raises(QAEvalError, match="NUL character"):
        store.get_dataset(db_url, "d\x00s")
