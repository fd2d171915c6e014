"""Guidelines saved by several people at once (issue 21, item 19), on SQLite and PostgreSQL.

Everyone edited version 0 and saves at the same moment: exactly one save becomes version 1 and
every other one is refused with "someone saved version 1 while you edited", never a raw
duplicate-key ``StoreError``.

On PostgreSQL the saves are made to collide on purpose, without timing: each one waits, inside
its transaction and right after finding the dataset, until all of them got there; only then
do they read the newest version. A save that reads it without a lock would then always
collide. (SQLite's ``BEGIN IMMEDIATE`` admits one writer at a time, so there the saves are
simply started together.)
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from qaeval_core import store
from qaeval_core.errors import InputError
from qaeval_core.store import guidelines

EDITORS = 6
ROLES = ("researcher", "admin")


def _save(url: str, k: int) -> Any:
    return store.save_guidelines(
        url,
        "ds",
        f"res{k}",
        text=f"Version by editor {k}.",
        rules=[{"name": "Exact"}],
        label_keys={"correct": "Y", "unclear": "U", "incorrect": "N"},
        idle_cap_seconds=60,
        roles=ROLES,
        based_on=0,
    )


def test_simultaneous_saves_give_one_version_and_clean_refusals(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"id": "q0", "question": "Q?", "references": ["a"], "candidate": "c"}]
    store.import_items(db_url, "ds", rows, source="test")
    for k in range(EDITORS):
        store.add_user(db_url, f"res{k}", "researcher", f"pw-res{k}-long")
    start = threading.Barrier(EDITORS)
    if db_url.startswith("postgresql"):
        inside = threading.Barrier(EDITORS, timeout=120)  # a bound so a bug fails, not hangs
        real = guidelines.find_dataset

        def find_then_wait(session: Any, name: str) -> Any:
            found = real(session, name)
            inside.wait()  # every save is in its transaction, none has read the version yet
            return found

        monkeypatch.setattr(guidelines, "find_dataset", find_then_wait)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def save(k: int) -> None:
        start.wait()
        try:
            result: Any = _save(db_url, k)
        except BaseException as exc:  # inspected below
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=save, args=(k,)) for k in range(EDITORS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    saved = [o for o in outcomes if isinstance(o, guidelines.Guidelines)]
    refused = [o for o in outcomes if isinstance(o, InputError)]
    others = [o for o in outcomes if o not in saved and o not in refused]
    assert others == []  # no duplicate-key StoreError, nothing else
    assert [g.version for g in saved] == [1]
    assert len(refused) == EDITORS - 1
    for exc in refused:
        assert "Someone saved version 1" in str(exc) and "while you edited version 0" in str(exc)
    assert [g.version for g in store.guideline_history(db_url, "ds")] == [1]
    assert store.get_guidelines(db_url, "ds").text == saved[0].text
