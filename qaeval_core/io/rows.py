"""Records into items: validate raw records into :class:`ItemRow` s (exports: :mod:`.export`).

This is the schema of :mod:`qaeval_core.io` in code: which columns feed which field
(:data:`FIELD_ALIASES`), what makes a row valid, how repeated ids merge, and the inverse
mapping used by exports so a written file imports back with the same items and labels.
Parsing is all-or-nothing: every bad row is collected into one :class:`ValidationError`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qaeval_core.errors import ConfigError, RowError, ValidationError
from qaeval_core.io.cells import (
    MAX_ID_CHARS,
    BadValue,
    as_text,
    decode_json,
    is_missing,
    record_problems,
    text_list,
)
from qaeval_core.io.files import describe_kind
from qaeval_core.io.formats import read_records
from qaeval_core.io.labels import (
    LABEL_SCALES,
    RATING_SCALE,
    RaterLabel,
    check_rating_scale,
    check_scale,
    labels_of,
)
from qaeval_core.schema import content_hash, join_models

__all__ = [
    "FIELD_ALIASES",
    "ItemRow",
    "column_mapping",
    "item_hash",
    "parse_records",
    "read_items",
]

#: Source columns accepted for each field, in priority order.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "item_id", "external_id"),
    "question": ("question", "query", "prompt"),
    "references": (
        "references",
        "reference",
        "answers",
        "answer",
        "gold",
        "gold_answers",
        "target",
    ),
    "candidate": ("candidate", "prediction", "response", "output", "pred", "model_answer"),
    "context": ("context", "passage"),
    "choices": ("choices", "options"),
    "wrong_answers": ("wrong_answers", "incorrect_answers"),
    "model": ("model", "qa_model", "system"),
    "meta": ("meta", "metadata"),
    "human": ("human",),
    "labels": ("labels",),
    "label": ("label", "human_label", "is_correct"),
    "rater": ("rater", "annotator"),
    "label_scale": ("label_scale",),
    "rating_scale": ("rating_scale",),
}


@dataclass
class ItemRow:
    """One validated item of a file, with its human labels. ``rows``: source rows merged."""

    rows: list[int]
    external_id: str
    question: str
    references: list[str]
    candidate: str
    context: str | None = None
    choices: list[str] | None = None
    wrong_answers: list[str] | None = None
    qa_model: str | None = None
    meta: dict[str, Any] | None = None
    labels: list[RaterLabel] = field(default_factory=list)

    @property
    def row(self) -> int:
        return self.rows[0]

    @property
    def content_key(self) -> str:
        """SHA-256 of the content alone (the same as :func:`qaeval_core.schema.content_hash`)."""
        return content_hash(
            self.question, self.references, self.candidate, self.context, self.qa_model
        )

    @property
    def content_hash(self) -> str:
        """The stored hash: content *and* id, so rows that only share content stay distinct."""
        return item_hash(self.external_id, self.content_key)

    def _same_item(self, other: ItemRow) -> bool:
        return (self.content_key, self.choices, self.wrong_answers) == (
            other.content_key,
            other.choices,
            other.wrong_answers,
        )


def item_hash(external_id: str, content_key: str) -> str:
    """The ``items.content_hash`` value: unique per dataset because the id is part of it."""
    return hashlib.sha256(f"{external_id}\x1f{content_key}".encode()).hexdigest()


# -- validation ----------------------------------------------------------------------------


def _resolve(
    rec: Mapping[str, Any], mapping: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pick the source column of each field; unused non-empty columns become meta extras."""
    fields: dict[str, Any] = {}
    used: set[str] = set()
    for name, aliases in FIELD_ALIASES.items():
        columns = [c for c, f in mapping.items() if f == name]
        columns += [a for a in aliases if a not in mapping]
        for column in columns:
            if column in rec and not is_missing(rec[column]):
                value = rec[column]
                used.add(column)
                if name not in ("candidate", "question", "references") and value == "":
                    break  # an empty CSV cell of an optional field means "none"
                fields[name] = value
                break
    extras = {k: v for k, v in rec.items() if k not in used and not is_missing(v) and v != "" and k}
    return fields, extras


def parse_record(
    rec: Mapping[str, Any],
    mapping: Mapping[str, str],
    scale: str,
    sep: str | None,
    row: int,
    rating_scale: str = RATING_SCALE,
) -> ItemRow:
    """One record as an item, or :class:`BadValue` naming every problem of the row."""
    problems: list[str] = []

    def check(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BadValue as exc:
            problems.append(str(exc))
            return None

    if unsafe := record_problems(rec):  # nothing below may walk such a value
        raise BadValue("; ".join(unsafe))
    fields, extras = _resolve(rec, mapping)

    def required(name: str) -> Any:
        if name not in fields:
            looked = [c for c, f in mapping.items() if f == name] + list(FIELD_ALIASES[name])
            problems.append(
                f"missing field {name!r} (looked for {', '.join(looked)}; "
                f"map another column to it with mapping {{COLUMN: {name!r}}})"
            )
            return None
        return fields[name]

    question = required("question")
    if question is not None:
        question = check(as_text, question, "question")
        if question is not None and not question.strip():
            problems.append("question is empty")
    references = required("references")
    if references is not None:
        references = check(text_list, references, "references", sep=sep)
        if references == []:
            problems.append("references is empty (need at least one gold answer)")
    candidate = required("candidate")
    if candidate is not None:
        candidate = check(as_text, candidate, "candidate")
    context = None if "context" not in fields else check(as_text, fields["context"], "context")
    choices, wrong = fields.get("choices"), fields.get("wrong_answers")
    choices = None if choices is None else check(text_list, choices, "choices", sep=None)
    wrong = None if wrong is None else check(text_list, wrong, "wrong_answers", sep=None)
    model = fields.get("model")
    if model is not None:
        model = decode_json(model, "model", want=list)
        if isinstance(model, list | tuple):
            model = check(text_list, model, "model", sep=None)
        else:
            model = check(as_text, model, "model")
        model = join_models(model) if model is not None else None
    meta = fields.get("meta")
    if meta is not None:
        meta = check(decode_json, meta, "meta", want=dict)
        if meta is not None and not isinstance(meta, dict):
            problems.append(f"meta must be an object, got {describe_kind(meta)}")
            meta = None
    ext_id = fields.get("id")
    if ext_id is not None:
        ext_id = check(as_text, ext_id, "id", limit=MAX_ID_CHARS)
        ext_id = ext_id.strip() if ext_id is not None else None
    row_scale = scale
    if fields.get("label_scale") is not None:
        row_scale = check(check_scale, fields["label_scale"]) or scale
    if fields.get("rater") is not None and fields.get("label") is None:
        problems.append("a rater column needs a label column next to it")
    if fields.get("rating_scale") is not None:
        rating_scale = check(check_rating_scale, fields["rating_scale"]) or rating_scale
    labels, summary = check(labels_of, fields, row_scale, rating_scale) or ([], {})
    if candidate is not None and not candidate.strip() and not labels:
        problems.append(
            "candidate is empty (an empty answer is only accepted with a human label on it)"
        )
    if problems:
        raise BadValue("; ".join(problems))
    meta = {**extras, **(meta or {})}
    if summary:
        meta["source_human"] = summary
    item = ItemRow(
        rows=[row],
        external_id=ext_id or "",
        question=question,
        references=references,
        candidate=candidate,
        context=context or None,
        choices=choices,
        wrong_answers=wrong,
        qa_model=model,
        meta=meta or None,
        labels=labels,
    )
    if not item.external_id:
        item.external_id = item.content_key[:16]
    return item


def merge_repeated_row(first: ItemRow, other: ItemRow) -> str | None:
    """Fold a repeated row into the first; the reason when they cannot be the same item."""
    if not first._same_item(other):
        return (
            f"duplicate id {other.external_id!r} (first at row {first.row}) with different content"
        )
    have = {label.rater: label for label in first.labels}
    for label in other.labels:
        seen = have.get(label.rater)
        if seen is None:
            first.labels.append(label)
            have[label.rater] = label
        elif seen.value != label.value:
            return (
                f"rater {label.rater!r} labels id {other.external_id!r} {label.value} here but "
                f"{seen.value} at row {first.row}"
            )
    first.rows.append(other.row)
    new_summary = (other.meta or {}).get("source_human")
    old_summary = (first.meta or {}).get("source_human")
    if new_summary is not None and new_summary != old_summary:
        kept = old_summary if isinstance(old_summary, list) else [old_summary]
        first.meta = {**(first.meta or {}), "source_human": [*kept, new_summary]}
    return None


def column_mapping(pairs: Iterable[str]) -> dict[str, str]:
    """The ``mapping`` of :func:`read_items` from ``COLUMN=FIELD`` pairs as people type them
    (the CLI's ``--map``, the Data page's field split at commas).

    Spaces around either side are dropped; a pair without ``=`` or with an empty side, and a
    column named twice (which field should it feed?), are refused by a :class:`ConfigError`
    naming ``mapping``. Whether each FIELD exists is :func:`read_items`' check.

    >>> column_mapping(["gold = references", "answer=candidate"])
    {'gold': 'references', 'answer': 'candidate'}
    """
    mapping: dict[str, str] = {}
    for pair in pairs:
        column, sep, name = str(pair).partition("=")
        if not sep or not column.strip() or not name.strip():
            raise ConfigError(
                f"mapping expects COLUMN=FIELD pairs (e.g. gold_answer=references), got {pair!r}.",
                param="mapping",
            )
        if column.strip() in mapping:
            raise ConfigError(f"mapping names column {column.strip()!r} twice.", param="mapping")
        mapping[column.strip()] = name.strip()
    return mapping


def check_options(
    mapping: Mapping[str, str] | None, label_scale: str, rating_scale: str
) -> tuple[dict[str, str], str]:
    """The column mapping and rating scale checked (a :class:`ConfigError` when wrong)."""
    mapping = dict(mapping or {})
    for column, name in mapping.items():
        if name not in FIELD_ALIASES:
            raise ConfigError(
                f"Cannot map column {column!r} to {name!r}: fields are {', '.join(FIELD_ALIASES)}."
            )
    if label_scale not in LABEL_SCALES:
        raise ConfigError(
            f"label_scale must be one of {', '.join(LABEL_SCALES)}, got {label_scale!r}.",
            param="label_scale",
        )
    try:
        return mapping, check_rating_scale(rating_scale)
    except BadValue as exc:
        raise ConfigError(f"{exc}.", param="rating_scale") from None


def parse_records(
    records: Iterable[Mapping[str, Any]] | Iterable[tuple[int, Mapping[str, Any]]],
    *,
    source: str = "<records>",
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    read_errors: Sequence[RowError] = (),
    rating_scale: str = RATING_SCALE,
) -> list[ItemRow]:
    """Validate records into items; raises :class:`ValidationError` listing every bad row.

    ``records`` are mappings (numbered from 1) or ``(row, mapping)`` pairs. ``mapping`` maps a
    source column to a field name, e.g. ``{"gold_answer": "references"}``. ``rating_scale``
    (``"1-5"``, ``"0-2"``...) is the scale of the raters' ``rating``/``rating_match`` values.
    """
    mapping, rating_scale = check_options(mapping, label_scale, rating_scale)
    errors, sep = list(read_errors), alias_separator or None
    by_id: dict[str, ItemRow] = {}
    for number, entry in enumerate(records, start=1):
        row, rec = entry if isinstance(entry, tuple) else (number, entry)
        try:
            item = parse_record(rec, mapping, label_scale, sep, row, rating_scale)
        except BadValue as exc:
            errors.append(RowError(row, str(exc)))
            continue
        first = by_id.get(item.external_id)
        if first is None:
            by_id[item.external_id] = item
        elif (reason := merge_repeated_row(first, item)) is not None:
            errors.append(RowError(row, reason))
    if errors:
        raise ValidationError(source, sorted(errors, key=lambda e: e.row))
    return list(by_id.values())


def read_items(
    source: str | os.PathLike[str] | bytes,
    *,
    fmt: str | None = None,
    name: str | None = None,
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    rating_scale: str = RATING_SCALE,
) -> list[ItemRow]:
    """Read and validate a file (path or bytes) into items; nothing partial on errors."""
    records, read_errors = read_records(source, fmt=fmt, name=name)
    label = name or (os.fspath(source) if not isinstance(source, bytes | bytearray) else "<upload>")
    if not records and not read_errors:
        raise ConfigError(f"{label} contains no rows; nothing to import.")
    return parse_records(
        records,
        source=label,
        mapping=mapping,
        label_scale=label_scale,
        alias_separator=alias_separator,
        read_errors=read_errors,
        rating_scale=rating_scale,
    )
