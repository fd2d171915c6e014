"""Annotators' queues in the order that helps calibration most (metric disagreement first).

:func:`reorder_queue` ranks a dataset's items with
:func:`qaeval_core.calibrate.active.disagreement_order` on their stored scores, then rewrites the
positions of the *unlabelled* assignments only, in one short write transaction, so
:func:`qaeval_core.store.next_item` (which walks a queue by position) serves the
most informative items first. Labelled assignments, and every label, are left untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from qaeval_core import analysis, store
from qaeval_core.calibrate.active import STRATEGIES, Strategy, disagreement_order
from qaeval_core.calibrate.inputs import FEATURE_ONLY
from qaeval_core.errors import ConfigError

__all__ = ["ReorderResult", "reorder_queue"]


@dataclass(frozen=True)
class ReorderResult:
    """What :func:`reorder_queue` did: unlabelled assignments re-positioned per annotator."""

    dataset: str
    strategy: str
    metrics: list[str]
    scored_items: int
    per_user: dict[str, int] = field(default_factory=dict)

    @property
    def reordered(self) -> int:
        return sum(self.per_user.values())


def _priority(
    db: str | None, dataset: str, metrics: Sequence[str] | None, labelled_last: bool
) -> tuple[dict[int, tuple[int, float]], list[str], int]:
    """Sort key per item (lower first): (tier, -disagreement); and the metrics used."""
    frames = analysis.load_frames(db, dataset)
    scored = frames.scores[~frames.scores["metric_id"].isin(FEATURE_ONLY)]
    if metrics is not None:
        scored = scored[scored["metric_id"].isin(list(metrics))]
    used = sorted(scored["metric_id"].unique())
    if len(used) < 2:
        raise ConfigError(
            f"Dataset {dataset!r} needs scores of at least two metrics to rank by disagreement "
            f"(has: {', '.join(used) or 'none'}). Score it first with two or more metrics, "
            "e.g. em, f1 and contains."
        )
    ranked = disagreement_order(scored)
    judged = set(frames.labels["item_id"].astype(int)) if labelled_last else set()
    key = {
        int(r.item_id): (1 if int(r.item_id) in judged else 0, -float(r.disagreement))
        for r in ranked.itertuples(index=False)
    }
    return key, used, len(ranked)


def reorder_queue(
    db: str | None,
    dataset: str,
    user: str | None = None,
    *,
    strategy: Strategy = "metric_disagreement",
    metrics: Sequence[str] | None = None,
    labelled_last: bool = True,
) -> ReorderResult:
    """Put the unlabelled items of the queues of ``user`` (None: everybody) in ``strategy`` order.

    The ranking is computed first (a read); then one ``BEGIN IMMEDIATE`` transaction reads each
    queue's unlabelled assignments and gives them positions ``start, start + 1, ...`` in ranking
    order, where ``start`` is the smallest position they had. A label saved meanwhile either
    committed before (its assignment is left alone) or after (the item had been re-positioned,
    which changes nothing about the label). With ``labelled_last`` items somebody already
    labelled (overlap items, imported labels) come after never-labelled ones: a calibration
    uses one verdict per item, so a first label helps it more than a second. Unscored items go
    last, in their old order.
    """
    if strategy not in STRATEGIES:
        raise ConfigError(f"Unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}.")
    key, used, n_scored = _priority(db, dataset, metrics, labelled_last)
    last = (2, 0.0)
    per_user: dict[str, int] = {}
    with store.store_scope(db, write=True) as s:  # read and re-position in one transaction
        queues: dict[str, list[tuple[int, int, float]]] = {}
        for slot in store.unlabelled_assignments(s, dataset, user):
            queues.setdefault(slot.user, []).append(
                (slot.assignment_id, slot.item_id, slot.position)
            )
        updates: list[tuple[int, float]] = []
        for name, rows in queues.items():
            start = min(pos for _, _, pos in rows)
            rows.sort(key=lambda r: (*key.get(r[1], last), r[2], r[1]))
            updates += [(aid, start + k) for k, (aid, _, _) in enumerate(rows)]
            per_user[name] = len(rows)
        store.set_assignment_positions(s, updates)
    return ReorderResult(dataset, strategy, used, n_scored, dict(sorted(per_user.items())))
