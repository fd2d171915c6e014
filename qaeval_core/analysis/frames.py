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

The SQL lives in the store (:mod:`qaeval_core.store.frames`); this module opens one read
transaction with :func:`~qaeval_core.store.store_scope` (the caller's session, which it
joins, or a new one on the URL; pass what it yields as ``db`` to read several frames
consistently), passes it to the store's readers and does the rest (which
configuration to use, the frames) with pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.agreement import aggregate_labels
from qaeval_core.errors import NotFoundError
from qaeval_core.store import (
    ADJUDICATION_COLUMNS,
    FRAME_ITEM_COLUMNS,
    FRAME_LABEL_COLUMNS,
    FRAME_SCORE_COLUMNS,
    store_scope,
)

__all__ = [
    "ADJUDICATION_COLUMNS",
    "CONFIG_COLUMNS",
    "FRAME_ITEM_COLUMNS",
    "FRAME_LABEL_COLUMNS",
    "FRAME_SCORE_COLUMNS",
    "Frames",
    "ItemDetail",
    "data_version",
    "item_detail",
    "load_frames",
    "load_scores",
    "read_adjudications",
    "score_configs",
]

CONFIG_COLUMNS = ["metric_id", "config_hash", "n_items", "last_scored", "used"]


def data_version(db: store.Store) -> tuple[Any, ...]:
    """A cheap fingerprint of everything the analysis reads; it changes on every write.

    The app keys its caches on it, so a new label, score or adjudication shows on the next
    rerun while unchanged data is not re-analysed (bootstraps take seconds).
    """
    return tuple(str(v) for v in store.data_fingerprint(db))


def score_configs(db: store.Store, dataset: str | None = None) -> pd.DataFrame:
    """Every (metric, configuration) scored on the dataset, newest first within a metric.

    ``used`` marks the configuration :func:`load_frames` takes by default: the one whose scores
    were written last. Returns columns ``metric_id``, ``config_hash``, ``n_items``,
    ``last_scored``, ``used``.
    """
    frame = store.score_config_rows(db, dataset)
    frame = frame.sort_values(
        ["metric_id", "last_scored", "last_id"], ascending=[True, False, False]
    )
    frame["used"] = ~frame.duplicated("metric_id")
    return frame[CONFIG_COLUMNS].reset_index(drop=True)


def read_adjudications(
    s: store.Store, dataset: str | None, item_id: int | None = None
) -> pd.DataFrame:
    """Adjudication rows (oldest first) of a dataset or one item; the adjudication history too."""
    return store.adjudication_rows(s, dataset, item_id)


def _pairs(frame: pd.DataFrame) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[["metric_id", "config_hash"]])


def _scores(
    db: store.Store, dataset: str | None, chosen: Sequence[tuple[str, str]]
) -> pd.DataFrame:
    if not chosen:
        return pd.DataFrame(columns=FRAME_SCORE_COLUMNS)
    frame = store.frame_scores(db, dataset, {h for _, h in chosen})
    frame = frame[_pairs(frame).isin(list(chosen))]
    return frame.reset_index(drop=True)


def load_scores(
    db: store.Store, dataset: str | None, configs: Sequence[tuple[str, str]]
) -> pd.DataFrame:
    """Every stored score of exactly these ``(metric id, config hash)`` pairs
    (``FRAME_SCORE_COLUMNS``).

    Unlike :func:`load_frames`, which keeps one configuration per metric id so analyses never
    count a metric twice, this returns several configurations of one metric side by side:
    calibration reads its inputs this way, whatever other configurations were scored later.
    """
    with store_scope(db) as s:
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
    db: store.Store,
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
    with store_scope(db) as s:
        configs = score_configs(s, dataset)
        configs = _choose_configs(configs, metrics, config_hashes)
        chosen = configs.loc[configs["used"], ["metric_id", "config_hash"]]
        return Frames(
            dataset=dataset,
            items=store.frame_items(s, dataset),
            labels=store.frame_labels(s, dataset),
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


def item_detail(db: store.Store, item_id: int) -> ItemDetail:
    """One item with its labels (current, every rater), adjudication history and all scores."""
    with store_scope(db) as s:
        item = store.item_row(s, int(item_id))
        if item is None:
            raise NotFoundError(f"No item with id {item_id}.")
        return ItemDetail(
            item=item,
            labels=store.frame_labels(s, None, item["item_id"]),
            adjudications=read_adjudications(s, None, item["item_id"]),
            scores=store.item_scores(s, item["item_id"]),
        )
