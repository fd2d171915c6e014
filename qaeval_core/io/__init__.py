"""Read, validate and write item files: JSON lines, JSON, CSV/TSV and Parquet.

Files are parsed and validated completely before anything touches the store, so an import is
all-or-nothing and the user sees every bad row at once instead of fixing them one run at a time.

Schema (one row per candidate answer; full description with examples in docs/data-format.md):

============== ======== ==================================================================
field          required what
============== ======== ==================================================================
question       yes      text
references     yes      list of gold answers; a string is split into aliases on ``/``
                        (``alias_separator``); in CSV/Parquet a JSON-encoded list is decoded
candidate      yes      the answer to judge; empty only when the row carries a human label
id             no       unique within the file; default: 16 hex digits of the content hash
context        no       passage the answer should come from
choices        no       list: the options of a multiple-choice item
wrong_answers  no       list: known incorrect answers
model          no       QA system name, or a list of names that gave this exact answer
meta           no       object; unknown columns are kept in it too
human          no       ``{label, score?, scale?, raters: [{rater, label|rating_match|rating|
                        binary, rule?, note?, seconds?}]}`` (the shared-data form)
labels         no       object ``{rater: label}`` (or a list of rater objects as in ``human``)
label          no       one label; it belongs to ``rater`` when that column exists, else to
                        the rater ``gold``
label_scale    no       ``binary`` (0/1, the default) or ``three`` (0/1/2)
============== ======== ==================================================================

Column aliases (first present wins; ``mapping`` / ``--map COLUMN=FIELD`` overrides them) are
in :data:`FIELD_ALIASES`, e.g. ``answer``/``answers``/``gold`` -> references and
``prediction``/``response``/``output`` -> candidate.

Labels are stored on the 0/1/2 scale (clearly incorrect / unclear / clearly correct):
binary 1 -> 2 and 0 -> 0; 1-5 ratings >= 4 -> 2, 3 -> 1, <= 2 -> 0; ``null`` means "not
rated" and is skipped. An adjudicated ``human.label`` with no rater labels becomes the label of
the rater ``gold``; next to rater labels it is kept in ``meta.source_human`` (as is ``score``).

Rows that repeat an id (or, without ids, the same content) describe one item: their labels are
merged (several raters on separate rows). A repeated id with different content is an error.

Limits: every text (question, candidate, each reference/choice/wrong answer, context, note) at
most :data:`MAX_TEXT_CHARS` characters; ids at most :data:`MAX_ID_CHARS`; references (and
choices, wrong answers) at most :data:`MAX_LIST_ITEMS` per item and :data:`MAX_LIST_CHARS`
characters in all. Row numbers are
1-based: the line for JSON lines, the data row (1 = first row after the header) for CSV/TSV,
the record for JSON and Parquet.

The package is split by concern; everything above is importable from here:

- :mod:`~qaeval_core.io.files`: formats, reading files into raw records, writing records;
- :mod:`~qaeval_core.io.formats`: harness logs (lm-eval, lighteval, Inspect, HELM,
  OpenCompass) read as records, found by content; ``read_records`` is its reader of any file;
- :mod:`~qaeval_core.io.cells`: checks of single values (text, lists, JSON cells) and the limits;
- :mod:`~qaeval_core.io.labels`: human judgments of a row converted to the 0/1/2 scale;
- :mod:`~qaeval_core.io.rows`: records validated into :class:`ItemRow` s, and items exported back;
- :mod:`~qaeval_core.io.repair`: mojibake repaired on request (``--fix-text``, ``ftfy``);
- :mod:`~qaeval_core.io.stream`: the import's reader of any source (a file, a folder of harness
  logs), what it detected (:mod:`~qaeval_core.io.import_summary`) and the rows it refused;
- :mod:`~qaeval_core.io.uploads`: uploaded files staged on disk for that same reader.
"""

from __future__ import annotations

from qaeval_core.io.cells import (
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_LIST_CHARS,
    MAX_LIST_ITEMS,
    MAX_TEXT_CHARS,
)
from qaeval_core.io.export import items_to_records
from qaeval_core.io.files import FORMATS, detect_format, write_records
from qaeval_core.io.formats import read_records
from qaeval_core.io.labels import GOLD_RATER, RaterLabel
from qaeval_core.io.repair import repair_item, repair_text
from qaeval_core.io.rows import FIELD_ALIASES, ItemRow, column_mapping, parse_records, read_items
from qaeval_core.io.stream import ON_INVALID, ItemScan, Reject, scan_items, write_rejects
from qaeval_core.io.uploads import staged_uploads

__all__ = [
    "FIELD_ALIASES",
    "FORMATS",
    "GOLD_RATER",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_LIST_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_TEXT_CHARS",
    "ON_INVALID",
    "ItemRow",
    "RaterLabel",
    "Reject",
    "column_mapping",
    "detect_format",
    "items_to_records",
    "parse_records",
    "read_items",
    "read_records",
    "repair_item",
    "repair_text",
    "scan_items",
    "staged_uploads",
    "ItemScan",
    "write_records",
    "write_rejects",
]
