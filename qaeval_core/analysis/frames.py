"""Reading the store for analysis: one dataset's frames, in one read transaction, and one item.

Every analysis starts from these frames, so the app pages and ``qaeval report`` see exactly the
same rows:

- ``items``: ``item_id``, ``dataset``, ``external_id``, ``question``, ``references``,
  ``candidate``, ``context``, ``qa_model``;
- ``labels``: the *current* label per (item, user), imported external raters included, with
  ``rater`` (the user name), ``role``, ``value``, ``rule``, ``note``, ``source``, ``created_at``;
- ``adjudications``: every adjudication row, oldest first (the last row per item is current);
- ``scores``: one configuration per metric id. A metric scored under several configurations
  (changed parameters give a new ``config_hash``) would otherwise be counted twice; the most
  recently written configuration is taken unless the caller names the hashes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from qaeval_core.agreement import aggregate_labels
from qaeval_core.errors import NotFoundError
from qaeval_core.store import repo
from qaeval_core.store.models import Adjudication, Dataset, Item, Label, Score, User
from qaeval_core.store.session import session_scope, write_scope

__all__ = [
    "ADJUDICATION_COLUMNS",
    "CONFIG_COLUMNS",
    "ITEM_COLUMNS",
    "LABEL_COLUMNS",
    "SCORE_COLUMNS",
    "Frames",
    "ItemDetail",
    "data_version",
    "item_detail",
    "load_frames",
    "load_scores",
    "read_adjudications",
    "score_configs",
    "session_for",
]

ITEM_COLUMNS = [
    "item_id", "dataset", "external_id", "question", "references", "candidate", "context",
    "qa_model",
]  # fmt: skip
LABEL_COLUMNS = ["item_id", "rater", "role", "value", "rule", "note", "source", "created_at"]
ADJUDICATION_COLUMNS = [
    "adjudication_id", "item_id", "user", "value", "reason", "created_at",
]  # fmt: skip
SCORE_COLUMNS = ["item_id", "metric_id", "config_hash", "value", "decision", "details"]
CONFIG_COLUMNS = ["metric_id", "config_hash", "n_items", "last_scored", "used"]


@contextmanager
def session_for(db: repo.Store, *, write: bool = False) -> Iterator[Session]:
    """The caller's session (joins its transaction) or a new one on the URL."""
    if isinstance(db, Session):
        yield db
        return
    with (write_scope if write else session_scope)(db) as session:
        yield session


def _dataset_filter(session: Session, dataset: str | None) -> Any:
    if dataset is None:
        return True
    # repo's lookup gives the "known datasets: ..." message for a typo
    return Item.dataset_id == repo.get_dataset(session, dataset).id


def data_version(db: repo.Store) -> tuple[Any, ...]:
    """A cheap fingerprint of everything the analysis reads; it changes on every write.

    The app keys its caches on it, so a new label, score or adjudication shows on the next
    rerun while unchanged data is not re-analysed (bootstraps take seconds).
    """
    with session_for(db) as s:
        row = s.execute(
            select(
                select(func.count(Item.id)).scalar_subquery(),
                select(func.max(Item.id)).scalar_subquery(),
                select(func.max(Label.id)).scalar_subquery(),
                select(func.max(Adjudication.id)).scalar_subquery(),
                select(func.count(Score.id)).scalar_subquery(),
                select(func.max(Score.created_at)).scalar_subquery(),
            )
        ).one()
    return tuple(str(v) for v in row)


def score_configs(db: repo.Store, dataset: str | None = None) -> pd.DataFrame:
    """Every (metric, configuration) scored on the dataset, newest first within a metric.

    ``used`` marks the configuration :func:`load_frames` takes by default: the one whose scores
    were written last. Returns columns ``metric_id``, ``config_hash``, ``n_items``,
    ``last_scored``, ``used``.
    """
    with session_for(db) as s:
        stmt = (
            select(
                Score.metric_id,
                Score.config_hash,
                func.count(Score.id),
                func.max(Score.created_at),
                func.max(Score.id),
            )
            .join(Item, Item.id == Score.item_id)
            .where(_dataset_filter(s, dataset))
            .group_by(Score.metric_id, Score.config_hash)
        )
        rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=[*CONFIG_COLUMNS[:4], "last_id"])
    frame = frame.sort_values(
        ["metric_id", "last_scored", "last_id"], ascending=[True, False, False]
    )
    frame["used"] = ~frame.duplicated("metric_id")
    return frame[CONFIG_COLUMNS].reset_index(drop=True)


def _items(s: Session, dataset: str | None) -> pd.DataFrame:
    stmt = (
        select(
            Item.id, Dataset.name, Item.external_id, Item.question, Item.references,
            Item.candidate, Item.context, Item.qa_model,
        )
        .join(Dataset, Dataset.id == Item.dataset_id)
        .where(_dataset_filter(s, dataset))
        .order_by(Item.id)
    )  # fmt: skip
    return pd.DataFrame([tuple(r) for r in s.execute(stmt).all()], columns=ITEM_COLUMNS)


def _labels(s: Session, dataset: str | None, item_id: int | None = None) -> pd.DataFrame:
    latest = select(func.max(Label.id)).group_by(Label.item_id, Label.user_id)
    stmt = (
        select(
            Label.item_id, User.name, User.role, Label.value, Label.rule, Label.note,
            Label.source, Label.created_at,
        )
        .join(Item, Item.id == Label.item_id)
        .join(User, User.id == Label.user_id)
        .where(Label.id.in_(latest), _dataset_filter(s, dataset))
        .order_by(Label.id)
    )  # fmt: skip
    if item_id is not None:
        stmt = stmt.where(Label.item_id == item_id)
    frame = pd.DataFrame([tuple(r) for r in s.execute(stmt).all()], columns=LABEL_COLUMNS)
    frame["value"] = frame["value"].astype(int)
    frame["rule"] = frame["rule"].astype("Int64")
    return frame


def read_adjudications(s: Session, dataset: str | None, item_id: int | None = None) -> pd.DataFrame:
    """Adjudication rows (oldest first) of a dataset or one item; the adjudication history too."""
    stmt = (
        select(
            Adjudication.id, Adjudication.item_id, User.name, Adjudication.value,
            Adjudication.reason, Adjudication.created_at,
        )
        .join(Item, Item.id == Adjudication.item_id)
        .join(User, User.id == Adjudication.user_id)
        .where(_dataset_filter(s, dataset))
        .order_by(Adjudication.id)
    )  # fmt: skip
    if item_id is not None:
        stmt = stmt.where(Adjudication.item_id == item_id)
    rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=ADJUDICATION_COLUMNS)
    frame["value"] = frame["value"].astype(int)
    return frame


def _pairs(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[["metric_id", "config_hash"]])


def _scores(s: Session, dataset: str | None, chosen: Sequence[tuple[str, str]]) -> pd.DataFrame:
    if not chosen:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    hashes = {h for _, h in chosen}
    stmt = (
        select(
            Score.item_id, Score.metric_id, Score.config_hash, Score.value, Score.decision,
            Score.details,
        )
        .join(Item, Item.id == Score.item_id)
        .where(_dataset_filter(s, dataset), Score.config_hash.in_(hashes))
        .order_by(Score.metric_id, Score.item_id)
    )  # fmt: skip
    frame = pd.DataFrame([tuple(r) for r in s.execute(stmt).all()], columns=SCORE_COLUMNS)
    frame = frame[_pairs(frame).isin(list(chosen))]
    frame["value"] = frame["value"].astype(float)
    frame["decision"] = frame["decision"].astype("boolean")
    return frame.reset_index(drop=True)


def load_scores(
    db: repo.Store, dataset: str | None, configs: Sequence[tuple[str, str]]
) -> pd.DataFrame:
    """Every stored score of exactly these ``(metric id, config hash)`` pairs (``SCORE_COLUMNS``).

    Unlike :func:`load_frames`, which keeps one configuration per metric id so analyses never
    count a metric twice, this returns several configurations of one metric side by side:
    calibration reads its inputs this way, whatever other configurations were scored later.
    """
    with session_for(db) as s:
        return _scores(s, dataset, list(configs))


@dataclass(frozen=True)
class Frames:
    """One dataset's data, ready for the pure analysis functions (see the module docstring).

    ``dataset`` is None when every dataset was loaded; ``configs`` lists every scored metric
    configuration with ``used`` marking those in ``scores``.
    """

    dataset: str | None
    items: pd.DataFrame
    labels: pd.DataFrame
    adjudications: pd.DataFrame
    scores: pd.DataFrame
    configs: pd.DataFrame

    @property
    def metric_ids(self) -> list[str]:
        return sorted(self.scores["metric_id"].unique())


def _choose_configs(
    configs: pd.DataFrame, metrics: Sequence[str] | None, config_hashes: Sequence[str] | None
) -> pd.DataFrame:
    chosen = configs.copy()
    if metrics is not None:
        unknown = sorted(set(metrics) - set(chosen["metric_id"]))
        if unknown:
            known = ", ".join(sorted(chosen["metric_id"].unique())) or "none"
            raise NotFoundError(
                f"No scores of metric(s) {', '.join(unknown)} on this data (scored: {known}). "
                "Score the dataset with them first."
            )
        chosen = chosen[chosen["metric_id"].isin(metrics)]
    if config_hashes is not None:
        unknown = sorted(set(config_hashes) - set(chosen["config_hash"]))
        if unknown:
            raise NotFoundError(
                f"No scores with config hash(es) {', '.join(unknown)} on this data; "
                f"known: {', '.join(chosen['config_hash']) or 'none'}."
            )
        chosen = chosen[chosen["config_hash"].isin(config_hashes)]
    # configs is sorted newest first within each metric
    chosen = chosen.drop_duplicates("metric_id")
    out = configs.copy()
    key = list(zip(chosen["metric_id"], chosen["config_hash"], strict=True))
    out["used"] = _pairs(out).isin(key)
    return out


def load_frames(
    db: repo.Store,
    dataset: str | None,
    *,
    metrics: Sequence[str] | None = None,
    config_hashes: Sequence[str] | None = None,
) -> Frames:
    """Read one dataset (``None``: all datasets) out of the store in one read transaction.

    ``metrics`` restricts the scores to some metric ids; ``config_hashes`` picks
    configurations. Per metric id one configuration is kept: the most recently scored of the
    allowed ones. Unknown metric ids or hashes raise :class:`NotFoundError` with the known ones.
    """
    with session_for(db) as s:
        configs = score_configs(s, dataset)
        configs = _choose_configs(configs, metrics, config_hashes)
        chosen = configs.loc[configs["used"], ["metric_id", "config_hash"]]
        return Frames(
            dataset=dataset,
            items=_items(s, dataset),
            labels=_labels(s, dataset),
            adjudications=read_adjudications(s, dataset),
            scores=_scores(s, dataset, list(chosen.itertuples(index=False, name=None))),
            configs=configs,
        )


@dataclass(frozen=True)
class ItemDetail:
    """Everything known about one item: its text, current labels, adjudications and scores."""

    item: dict[str, Any]
    labels: pd.DataFrame
    adjudications: pd.DataFrame
    scores: pd.DataFrame

    @property
    def final(self) -> int | None:
        """The adjudicated label when there is one, else the raters' majority (None: none)."""
        if len(self.adjudications):
            return int(self.adjudications["value"].iloc[-1])
        if self.labels.empty:
            return None
        return int(aggregate_labels(self.labels)["final"].iloc[0])


def item_detail(db: repo.Store, item_id: int) -> ItemDetail:
    """One item with its labels (current, every rater), adjudication history and all scores."""
    with session_for(db) as s:
        row = s.execute(
            select(Item, Dataset.name)
            .join(Dataset, Dataset.id == Item.dataset_id)
            .where(Item.id == int(item_id))
        ).one_or_none()
        if row is None:
            raise NotFoundError(f"No item with id {item_id}.")
        it, dataset = row
        item = {
            "item_id": it.id, "dataset": dataset, "external_id": it.external_id,
            "question": it.question, "references": list(it.references),
            "candidate": it.candidate, "context": it.context, "qa_model": it.qa_model,
        }  # fmt: skip
        stmt = (
            select(*(getattr(Score, c) for c in SCORE_COLUMNS))
            .where(Score.item_id == it.id)
            .order_by(Score.metric_id, Score.created_at.desc())
        )
        scores = pd.DataFrame([tuple(r) for r in s.execute(stmt).all()], columns=SCORE_COLUMNS)
        return ItemDetail(
            item=item,
            labels=_labels(s, None, it.id),
            adjudications=read_adjudications(s, None, it.id),
            scores=scores,
        )
