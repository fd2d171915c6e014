"""Repairing mojibake on import (``--fix-text``, off by default), with ``ftfy``.

Text that went through a wrong encoding round trip arrives as ``2.45Â billion`` or
``30â€“31``; metrics then compare garbage and annotators read it. ``ftfy`` undoes such round
trips. Only the encoding repairs are switched on (:data:`CONFIG`): HTML entities, quotes,
ligatures, full-width characters, line breaks and Unicode normalisation are left as they came,
because an answer may legitimately contain them and a metric may care.

What is repaired: the question, references, candidate, context, choices, wrong answers and the
raters' notes of an item. The original of every field that changed is kept in the item's
``meta["original_text"]`` (field -> original value), so a repair can be checked and undone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ftfy

from qaeval_core.io.rows import ItemRow

__all__ = ["CONFIG", "ORIGINAL_KEY", "repair_item", "repair_text"]

#: ftfy with only its encoding repairs (see the module docstring).
CONFIG = ftfy.TextFixerConfig(
    unescape_html=False,
    fix_latin_ligatures=False,
    fix_character_width=False,
    uncurl_quotes=False,
    fix_line_breaks=False,
    normalization=None,
    explain=False,
)
#: Where a repaired item keeps the original text of the fields that changed.
ORIGINAL_KEY = "original_text"
_TEXT_FIELDS = ("question", "references", "candidate", "context", "choices", "wrong_answers")


def repair_text(text: str) -> str:
    """``text`` with mojibake undone (``"2.45Â\\xa0billion"`` -> ``"2.45\\xa0billion"``).

    >>> repair_text("30â€“31 May")
    '30–31 May'
    """
    return ftfy.fix_text(text, CONFIG)


def _repair(value: Any) -> Any:
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, list):
        return [_repair(v) for v in value]
    return value


def repair_item(item: ItemRow) -> ItemRow:
    """The item with its texts repaired, the originals of changed fields in
    ``meta["original_text"]``; the same object when nothing needed repair."""
    changes: dict[str, Any] = {}
    originals: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        value = getattr(item, name)
        fixed = _repair(value)
        if fixed != value:
            changes[name], originals[name] = fixed, value
    labels = []
    for k, lab in enumerate(item.labels):
        note = _repair(lab.note)
        if note != lab.note:
            originals[f"labels.{k}.note"] = lab.note
            lab = dataclasses.replace(lab, note=note)
        labels.append(lab)
    if not originals:
        return item
    meta = {**(item.meta or {}), ORIGINAL_KEY: originals}
    return dataclasses.replace(item, **changes, labels=labels, meta=meta)
