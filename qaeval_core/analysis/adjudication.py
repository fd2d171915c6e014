"""Adjudication: the queue of items whose raters disagree, and researchers' final labels.

Adjudication is the only write of :mod:`qaeval_core.analysis`: one ``INSERT`` in a short
``BEGIN IMMEDIATE`` transaction (:func:`qaeval_core.store.add_adjudication`), append-only
like labels, so the history of who decided what and when is never lost. This module checks the
decision (a label value, a reason) and builds the queue with pandas; the store does the SQL.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.analyses import human_verdicts
from qaeval_core.analysis.formatting import label_text, rule_text
from qaeval_core.analysis.frames import load_frames, read_adjudications
from qaeval_core.errors import ConfigError
from qaeval_core.schema import parse_label_value
from qaeval_core.store import AdjudicationRecord

__all__ = [
    "ADJUDICATOR_ROLES",
    "MAX_ADJUDICATION_REASON_CHARS",
    "AdjudicationRecord",
    "adjudicate",
    "adjudication_history",
    "disagreement_queue",
]

#: Roles that may settle disagreements.
ADJUDICATOR_ROLES = ("researcher", "admin")
#: Most characters of an adjudication's reason (a flag's reason has its own, smaller limit).
MAX_ADJUDICATION_REASON_CHARS = 5000


def adjudicate(
    db: store.Store, item_id: int, researcher_name: str, value: int, reason: str
) -> AdjudicationRecord:
    """Record a researcher's final label for an item; earlier decisions stay in the history.

    The account is re-read inside the write transaction, so a user demoted or deactivated since
    logging in cannot adjudicate (:class:`PermissionDenied`). The reason is required: a final
    label overrides the raters in every statistic, and the next researcher must see why.
    """
    val = parse_label_value(value, "The final label")
    text = (reason or "").strip()
    if not text:
        raise ConfigError("Give a reason for the final label (it is kept with the decision).")
    if len(text) > MAX_ADJUDICATION_REASON_CHARS:
        raise ConfigError(
            f"The reason has {len(text)} characters; the limit is {MAX_ADJUDICATION_REASON_CHARS}."
        )
    return store.add_adjudication(db, item_id, researcher_name, val, text, roles=ADJUDICATOR_ROLES)


def adjudication_history(db: store.Store, item_id: int) -> pd.DataFrame:
    """Every adjudication of an item, oldest first; the last row is the current decision.

    Columns: ``adjudication_id``, ``item_id``, ``user``, ``value``, ``reason``, ``created_at``.
    """
    return read_adjudications(db, None, int(item_id))


def _label_summary(rows: pd.DataFrame) -> str:
    parts = []
    for r in rows.itertuples(index=False):
        rule = f", rule {rule_text(r.rule)}" if rule_text(r.rule) else ""
        parts.append(f"{r.rater}: {label_text(r.value)}{rule}")
    return "; ".join(parts)


def disagreement_queue(
    db: store.Store, dataset: str, *, pending_only: bool = False
) -> pd.DataFrame:
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
        "item_id",
        "external_id",
        "qa_model",
        "question",
        "candidate",
        "references",
        "n_labels",
        "majority",
        "status",
        "summary",
        "labels",
        "adjudicated",
        "adjudicated_by",
        "adjudicated_at",
        "reason",
    ]
    return queue[columns]
