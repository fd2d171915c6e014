"""What every import path writes: the ``items`` columns (:func:`item_values`), the label
source of imported labels, and the chunk size of an import's short write transactions.

An import runs its own transactions: a new dataset is written under a hidden name and renamed
at the end (:mod:`.import_pending`); an existing dataset gets its rows staged in such a hidden
dataset and moved in a chunk per transaction (:mod:`.import_existing`). (An import joining a
caller's transaction, staged in temporary tables and copied in at the end, held SQLite's write
lock for the whole file, 12.8 s of waiting saves for 200,000 rows, issue 21; it had no caller
left and is gone.)
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

__all__ = ["IMPORT_CHUNK_ROWS", "IMPORT_SOURCE", "ITEM_COLUMNS_WRITTEN", "item_values"]

#: ``labels.source`` of labels that came from a file.
IMPORT_SOURCE = "import"


#: Rows per short write transaction of an import: written into a new dataset, adopted into an
#: existing one or deleted with a discarded import. (An import into an existing dataset reads
#: and stages :data:`~.import_existing.EXISTING_IMPORT_CHUNK_ROWS` items at a time.)
IMPORT_CHUNK_ROWS = 5000


#: The ``items`` columns an import writes.
ITEM_COLUMNS_WRITTEN = (
    "external_id",
    "question",
    "references",
    "candidate",
    "context",
    "choices",
    "wrong_answers",
    "qa_model",
    "meta",
    "content_hash",
)
_ITEM_VALUES = attrgetter(*ITEM_COLUMNS_WRITTEN)


def item_values(row: Any) -> dict[str, Any]:
    """The ``items`` columns an import writes, from a parsed row (:class:`io.ItemRow`); the one
    mapping shared by the new-dataset and the existing-dataset import paths."""
    return dict(zip(ITEM_COLUMNS_WRITTEN, _ITEM_VALUES(row), strict=True))
