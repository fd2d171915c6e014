"""The analysis of stored data: load one dataset's frames, run agreement / comparison, adjudicate.

:mod:`qaeval_core.agreement`, :mod:`qaeval_core.compare` and :mod:`qaeval_core.report` are pure
functions on frames; this module is the one place that reads those frames out of the store, so
the app pages and ``qaeval report`` analyse exactly the same data the same way:

- ``items``: ``item_id``, ``dataset``, ``external_id``, ``question``, ``references``,
  ``candidate``, ``context``, ``qa_model``;
- ``labels``: the *current* label per (item, user), imported external raters included, with
  ``rater`` (the user name), ``role``, ``value``, ``rule``, ``note``, ``source``, ``created_at``;
- ``adjudications``: every adjudication row, oldest first (the last row per item is current);
- ``scores``: one configuration per metric id. A metric scored under several configurations
  (changed parameters give a new ``config_hash``) would otherwise be counted twice; the most
  recently written configuration is taken unless the caller names the hashes.

Adjudication is the only write here: one ``INSERT`` in a short ``BEGIN IMMEDIATE`` transaction,
append-only like labels, so the history of who decided what and when is never lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from qaeval_core.agreement import (
    ScorePolicy,
    aggregate_labels,
    alpha_by_group,
    label_count_table,
    pairwise_kappa,
    rater_vs_rest,
)
from qaeval_core.compare import (
    confusion_table,
    join_scores,
    metric_vs_human,
    model_leaderboard,
    point_statistics,
    ranking_changes,
    worst_disagreements,
)
from qaeval_core.errors import ConfigError, NotFoundError, PermissionDenied
from qaeval_core.report import Report, build_report
from qaeval_core.schema import RULES, LabelValue
from qaeval_core.store import repo
from qaeval_core.store.models import Adjudication, Dataset, Item, Label, Score, User, utcnow
from qaeval_core.store.session import session_scope, write_scope

__all__ = [
    "ADJUDICATOR_ROLES",
    "Frames",
    "AgreementTables",
    "MetricView",
    "Leaderboard",
    "AdjudicationRecord",
    "ItemDetail",
    "data_version",
    "score_configs",
    "load_frames",
    "human_verdicts",
    "agreement_tables",
    "metric_statistics",
    "metric_view",
    "leaderboard",
    "dataset_report",
    "adjudicate",
    "adjudication_history",
    "disagreement_queue",
    "item_detail",
    "format_details",
    "label_text",
    "rule_text",
]

#: Roles that may settle disagreements.
ADJUDICATOR_ROLES = ("researcher", "admin")
MAX_REASON_CHARS = 5000

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
def _scope(db: repo.Store, *, write: bool = False) -> Iterator[Session]:
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


# -- words for values --------------------------------------------------------------------------
def label_text(value: Any) -> str:
    """``"2 clearly correct"`` for a label value; empty for a missing one."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    return f"{int(value)} {LabelValue(int(value)).title}"


def rule_text(rule: Any) -> str:
    """``"4 More details"`` for a cited rule; empty when none was cited."""
    if rule is None or rule is pd.NA or (isinstance(rule, float) and np.isnan(rule)):
        return ""
    names = {r.number: r.name for r in RULES}
    return f"{int(rule)} {names.get(int(rule), '')}".strip()


def format_details(details: Any, *, digits: int = 3) -> str:
    """A metric's details dict as one line of plain text (``key: value; ...``).

    Subscores, the best-matching reference or n-gram and an LLM's rationale all fit in a table
    cell this way; nested values are flattened with dotted keys.
    """
    if details is None or details is pd.NA or (isinstance(details, float) and np.isnan(details)):
        return ""
    if not isinstance(details, Mapping):
        return str(details)
    parts: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, float):
            parts.append(f"{prefix}: {value:.{digits}f}")
        elif isinstance(value, list | tuple):
            parts.append(f"{prefix}: {', '.join(map(str, value))}")
        else:
            parts.append(f"{prefix}: {value}")

    walk("", details)
    return "; ".join(parts)


# -- reading the store ---------------------------------------------------------------------------
def data_version(db: repo.Store) -> tuple[Any, ...]:
    """A cheap fingerprint of everything the analysis reads; it changes on every write.

    The app keys its caches on it, so a new label, score or adjudication shows on the next
    rerun while unchanged data is not re-analysed (bootstraps take seconds).
    """
    with _scope(db) as s:
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
    with _scope(db) as s:
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


def _adjudications(s: Session, dataset: str | None, item_id: int | None = None) -> pd.DataFrame:
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
    with _scope(db) as s:
        configs = score_configs(s, dataset)
        configs = _choose_configs(configs, metrics, config_hashes)
        chosen = configs.loc[configs["used"], ["metric_id", "config_hash"]]
        return Frames(
            dataset=dataset,
            items=_items(s, dataset),
            labels=_labels(s, dataset),
            adjudications=_adjudications(s, dataset),
            scores=_scores(s, dataset, list(chosen.itertuples(index=False, name=None))),
            configs=configs,
        )


# -- analyses --------------------------------------------------------------------------------
def human_verdicts(frames: Frames, *, score_policy: ScorePolicy = "mean") -> pd.DataFrame:
    """One human verdict per item (majority, LAVE soft score, adjudication when present)."""
    return aggregate_labels(
        frames.labels, frames.adjudications, frames.items[["item_id"]], score=score_policy
    )


@dataclass(frozen=True)
class AgreementTables:
    """The agreement page's numbers (see :mod:`qaeval_core.agreement` for each column)."""

    alpha: pd.DataFrame
    kappa: pd.DataFrame
    kappa_ordinal: pd.DataFrame
    raters: pd.DataFrame
    label_counts: pd.DataFrame
    summary: dict[str, Any]


def agreement_tables(
    frames: Frames, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> AgreementTables:
    """Alpha overall and per dataset / QA model / rule (bootstrap CIs), kappa per pair on the
    binary label and (linear-weighted) on the 3-point scale, each rater against the rest, and
    how many items have 0, 1, 2, 3+ labels."""
    labels, items = frames.labels, frames.items
    human = human_verdicts(frames)
    judged = human[human["final"].notna()]
    summary = {
        "items": len(items),
        "labels": len(labels),
        "raters": int(labels["rater"].nunique()),
        "multiply_labelled": int((human["n_labels"] >= 2).sum()),
        "disagreements": int(human["disagreement"].sum()),
        "needs_adjudication": int(human["needs_adjudication"].sum()),
        "adjudicated": int(human["adjudicated"].notna().sum()),
        "human_accuracy": float(judged["human_correct"].astype(bool).mean())
        if len(judged)
        else float("nan"),
    }
    return AgreementTables(
        alpha=alpha_by_group(labels, items, n_boot=n_boot, seed=seed, confidence=confidence),
        kappa=pairwise_kappa(labels),
        kappa_ordinal=pairwise_kappa(labels, scale="3-point", weights="linear"),
        raters=rater_vs_rest(labels),
        label_counts=label_count_table(labels, items),
        summary=summary,
    )


def metric_statistics(
    frames: Frames,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    score_policy: ScorePolicy = "mean",
) -> pd.DataFrame:
    """Every loaded metric against the human verdict, with paired bootstrap CIs (long frame)."""
    if frames.scores.empty:
        return pd.DataFrame(
            columns=["metric_id", "statistic", "estimate", "ci_low", "ci_high", "n_items"]
        )
    human = human_verdicts(frames, score_policy=score_policy)
    return metric_vs_human(frames.scores, human, n_boot=n_boot, seed=seed)


@dataclass(frozen=True)
class MetricView:
    """What the metric explorer shows for one metric.

    ``joined``: the metric's scores on human-judged items with the verdict and item columns;
    ``statistics``: point estimates (no bootstrap: the explorer redraws on every click);
    ``confusion``: decision (rows) by human final value (columns); ``worst``: contradictions,
    most confident first, with ``details_text``.
    """

    metric_id: str
    config_hash: str
    joined: pd.DataFrame
    statistics: dict[str, float]
    confusion: pd.DataFrame
    worst: pd.DataFrame


def metric_view(
    frames: Frames,
    metric_id: str,
    *,
    strict: bool = False,
    limit: int | None = 100,
    score_policy: ScorePolicy = "mean",
) -> MetricView:
    """Confusion matrix, score distributions and worst disagreements of one metric."""
    if metric_id not in frames.metric_ids:
        raise NotFoundError(
            f"No scores of metric {metric_id!r} loaded; loaded: "
            f"{', '.join(frames.metric_ids) or 'none'}."
        )
    human = human_verdicts(frames, score_policy=score_policy)
    scores = frames.scores[frames.scores["metric_id"] == metric_id]
    joined = join_scores(scores, human, frames.items)
    has_decision = bool(len(joined)) and joined["decision"].notna().all()
    stats = point_statistics(
        joined["value"].to_numpy(float),
        joined["decision"].to_numpy(dtype=bool) if has_decision else None,
        joined["human_correct"].to_numpy(bool),
        joined["human_score"].to_numpy(float),
    )
    stats["n_items"] = float(len(joined))
    worst = worst_disagreements(
        scores, human, frames.items, metric_id=metric_id, strict=strict, limit=limit
    )
    worst["details_text"] = worst["details"].map(format_details) if len(worst) else []
    config_hash = str(scores["config_hash"].iloc[0]) if len(scores) else ""
    return MetricView(
        metric_id=metric_id,
        config_hash=config_hash,
        joined=joined,
        statistics=stats,
        confusion=confusion_table(scores, human, metric_id),
        worst=worst,
    )


@dataclass(frozen=True)
class Leaderboard:
    """QA-model accuracy per metric next to the humans'.

    ``table``: long (:func:`~qaeval_core.compare.model_leaderboard`); ``wide``: one row per
    (dataset, model) with the human accuracy and one ``<metric>`` accuracy and
    ``<metric> rank`` column per metric; ``ranking``: rank correlation and flipped pairs.
    """

    table: pd.DataFrame
    wide: pd.DataFrame
    ranking: pd.DataFrame


def leaderboard(frames: Frames, *, min_items: int = 1) -> Leaderboard:
    """Rank the QA models by human accuracy and by each metric's decisions."""
    human = human_verdicts(frames)
    table = model_leaderboard(frames.scores, human, frames.items, min_items=min_items)
    if table.empty:
        return Leaderboard(table, pd.DataFrame(), ranking_changes(table))
    keys = ["dataset", "qa_model"]
    base = table.groupby(keys, sort=False).agg(
        n_items=("n_items", "max"),
        human_accuracy=("human_accuracy", "first"),
        human_rank=("human_rank", "first"),
    )
    acc = table.pivot_table(index=keys, columns="metric_id", values="metric_accuracy")
    rank = table.pivot_table(index=keys, columns="metric_id", values="metric_rank")
    rank = rank.round().astype("Int64")
    rank.columns = [f"{c} rank" for c in rank.columns]
    wide = base.join(acc).join(rank)
    order = ["n_items", "human_accuracy", "human_rank"]
    for metric in acc.columns:
        order += [metric, f"{metric} rank"]
    wide = wide[order].reset_index().sort_values(["dataset", "human_rank", "qa_model"])
    return Leaderboard(table, wide.reset_index(drop=True), ranking_changes(table))


def dataset_report(
    db: repo.Store,
    dataset: str,
    *,
    metrics: Sequence[str] | None = None,
    config_hashes: Sequence[str] | None = None,
    score_policy: ScorePolicy = "mean",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Report:
    """:func:`qaeval_core.report.build_report` on one stored dataset (for ``qaeval report``)."""
    frames = load_frames(db, dataset, metrics=metrics, config_hashes=config_hashes)
    report = build_report(
        frames.items,
        frames.labels,
        frames.adjudications,
        frames.scores,
        dataset=dataset,
        score_policy=score_policy,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
    )
    used = frames.configs[frames.configs["used"]]
    report.numbers["settings"]["metric_configs"] = dict(
        zip(used["metric_id"], used["config_hash"], strict=True)
    )
    return report


# -- adjudication ----------------------------------------------------------------------------
@dataclass(frozen=True)
class AdjudicationRecord:
    """One committed adjudication (who decided what, when and why)."""

    id: int
    item_id: int
    user: str
    value: int
    reason: str
    created_at: datetime


def adjudicate(
    db: repo.Store, item_id: int, researcher_name: str, value: int, reason: str
) -> AdjudicationRecord:
    """Record a researcher's final label for an item; earlier decisions stay in the history.

    The account is re-read inside the write transaction, so a user demoted or deactivated since
    logging in cannot adjudicate (:class:`PermissionDenied`). The reason is required: a final
    label overrides the raters in every statistic, and the next researcher must see why.
    """
    try:
        val = int(LabelValue(int(value)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"The final label must be 0 (clearly incorrect), 1 (unclear) or 2 (clearly "
            f"correct); got {value!r}."
        ) from exc
    text = (reason or "").strip()
    if not text:
        raise ConfigError("Give a reason for the final label (it is kept with the decision).")
    if len(text) > MAX_REASON_CHARS:
        raise ConfigError(
            f"The reason has {len(text)} characters; the limit is {MAX_REASON_CHARS}."
        )
    with _scope(db, write=True) as s:
        user = s.execute(select(User).where(User.name == researcher_name)).scalar_one_or_none()
        if user is None or not user.active or user.role not in ADJUDICATOR_ROLES:
            role = "no active account" if user is None or not user.active else user.role
            raise PermissionDenied(
                f"{researcher_name!r} ({role}) cannot adjudicate; only "
                f"{' or '.join(ADJUDICATOR_ROLES)} accounts can."
            )
        if s.get(Item, int(item_id)) is None:
            raise NotFoundError(f"No item with id {item_id}.")
        row = Adjudication(
            item_id=int(item_id), user_id=user.id, value=val, reason=text, created_at=utcnow()
        )
        s.add(row)
        s.flush()
        return AdjudicationRecord(row.id, row.item_id, user.name, val, text, row.created_at)


def adjudication_history(db: repo.Store, item_id: int) -> pd.DataFrame:
    """Every adjudication of an item, oldest first; the last row is the current decision.

    Columns: ``adjudication_id``, ``item_id``, ``user``, ``value``, ``reason``, ``created_at``.
    """
    with _scope(db) as s:
        return _adjudications(s, None, int(item_id))


def _label_summary(rows: pd.DataFrame) -> str:
    parts = []
    for r in rows.itertuples(index=False):
        rule = f", rule {rule_text(r.rule)}" if rule_text(r.rule) else ""
        parts.append(f"{r.rater}: {label_text(r.value)}{rule}")
    return "; ".join(parts)


def disagreement_queue(db: repo.Store, dataset: str, *, pending_only: bool = False) -> pd.DataFrame:
    """Items whose current labels differ, the ones still needing a decision first.

    ``status`` is "tie" (no majority, not adjudicated), "disagreement" (a majority exists, not
    adjudicated) or "adjudicated". ``labels`` holds each rater's label, rule and note as a list
    of dicts, ``summary`` the same as one line of text. ``pending_only`` drops adjudicated items.
    Columns: ``item_id``, ``external_id``, ``qa_model``, ``question``, ``candidate``,
    ``references``, ``n_labels``, ``majority``, ``status``, ``summary``, ``labels``,
    ``adjudicated``, ``adjudicated_by``, ``adjudicated_at``, ``reason``.
    """
    frames = load_frames(db, dataset, metrics=[])
    human = human_verdicts(frames)
    queue = human[human["disagreement"]].copy()
    if pending_only:
        queue = queue[queue["adjudicated"].isna()]
    status = np.where(
        queue["adjudicated"].notna(), "adjudicated", np.where(queue["tie"], "tie", "disagreement")
    )
    queue["status"] = status
    queue["order"] = queue["status"].map({"tie": 0, "disagreement": 1, "adjudicated": 2})
    labels = frames.labels[frames.labels["item_id"].isin(queue["item_id"])]
    by_item = {i: g for i, g in labels.groupby("item_id", sort=False)}
    queue["labels"] = [
        by_item[i][["rater", "role", "value", "rule", "note", "created_at"]].to_dict("records")
        for i in queue["item_id"]
    ]
    queue["summary"] = [_label_summary(by_item[i]) for i in queue["item_id"]]
    last = frames.adjudications.drop_duplicates("item_id", keep="last").set_index("item_id")
    queue["adjudicated_by"] = queue["item_id"].map(last["user"])
    queue["adjudicated_at"] = queue["item_id"].map(last["created_at"])
    queue["reason"] = queue["item_id"].map(last["reason"])
    queue = queue.merge(frames.items, on="item_id", how="left")
    queue = queue.sort_values(["order", "item_id"]).reset_index(drop=True)
    columns = [
        "item_id", "external_id", "qa_model", "question", "candidate", "references", "n_labels",
        "majority", "status", "summary", "labels", "adjudicated", "adjudicated_by",
        "adjudicated_at", "reason",
    ]  # fmt: skip
    return queue[columns]


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
    with _scope(db) as s:
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
            adjudications=_adjudications(s, None, it.id),
            scores=scores,
        )
