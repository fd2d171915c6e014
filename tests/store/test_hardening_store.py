"""Issue 13 ("team mode that never misplaces work"): races of the store, on SQLite and PostgreSQL.

* a label saved while a researcher reassigns the annotator's items lands first (and the item
  stays theirs) or is refused - never left on an item that is now someone else's;
* two saves of one item by one annotator at once: the current label (highest id) is also the
  latest in time;
* several processes upgrading one empty store at once all succeed;
* SMILE's ``lemmatizer`` only accepts known pipelines or a spaCy model folder.

Every race is bounded: a few rounds, a few workers, loopback connections only.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _paths import REPO_ROOT
from _processes import store_processes
from sqlalchemy import create_engine, insert, select, text

from qaeval_core import store
from qaeval_core.errors import ConfigError, PermissionDenied
from qaeval_core.metrics import smile
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import content_hash
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Assignment, Dataset, Label, User
from qaeval_core.store.orm import ItemRecord as Item

REPO_ROOT = REPO_ROOT


def _dataset(url: str, name: str, n_items: int) -> list[int]:
    with store_session.write_scope(url) as s:
        ds = Dataset(name=name)
        s.add(ds)
        s.flush()
        rows = [
            {
                "dataset_id": ds.id,
                "external_id": f"{name}-{i}",
                "question": f"question {i}?",
                "references": [f"ref {i}"],
                "candidate": f"answer {i}",
                "content_hash": content_hash(f"{name} {i}", [f"r{i}"], f"c{i}"),
            }
            for i in range(n_items)
        ]
        s.execute(insert(Item), rows)
        return list(s.scalars(select(Item.id).where(Item.dataset_id == ds.id).order_by(Item.id)))


def _users(url: str, *names: str) -> list[int]:
    with store_session.write_scope(url) as s:
        users = [User(name=n, role="annotator") for n in names]
        s.add_all(users)
        s.flush()
        return [u.id for u in users]


# -- 2. reassigning while the absent annotator still saves -------------------------------------
def _label_while_reassigning(
    url: str, user_id: int, name: str, items: list[int], seed: int
) -> tuple[list[int], store.ReassignResult]:
    """8 sessions of the user label random items; meanwhile their items go to B. (acks, result)."""
    stop = threading.Event()
    acks: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()

    def label(k: int) -> None:
        rng = random.Random(seed + k)
        while not stop.is_set():
            try:
                rec = store.save_label(url, user_id, rng.choice(items), rng.randrange(3))
            except PermissionDenied:
                continue
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
            else:
                with lock:
                    acks.append(rec.id)

    threads = [threading.Thread(target=label, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    result = store.reassign(url, name, "A", ["B"])
    time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a labelling session hung"
    assert not errors, errors[:5]
    return acks, result


def test_reassign_during_saves_keeps_or_refuses_every_label(db_url: str) -> None:
    """A labels while A's items go to B: no acknowledged label of A ends on an item of B."""
    a_id, _b_id = _users(db_url, "A", "B")
    for rnd in range(4):
        name = f"round{rnd}"
        items = _dataset(db_url, name, 300)
        store.deal(db_url, name, ["A"])
        acks, result = _label_while_reassigning(db_url, a_id, name, items, rnd * 100)
        with store_session.session_scope(db_url) as s:
            stored = set(s.scalars(select(Label.id).where(Label.user_id == a_id)))
            labelled = set(
                s.scalars(
                    select(Label.item_id).where(Label.user_id == a_id, Label.item_id.in_(items))
                )
            )
            holders: dict[int, set[str]] = {}
            for item_id, user in s.execute(
                select(Assignment.item_id, User.name)
                .join(User, User.id == Assignment.user_id)
                .where(Assignment.item_id.in_(items))
            ):
                holders.setdefault(item_id, set()).add(user)
        assert set(acks) <= stored, "an acknowledged label is missing"
        misplaced = sorted(i for i in labelled if holders.get(i) != {"A"})
        assert not misplaced, f"round {rnd}: {len(misplaced)} labels of A on items now B's"
        assert result.moved == len(items) - len(labelled)
        moved = [i for i in items if holders.get(i) == {"B"}]
        if moved:
            with pytest.raises(PermissionDenied, match="reassigned"):
                store.save_label(db_url, a_id, moved[0], 1)


# -- 11. two saves of one item by one annotator at once -----------------------------------------
def _save_burst(url: str, user_id: int, item_id: int, n: int, go: Any, out: Any) -> None:
    """One app process: two sessions saving the same item ``n`` times each, started on ``go``."""
    go.wait(timeout=120)
    errors: list[str] = []

    def run() -> None:
        for j in range(n):
            try:
                store.save_label(url, user_id, item_id, j % 3, note=str(j))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    out.put(errors)


def test_simultaneous_saves_current_label_is_the_latest(db_url: str) -> None:
    """4 processes x 2 sessions save one item at once: id order and time order agree."""
    (user_id,) = _users(db_url, "A")
    (item_id,) = _dataset(db_url, "one", 1)
    store.deal(db_url, "one", ["A"])
    ctx = store_processes()  # separate processes, no inherited connections
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_save_burst, args=(db_url, user_id, item_id, 30, go, out))
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    time.sleep(2.0)  # let every process start before they save together
    go.set()
    errors = [e for _ in procs for e in out.get(timeout=180)]
    for p in procs:
        p.join(timeout=60)
    assert not errors, errors[:5]
    history = store.label_history(db_url, "A", item_id)
    assert len(history) == 4 * 2 * 30
    pairs = zip(history, history[1:], strict=False)
    inversions = [(a.id, b.id) for a, b in pairs if b.created_at < a.created_at]
    assert not inversions, f"{len(inversions)} labels older than the label they replace"
    current = store.current_label(db_url, "A", item_id)
    assert current is not None
    assert current.id == history[-1].id
    assert current.created_at == max(h.created_at for h in history)


# -- 4. several processes upgrading one empty store ---------------------------------------------
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store (no tables): a new SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.sqlite'}"
        return
    base = os.environ.get("QAEVAL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("no PostgreSQL server: QAEVAL_TEST_POSTGRES_URL is unset")
    name = f"qaeval_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.rsplit("/", 1)[0] + f"/{name}"
    finally:
        store_session.get_engine.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


_UPGRADE = """
import sys, time
import alembic.command
from qaeval_core.store.session import head_revision, upgrade
head_revision()  # the migration scripts are loaded: the upgrades start at the same moment
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
upgrade(sys.argv[1])
"""


def test_simultaneous_upgrades_of_an_empty_store_all_succeed(empty_url: str) -> None:
    """The app and imports started together: 5 processes upgrade one empty store at once."""
    start = time.time() + 4.0  # every interpreter has imported Alembic by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _UPGRADE, empty_url, str(start)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(5)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    failed = [o.strip()[-300:] for p, o in zip(procs, outputs, strict=True) if p.returncode]
    assert not failed, f"{len(failed)} of 5 upgrades failed: {failed}"
    assert store_session.current_revision(empty_url) == store_session.head_revision()
    store_session.get_engine(empty_url).dispose()


# -- 12. SMILE's lemmatizer ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["os", "antigravity", "json", "en_core_web_xx", "../nowhere"])
def test_smile_lemmatizer_refuses_unknown_names(bad: str) -> None:
    with pytest.raises(ConfigError, match="lemmatizer must be"):
        get_metric("smile", lemmatizer=bad)
    with pytest.raises(ConfigError, match="lemmatizer must be"):
        smile.Smile(variant="paper", lemmatizer=bad)
    with pytest.raises(ConfigError, match="lemmatizer must be"):
        smile.preprocess(["The children were running"], lemmatizer=bad)


def test_smile_lemmatizer_accepts_known_pipelines_and_model_folders(tmp_path: Path) -> None:
    for name in ("none", smile.DEFAULT_LEMMATIZER, "en_core_web_sm"):
        assert smile.Smile(lemmatizer=name).lemmatizer == name
    folder = tmp_path / "my_model"
    folder.mkdir()
    with pytest.raises(ConfigError, match="spaCy model"):
        smile.Smile(lemmatizer=str(folder))  # an empty folder is not a model
    (folder / "meta.json").write_text("{}")
    assert smile.Smile(lemmatizer=str(folder)).lemmatizer == str(folder)
