"""A plain store for the annotation tests: ``n_items`` items and annotator accounts."""

from __future__ import annotations

from sqlalchemy import select

from qaeval_core.schema import content_hash
from qaeval_core.store.orm import Assignment, Dataset, User
from qaeval_core.store.orm import ItemRecord as Item
from qaeval_core.store.session import session_scope, write_scope


def make_store(
    url: str,
    *,
    n_items: int = 10,
    users: tuple[str, ...] = ("ann1", "ann2", "ann3"),
    dataset: str = "ds",
) -> list[int]:
    """A dataset of ``n_items`` items and annotator accounts; returns the item ids in order."""
    with write_scope(url) as s:
        ds = Dataset(name=dataset)
        s.add(ds)
        s.flush()
        items = [
            Item(
                dataset_id=ds.id,
                external_id=f"{dataset}-{i}",
                question=f"question {i}?",
                references=[f"ref {i}"],
                candidate=f"answer {i}",
                qa_model="secret-model",
                meta={"score": 0.9},
                content_hash=content_hash(f"question {i}?", [f"ref {i}"], f"answer {i}"),
            )
            for i in range(n_items)
        ]
        s.add_all(items)
        for name in users:
            if s.scalar(select(User).where(User.name == name)) is None:
                s.add(User(name=name, role="annotator"))
        s.flush()
        return [it.id for it in items]


def assignments(url: str) -> list[tuple[int, str]]:
    with session_scope(url) as s:
        rows = s.execute(
            select(Assignment.item_id, User.name).join(User, User.id == Assignment.user_id)
        )
        return [(i, n) for i, n in rows]
