"""A dataset's answer knowledge: researchers' decisions on suggested aliases and wrong answers.

Suggestions are computed from the labels (:mod:`qaeval_core.knowledge.suggestions`); what the
store keeps is each decision a researcher made on one: ``accepted`` or ``rejected``, who and
when, with an optional note. Nothing is updated in place: a change of mind is a new decision
(``version`` + 1 of that suggestion), the highest version is current, and the dataset's
knowledge list is versioned by its number of decisions (:func:`knowledge_version`).

Never silent: a decision names the version its author saw (``based_on``; 0: undecided). When
someone else decided the same suggestion meanwhile, the decision is refused with who decided
what, and nothing is lost: the first decision stays, the second can be made again on top of it.
Two decisions at once: SQLite's ``BEGIN IMMEDIATE`` runs them one after the other; on
PostgreSQL the dataset row is locked first (as :func:`.guidelines.save_guidelines` does), so the
second waits, reads the first and is refused; should versions still collide, the unique
(dataset, suggestion, version) refuses the second the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from qaeval_core.errors import InputError, PermissionDenied
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import (
    KNOWLEDGE_DECISIONS,
    KNOWLEDGE_KINDS,
    AnswerKnowledgeDecision,
    Dataset,
    User,
    utcnow,
)
from qaeval_core.store.scope import Store, store_scope

__all__ = [
    "KNOWLEDGE_COLUMNS",
    "KNOWLEDGE_DECISIONS",
    "KNOWLEDGE_ROLES",
    "KnowledgeDecision",
    "decide_suggestion",
    "knowledge_decisions",
    "knowledge_version",
    "suggestion_hash",
]

#: Who may decide: the roles that adjudicate labels.
KNOWLEDGE_ROLES = ("researcher", "admin")
KNOWLEDGE_COLUMNS = [
    "decision_id",
    "suggestion_hash",
    "version",
    "question_key",
    "question",
    "kind",
    "answer",
    "answer_key",
    "decision",
    "note",
    "decided_by",
    "created_at",
]


@dataclass(frozen=True)
class KnowledgeDecision:
    """One stored decision (a row of :data:`KNOWLEDGE_COLUMNS`)."""

    decision_id: int
    suggestion_hash: str
    version: int
    question_key: str
    question: str
    kind: str
    answer: str
    answer_key: str
    decision: str
    note: str | None
    decided_by: str | None
    created_at: datetime


def suggestion_hash(question_key: str, kind: str, answer_key: str) -> str:
    """The identity of a suggestion within its dataset (SHA-256 of its three parts)."""
    payload = json.dumps([question_key, kind, answer_key], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _check(kind: str, decision: str, question_key: str, answer_key: str) -> None:
    if kind not in KNOWLEDGE_KINDS:
        raise InputError(f"kind must be one of {', '.join(KNOWLEDGE_KINDS)}; got {kind!r}.")
    if decision not in KNOWLEDGE_DECISIONS:
        raise InputError(
            f"decision must be one of {', '.join(KNOWLEDGE_DECISIONS)}; got {decision!r}."
        )
    if not str(question_key).strip() or not str(answer_key).strip():
        raise InputError("question_key and answer_key must not be empty.")


def _rows(
    s: Session, dataset_id: int, *, current: bool, key: str | None = None
) -> list[KnowledgeDecision]:
    stmt = (
        select(AnswerKnowledgeDecision, User.name)
        .outerjoin(User, User.id == AnswerKnowledgeDecision.decided_by)
        .where(AnswerKnowledgeDecision.dataset_id == dataset_id)
        .order_by(AnswerKnowledgeDecision.id)
    )
    if key is not None:
        stmt = stmt.where(AnswerKnowledgeDecision.suggestion_hash == key)
    if current:
        newest = (
            select(func.max(AnswerKnowledgeDecision.id))
            .where(AnswerKnowledgeDecision.dataset_id == dataset_id)
            .group_by(AnswerKnowledgeDecision.suggestion_hash)
        )
        stmt = stmt.where(AnswerKnowledgeDecision.id.in_(newest))
    return [
        KnowledgeDecision(
            r.id,
            r.suggestion_hash,
            r.version,
            r.question_key,
            r.question,
            r.kind,
            r.answer,
            r.answer_key,
            r.decision,
            r.note,
            name,
            r.created_at,
        )
        for r, name in s.execute(stmt)
    ]


def _latest(s: Session, dataset_id: int, key: str) -> KnowledgeDecision | None:
    found = _rows(s, dataset_id, current=False, key=key)
    return max(found, key=lambda d: d.version) if found else None


def _decided_meanwhile(answer: str, latest: KnowledgeDecision | None, based_on: int) -> InputError:
    if latest is None:  # pragma: no cover - only a collision of two first decisions lands here
        return InputError(
            f"Someone decided on {answer!r} at the same moment; reload and decide again."
        )
    return InputError(
        f"{latest.decided_by or 'someone'} {latest.decision} {answer!r} for this question "
        f"(decision {latest.version}, {latest.created_at:%Y-%m-%d %H:%M} UTC) while you looked "
        f"at decision {based_on}; your decision was not saved. Reload, then decide again if "
        "you still disagree."
    )


def decide_suggestion(
    db: Store,
    dataset: str,
    user: str,
    *,
    question_key: str,
    question: str,
    kind: str,
    answer: str,
    answer_key: str,
    decision: str,
    based_on: int = 0,
    note: str | None = None,
) -> KnowledgeDecision:
    """Record ``user``'s decision (``accepted``/``rejected``) on one suggestion and return it.

    ``based_on``: the suggestion's version the researcher saw (0: undecided); a newer one
    refuses the decision (module docstring). Only active researcher and admin accounts may
    decide (:class:`PermissionDenied`), re-read in the write transaction.
    """
    _check(kind, decision, question_key, answer_key)
    key = suggestion_hash(question_key, kind, answer_key)
    with store_scope(db, write=True) as s:
        account = s.execute(select(User).where(User.name == user)).scalar_one_or_none()
        if account is None or not account.active or account.role not in KNOWLEDGE_ROLES:
            raise PermissionDenied(
                f"{user!r} cannot decide on suggested answers; only "
                f"{' or '.join(KNOWLEDGE_ROLES)} accounts can."
            )
        ds = find_dataset(s, dataset)
        s.execute(select(Dataset.id).where(Dataset.id == ds.id).with_for_update(key_share=True))
        latest = _latest(s, ds.id, key)
        current = latest.version if latest is not None else 0
        if int(based_on) != current:
            raise _decided_meanwhile(answer, latest, int(based_on))
        now = utcnow()
        values: dict[str, Any] = {
            "dataset_id": ds.id,
            "suggestion_hash": key,
            "version": current + 1,
            "question_key": question_key,
            "question": question,
            "kind": kind,
            "answer": answer,
            "answer_key": answer_key,
            "decision": decision,
            "note": note or None,
            "decided_by": account.id,
            "created_at": now,
        }
        try:
            with s.begin_nested():  # a collision rolls back only this insert
                new_id = s.execute(
                    insert(AnswerKnowledgeDecision)
                    .values(**values)
                    .returning(AnswerKnowledgeDecision.id)
                ).scalar_one()
        except IntegrityError as exc:
            raise _decided_meanwhile(answer, _latest(s, ds.id, key), current) from exc
        return KnowledgeDecision(
            new_id,
            key,
            current + 1,
            question_key,
            question,
            kind,
            answer,
            answer_key,
            decision,
            note or None,
            account.name,
            now,
        )


def knowledge_decisions(db: Store, dataset: str, *, current: bool = True) -> pd.DataFrame:
    """The dataset's decisions (:data:`KNOWLEDGE_COLUMNS`), oldest first: the current one per
    suggestion, or (``current=False``) the whole history."""
    with store_scope(db) as s:
        ds = find_dataset(s, dataset)
        rows = _rows(s, ds.id, current=current)
    return pd.DataFrame([d.__dict__ for d in rows], columns=KNOWLEDGE_COLUMNS)


def knowledge_version(db: Store, dataset: str) -> int:
    """The version of the dataset's knowledge list: how many decisions it holds (0: none)."""
    with store_scope(db) as s:
        ds = find_dataset(s, dataset)
        stmt = select(func.count(AnswerKnowledgeDecision.id)).where(
            AnswerKnowledgeDecision.dataset_id == ds.id
        )
        return int(s.scalar(stmt) or 0)
