"""A dataset's labelling guidelines: markdown text, rule list, label keys and idle cap.

Real projects write their own guidelines, so they live in the store per dataset, not in code.
Every edit is a new version (``guidelines`` rows are never updated): the current version is
the highest, and the history shows who changed what and when. A dataset nobody edited yet gets
:func:`default_guidelines` (the NAQT-derived 7 rules, keys Y / U / N, a 60 s idle cap).

The label keys and rule numbers are what the Annotate page's keyboard uses; keys that the page
needs for navigation (:data:`RESERVED_KEYS`) and digits (the rule keys) cannot be label keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from qaeval_core.errors import InputError, PermissionDenied
from qaeval_core.schema import RULES, LabelValue, Rule
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import MAX_RULES, Dataset, Guideline, User, utcnow
from qaeval_core.store.scope import Store, store_scope

__all__ = [
    "DEFAULT_GUIDELINES_TEXT",
    "DEFAULT_IDLE_CAP_SECONDS",
    "DEFAULT_LABEL_KEYS",
    "RESERVED_KEYS",
    "Guidelines",
    "check_guidelines",
    "default_guidelines",
    "get_guidelines",
    "guideline_history",
    "save_guidelines",
]

#: Keys the Annotate page uses itself: Skip, Back, Forward, Queue, flag (R: review).
RESERVED_KEYS = frozenset("SBFQR")
#: The label names of :class:`LabelValue` that a project maps to keys.
LABEL_NAMES = ("correct", "unclear", "incorrect")
DEFAULT_LABEL_KEYS: dict[str, str] = {"correct": "Y", "unclear": "U", "incorrect": "N"}
#: Gaps without a key press or mouse movement longer than this count only this long.
DEFAULT_IDLE_CAP_SECONDS = 60.0
DEFAULT_GUIDELINES_TEXT = """\
Judge whether the **candidate answer** answers the **question** correctly, using the
references as the known correct answers.

- **Clearly correct**: the answer gives the referenced answer (or an equivalent) and nothing
  that contradicts it.
- **Unclear**: you cannot decide, e.g. the question is ambiguous or the references look wrong
  (then also flag the item for review).
- **Clearly incorrect**: the answer is wrong, missing, or contradicts the references.

Pick the rule that decided it; the rules below are derived from NAQT's guidelines.
"""


@dataclass(frozen=True)
class Guidelines:
    """One version of a dataset's guidelines (``version`` 0: the built-in default)."""

    dataset: str
    version: int
    text: str
    rules: tuple[Rule, ...]
    label_keys: Mapping[str, str]
    idle_cap_seconds: float
    created_by: str | None = None
    created_at: datetime | None = None

    def key_for(self, value: LabelValue) -> str:
        """The key that picks ``value`` on the Annotate page."""
        return self.label_keys[LABEL_NAMES[2 - int(value)]]

    @property
    def rule_numbers(self) -> tuple[int, ...]:
        return tuple(r.number for r in self.rules)


def default_guidelines(dataset: str) -> Guidelines:
    """What a dataset uses until a researcher writes its own."""
    return Guidelines(
        dataset,
        0,
        DEFAULT_GUIDELINES_TEXT,
        RULES,
        dict(DEFAULT_LABEL_KEYS),
        DEFAULT_IDLE_CAP_SECONDS,
    )


def check_guidelines(
    text: str,
    rules: Sequence[Mapping[str, Any] | Rule],
    label_keys: Mapping[str, str],
    idle_cap_seconds: float,
) -> tuple[str, tuple[Rule, ...], dict[str, str], float]:
    """The cleaned parts of a guidelines version; :class:`InputError` says what to fix."""
    body = str(text or "").strip()
    if not body:
        raise InputError("The guidelines text is empty; write what annotators should do.")
    if not 1 <= len(rules) <= MAX_RULES:
        raise InputError(f"Give between 1 and {MAX_RULES} rules (keys 1-9); got {len(rules)}.")
    cleaned: list[Rule] = []
    for n, r in enumerate(rules, start=1):
        parts = r if isinstance(r, Mapping) else r.__dict__
        name = str(parts.get("name") or "").strip()
        if not name:
            raise InputError(f"Rule {n} has no name; every rule needs a short name.")
        cleaned.append(
            Rule(
                n,
                name,
                str(parts.get("description") or "").strip(),
                str(parts.get("example") or "").strip(),
            )
        )
    keys: dict[str, str] = {}
    for name in LABEL_NAMES:
        key = str(label_keys.get(name) or "").strip().upper()
        if len(key) != 1 or not key.isalpha() or not key.isascii():
            raise InputError(f"The key for {name!r} must be one letter A-Z; got {key!r}.")
        if key in RESERVED_KEYS:
            raise InputError(
                f"{key!r} is used by the Annotate page itself ({', '.join(sorted(RESERVED_KEYS))}"
                f" are taken); choose another key for {name!r}."
            )
        keys[name] = key
    if len(set(keys.values())) != len(keys):
        raise InputError(f"The three label keys must differ; got {keys}.")
    try:
        cap = float(idle_cap_seconds)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"The idle cap must be a number of seconds; got {idle_cap_seconds!r}."
        ) from exc
    if not 5 <= cap <= 3600:
        raise InputError(f"The idle cap must be between 5 and 3600 seconds; got {cap:g}.")
    return body, tuple(cleaned), keys, cap


def _from_row(dataset: str, g: Guideline, author: str | None) -> Guidelines:
    rules = tuple(
        Rule(int(r["number"]), r["name"], r.get("description", ""), r.get("example", ""))
        for r in g.rules
    )
    return Guidelines(
        dataset,
        g.version,
        g.text,
        rules,
        dict(g.label_keys),
        float(g.idle_cap_seconds),
        author,
        g.created_at,
    )


def _versions(db: Store, dataset: str, *, latest: bool) -> list[Guidelines]:
    with store_scope(db) as s:
        ds = find_dataset(s, dataset)
        stmt = (
            select(Guideline, User.name)
            .outerjoin(User, User.id == Guideline.created_by)
            .where(Guideline.dataset_id == ds.id)
            .order_by(Guideline.version.desc())
        )
        if latest:
            stmt = stmt.limit(1)
        return [_from_row(ds.name, g, author) for g, author in s.execute(stmt)]


def get_guidelines(db: Store, dataset: str) -> Guidelines:
    """The dataset's current guidelines (the default until a researcher saves a version)."""
    found = _versions(db, dataset, latest=True)
    return found[0] if found else default_guidelines(dataset)


def guideline_history(db: Store, dataset: str) -> list[Guidelines]:
    """Every saved version, newest first (empty: the dataset uses the default)."""
    return _versions(db, dataset, latest=False)


def save_guidelines(
    db: Store,
    dataset: str,
    user: str,
    *,
    text: str,
    rules: Sequence[Mapping[str, Any] | Rule],
    label_keys: Mapping[str, str],
    idle_cap_seconds: float,
    roles: Sequence[str],
    based_on: int | None = None,
) -> Guidelines:
    """Save a new version of the dataset's guidelines and return it.

    ``based_on``: the version the editor started from; if someone saved a newer one meanwhile
    the save is refused (:class:`InputError`), so no edit silently replaces another. The
    account is re-read in the write transaction (:class:`PermissionDenied` unless active and
    in ``roles``).

    Two saves at once: SQLite's ``BEGIN IMMEDIATE`` runs them one after the other; on
    PostgreSQL the dataset row is locked (``FOR NO KEY UPDATE``, as a deal does) before the
    newest version is read, so the second save waits for the first, then reads its version and
    is refused with the same message instead of a duplicate-key error on the version (issue 21,
    item 19). Should the version still collide (another backend), the same refusal is given.
    """
    body, rule_list, keys, cap = check_guidelines(text, rules, label_keys, idle_cap_seconds)
    with store_scope(db, write=True) as s:
        account = s.execute(select(User).where(User.name == user)).scalar_one_or_none()
        if account is None or not account.active or account.role not in roles:
            raise PermissionDenied(
                f"{user!r} cannot edit guidelines; only {' or '.join(roles)} accounts can."
            )
        ds = find_dataset(s, dataset)
        s.execute(select(Dataset.id).where(Dataset.id == ds.id).with_for_update(key_share=True))
        current = _newest_version(s, ds.id)
        if based_on is not None and int(based_on) != current:
            raise _edited_meanwhile(dataset, current, based_on)
        now = utcnow()
        try:
            with s.begin_nested():  # a collision rolls back only this insert
                s.execute(
                    insert(Guideline).values(
                        dataset_id=ds.id,
                        version=current + 1,
                        text=body,
                        rules=[r.__dict__ for r in rule_list],
                        label_keys=keys,
                        idle_cap_seconds=cap,
                        created_by=account.id,
                        created_at=now,
                    )
                )
        except IntegrityError as exc:
            raise _edited_meanwhile(dataset, _newest_version(s, ds.id), current) from exc
        return Guidelines(ds.name, current + 1, body, rule_list, keys, cap, account.name, now)


def _newest_version(s: Session, dataset_id: int) -> int:
    """The dataset's newest saved version (0: none)."""
    stmt = select(func.max(Guideline.version)).where(Guideline.dataset_id == dataset_id)
    return int(s.scalar(stmt) or 0)


def _edited_meanwhile(dataset: str, current: int, based_on: int | None) -> InputError:
    """The refusal of a save that started from an older version than the newest."""
    return InputError(
        f"Someone saved version {current} of {dataset!r}'s guidelines while you edited "
        f"version {based_on}; reload the page, redo your change on version {current}."
    )
