"""Saved calibrations: a calibrated judge config stored by name, to be loaded by the app or CLI.

The config must load back exactly, so it is converted with
:func:`qaeval_core.jsonable.to_jsonable` in strict mode: a NaN, an infinity or an object that
is not plain JSON is refused with a :class:`~qaeval_core.errors.ConfigError` instead of being
turned into null or text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, NotFoundError, StoreError
from qaeval_core.jsonable import to_jsonable
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import Calibration, Dataset, User, utcnow
from qaeval_core.store.scope import Store, check_name, store_scope
from qaeval_core.store.users import find_user

__all__ = ["CalibrationInfo", "get_calibration", "list_calibrations", "save_calibration"]


@dataclass(frozen=True)
class CalibrationInfo:
    id: int
    name: str
    config: dict[str, Any]
    dataset: str | None
    created_by: str | None
    created_at: datetime


def _calibration_info(c: Calibration, dataset: str | None, user: str | None) -> CalibrationInfo:
    return CalibrationInfo(c.id, c.name, c.config, dataset, user, c.created_at)


def save_calibration(
    db: Store,
    name: str,
    config: Mapping[str, Any],
    *,
    dataset: str | None = None,
    created_by: str | None = None,
    overwrite: bool = False,
) -> CalibrationInfo:
    """Store a calibrated judge config under ``name`` (``overwrite`` replaces an existing one)."""
    name = check_name(name, "calibration")
    try:
        config = to_jsonable(dict(config), strict=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Calibration {name!r}: the config is not plain JSON ({exc}).") from exc
    with store_scope(db, write=True) as s:
        ds_id = find_dataset(s, dataset).id if dataset is not None else None
        user_id = find_user(s, created_by).id if created_by is not None else None
        cal = s.execute(select(Calibration).where(Calibration.name == name)).scalar_one_or_none()
        if cal is not None and not overwrite:
            raise StoreError(f"A calibration named {name!r} already exists (choose another name).")
        if cal is None:
            cal = Calibration(name=name)
            s.add(cal)
        cal.config, cal.dataset_id, cal.created_by = config, ds_id, user_id
        cal.created_at = utcnow()
        s.flush()
        return _calibration_info(cal, dataset, created_by)


def _calibrations(s: Session, name: str | None) -> list[CalibrationInfo]:
    stmt = (
        select(Calibration, Dataset.name, User.name)
        .outerjoin(Dataset, Dataset.id == Calibration.dataset_id)
        .outerjoin(User, User.id == Calibration.created_by)
        .order_by(Calibration.created_at.desc(), Calibration.id.desc())
    )
    if name is not None:
        stmt = stmt.where(Calibration.name == name)
    return [_calibration_info(c, d, u) for c, d, u in s.execute(stmt).tuples()]


def get_calibration(db: Store, name: str) -> CalibrationInfo:
    with store_scope(db) as s:
        found = _calibrations(s, name)
        if not found:
            known = [c.name for c in _calibrations(s, None)]
            hint = f"saved: {', '.join(known)}" if known else "none saved yet"
            raise NotFoundError(f"No calibration named {name!r} ({hint}).")
        return found[0]


def list_calibrations(db: Store) -> list[CalibrationInfo]:
    """Saved calibrations, newest first."""
    with store_scope(db) as s:
        return _calibrations(s, None)
