"""Repairing mojibake on import (``--fix-text``, off by default), with ``ftfy``, only where it
is provable.

Text that went through a wrong encoding round trip arrives as ``2.45Â billion`` or
``30â€“31``; metrics then compare garbage and annotators read it. ``ftfy`` undoes such round
trips, but its heuristic also "repairs" legitimate text that merely looks like mojibake:
``10 Å²`` (square ångströms) became ``10 Ų``, a quoted Portuguese ``“IRMÃ”`` became
``“IRMÔ``, and a zero-width no-break space was deleted. An answer rewritten that way is a
changed answer, so a text is repaired only when the repair is **provable** (:func:`repair_text`):

1. ftfy's own detector flags it (:func:`ftfy.badness.is_bad`), and no layer of the fix raises
   :func:`ftfy.badness.badness`;
2. the fix is a pure encoding round trip (ftfy's explanation is only ``encode`` with a known
   single-byte codec, then ``decode`` as UTF-8; or Latin-1 -> Windows-1252 for C1 control
   characters, which no text uses), with no sloppy byte restoration, no partial
   ("inconsistent") decoding and no deleted characters; and the fixed text mis-decoded again
   gives back exactly the input, every character of it;
3. the evidence is more than one coincidence: at least two mojibake sequences, or one of three
   or more characters (``â€“``), or ``Â``/``Ã`` followed by a Latin-1 sign (``Â°``, ``Ã©``:
   no language writes those; but not a capital word ending in ``Â``), or a sequence decoding
   to a letter inside a word (``MÃ¼ller``, ``WrocÅ‚aw``) or to a capital starting one
   (``Ãœber``). ``Å²`` after a number, or ``Ã”`` at the end of a capitalised word, is one
   two-character coincidence and is left alone.

What is repaired: the question, references, candidate, context, choices, wrong answers and the
raters' notes of an item. The original of every field that changed is kept in the item's
``meta["original_text"]`` (field -> original value), so a repair can be checked and undone,
and :func:`repaired_fields` says which fields changed: the import reports them per row, and
names the references explicitly, since the metrics then compare against the repaired ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import ftfy
import ftfy.bad_codecs  # registers the sloppy-windows-* codecs ftfy names
from ftfy.badness import badness, is_bad

from qaeval_core.io.rows import ItemRow

__all__ = [
    "CONFIG",
    "ORIGINAL_KEY",
    "describe_repairs",
    "repair_item",
    "repair_text",
    "repaired_fields",
]

#: ftfy's encoding repair with every step that is not a strict round trip switched off: byte
#: 0xA0 restored from a space, lossy sequences replaced, inconsistent (partial) decoding,
#: control characters and terminal escapes deleted, surrogates merged. The rest of ftfy
#: (HTML entities, quotes, ligatures, widths, line breaks, normalisation) is off too, because an
#: answer may legitimately contain them and a metric may care.
CONFIG = ftfy.TextFixerConfig(
    unescape_html=False,
    remove_terminal_escapes=False,
    restore_byte_a0=False,
    replace_lossy_sequences=False,
    decode_inconsistent_utf8=False,
    fix_latin_ligatures=False,
    fix_character_width=False,
    uncurl_quotes=False,
    fix_line_breaks=False,
    fix_surrogates=False,
    remove_control_chars=False,
    normalization=None,
    explain=True,
)
#: Single-byte codecs whose UTF-8 mis-decoding ftfy undoes (its ``CHARMAP_ENCODINGS``).
_CODECS = frozenset(ftfy.chardata.CHARMAP_ENCODINGS)
#: Where a repaired item keeps the original text of the fields that changed.
ORIGINAL_KEY = "original_text"
_TEXT_FIELDS = ("question", "references", "candidate", "context", "choices", "wrong_answers")
#: Lead characters whose UTF-8 mojibake is the classic one (U+0080-00FF mis-read as Latin-1 /
#: Windows-1252): followed by a Latin-1 sign they are mojibake in any language.
_CLASSIC_LEADS = frozenset("ÂÃ")


def _sequences(text: str, codec: str) -> list[tuple[int, int]] | None:
    """``(start, length)`` of each multi-byte UTF-8 character in ``text`` encoded with the
    single-byte ``codec`` (one character per byte, so byte offsets are character offsets);
    None when those bytes are not strict UTF-8."""
    data = text.encode(codec)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    found, i = [], 0
    while i < len(data):
        byte = data[i]
        size = 1 if byte < 0x80 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        if size > 1:
            found.append((i, size))
        i += size
    return found


def _convincing(text: str, codec: str) -> bool:
    """Whether ``text`` read as ``codec`` bytes is mojibake beyond one coincidence (rule 3 of
    the module docstring)."""
    seqs = _sequences(text, codec)
    if not seqs:
        return False
    if len(seqs) >= 2 or any(size >= 3 for _, size in seqs):
        return True
    start, _ = seqs[0]
    lead, follow = text[start], text[start + 1]
    before = text[start - 1] if start else ""
    after = text[start + 2] if start + 2 < len(text) else ""
    if lead in _CLASSIC_LEADS and "\xa0" <= follow <= "\xbf":
        # ... unless a capital A-circumflex ends a capitalised word ("MISUTÂ\xa0AJIKKO").
        return not (lead == "Â" and before.isupper())
    decoded = text[start : start + 2].encode(codec).decode("utf-8")
    if not decoded.isalpha():
        return False
    inside_word = before.isalpha() and after.isalpha()  # "MÃ¼ller", "WrocÅ‚aw"
    starts_word = not before.isalpha() and decoded.isupper() and after.islower()  # "Ãœber"
    return inside_word or starts_word


def _pairs(steps: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """ftfy's explanation as ``(codec, target)`` round trips, or None when any step is not a
    pure encode-then-decode with a known codec (rule 2 of the module docstring)."""
    if not steps or len(steps) % 2:
        return None
    pairs = []
    for (act1, codec), (act2, target) in zip(steps[::2], steps[1::2], strict=True):
        utf8 = codec in _CODECS and target == "utf-8"
        c1 = codec == "latin-1" and target == "windows-1252"
        if act1 != "encode" or act2 != "decode" or not (utf8 or c1):
            return None
        pairs.append((codec, target))
    return pairs


def repair_text(text: str) -> str:
    """``text`` with provable mojibake undone, else ``text`` unchanged (module docstring).

    ftfy may undo several layers; each layer must pass the rules on its own, and repair stops
    at the first that does not ("10 Ã…Â²" -> "10 Å²", not on to "10 Ų").

    >>> repair_text("30â€“31 May")
    '30–31 May'
    >>> repair_text("10 Å²")  # square ångströms, not mojibake of "Ų"
    '10 Å²'
    """
    if text.isascii() or not is_bad(text):
        return text
    fixed, explanation = ftfy.fix_encoding_and_explain(text, CONFIG)
    pairs = _pairs([(str(action), str(arg)) for action, arg in explanation or []])
    if fixed == text or pairs is None:
        return text
    current = text
    for codec, target in pairs:
        if target == "utf-8" and not _convincing(current, codec):
            break
        try:
            layer = current.encode(codec).decode(target)
            if layer.encode(target).decode(codec) != current:
                break
        except UnicodeError:
            break
        if badness(layer) > badness(current):
            break
        current = layer
    return current


def _repair(value: Any) -> Any:
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, list):
        return [_repair(v) for v in value]
    return value


def repaired_fields(item: ItemRow) -> list[str]:
    """The fields :func:`repair_item` changed in ``item`` (``labels.K.note`` for a note)."""
    originals = (item.meta or {}).get(ORIGINAL_KEY)
    return list(originals) if isinstance(originals, dict) else []


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


def describe_repairs(repairs: list[tuple[int, list[str]]], *, limit: int = 20) -> str:
    """What ``--fix-text`` changed, for the import's report: the rows and their fields, and
    the rows whose references changed named on their own, because the metrics then compare
    answers against the repaired references (the originals stay in meta.original_text).

    >>> describe_repairs([(1, ["references", "candidate"]), (4, ["question"])])
    'Text repaired in 2 row(s) (originals in meta.original_text): row 1 (references, \
candidate), row 4 (question). References changed in row(s) 1: scores compare against the \
repaired references.'
    """
    if not repairs:
        return "Text repaired in 0 row(s): no field held provable mojibake."
    shown = ", ".join(f"row {row} ({', '.join(fields)})" for row, fields in repairs[:limit])
    more = f", ... and {len(repairs) - limit} more" if len(repairs) > limit else ""
    text = (
        f"Text repaired in {len(repairs)} row(s) (originals in meta.original_text): {shown}{more}."
    )
    refs = [row for row, fields in repairs if "references" in fields]
    if refs:
        listed = ", ".join(map(str, refs[:limit])) + (" ..." if len(refs) > limit else "")
        text += (
            f" References changed in row(s) {listed}: scores compare against the repaired "
            "references."
        )
    return text
