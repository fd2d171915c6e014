"""Finding users and datasets by name or id, for every part of the annotation workflow.

Each operation takes a user or dataset as a name (from the UI or the CLI) or an id (hot paths
that already resolved it); resolving them here gives every caller the same "no such user /
known datasets: ..." messages. :func:`labelled_by` is the one "has this user labelled it"
test shared by reassigning and the progress counts.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from qaeval_core.errors import NotFoundError
from qaeval_core.store.orm import Dataset, Label, User, visible_dataset

__all__ = [
    "DatasetRef",
    "UserRef",
    "labelled_by",
    "lookup_dataset",
    "lookup_dataset_id",
    "lookup_user",
    "lookup_user_id",
]

UserRef = int | str
DatasetRef = int | str


def lookup_user(session: Session, user: UserRef) -> User:
    """The user with this id or name; a NotFoundError that says how to create one."""
    stmt = select(User).where(User.id == user if isinstance(user, int) else User.name == user)
    found = session.scalars(stmt).one_or_none()
    if found is None:
        raise NotFoundError(
            f"No user {user!r}. An admin adds a person (with a role, e.g. annotator) first."
        )
    return found


def lookup_user_id(session: Session, user: UserRef) -> int:
    """The id of ``user``; an int is trusted as an id (hot paths skip the lookup)."""
    return user if isinstance(user, int) else lookup_user(session, user).id


def lookup_dataset(session: Session, dataset: DatasetRef) -> Dataset:
    """The dataset with this id or name; a NotFoundError that lists the known ones."""
    key = Dataset.id == dataset if isinstance(dataset, int) else Dataset.name == dataset
    found = session.scalars(select(Dataset).where(key, visible_dataset())).one_or_none()
    if found is None:
        stmt = select(Dataset.name).where(visible_dataset()).order_by(Dataset.name)
        names = session.scalars(stmt).all()
        known = ", ".join(names) if names else "none yet - import one first"
        raise NotFoundError(f"No dataset {dataset!r}. Known datasets: {known}.")
    return found


def lookup_dataset_id(session: Session, dataset: DatasetRef) -> int:
    """The id of ``dataset``; an int is trusted as an id (hot paths skip the lookup)."""
    return dataset if isinstance(dataset, int) else lookup_dataset(session, dataset).id


def labelled_by(user_id: Any, item_col: Any) -> Any:
    """``EXISTS`` a label by ``user_id`` for the item in ``item_col`` (uses ix_labels_item_user)."""
    return exists().where(Label.item_id == item_col, Label.user_id == user_id)
