"""What can be exported from a dataset, and the rows of each export.

One list (:data:`~qaeval_core.vocabulary.STORE_EXPORTS`) serves ``qaeval export --what`` and the
app's Data page (with ``final``, which workflows add), so both offer the same exports built the
same way from the readers of the other store modules.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from qaeval_core import io
from qaeval_core.errors import ConfigError
from qaeval_core.store.items.records import list_items
from qaeval_core.store.labels import current_labels, label_history_frame
from qaeval_core.store.scope import Store
from qaeval_core.store.stored_scores import scores
from qaeval_core.vocabulary import STORE_EXPORTS

__all__ = ["STORE_EXPORTS", "export_store_records"]


def export_store_records(
    db: Store, dataset: str, what: str = "items", *, metric_id: str | None = None
) -> list[dict[str, Any]] | pd.DataFrame:
    """The rows of one of the store's exports (:data:`STORE_EXPORTS`): items with their labels,
    current labels, label history, scores."""
    if what == "items":
        return io.items_to_records(list_items(db, dataset), current_labels(db, dataset))
    if what == "labels":
        return current_labels(db, dataset)
    if what == "labels-history":
        return label_history_frame(db, dataset)
    if what == "scores":
        return scores(db, dataset, metric_id=metric_id)
    raise ConfigError(f"Unknown export {what!r}; expected one of {', '.join(STORE_EXPORTS)}.")
