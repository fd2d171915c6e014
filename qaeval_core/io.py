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
most :data:`MAX_TEXT_CHARS` characters; ids at most :data:`MAX_ID_CHARS`. Row numbers are
1-based: the line for JSON lines, the data row (1 = first row after the header) for CSV/TSV,
the record for JSON and Parquet.
"""

from __future__ import annotations

import csv
import hashlib
import io as _stdio
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from qaeval_core.errors import ConfigError, RowError, ValidationError
from qaeval_core.schema import Item, content_hash, join_models

__all__ = [
    "FIELD_ALIASES",
    "FORMATS",
    "GOLD_RATER",
    "MAX_ID_CHARS",
    "MAX_TEXT_CHARS",
    "ItemRow",
    "RaterLabel",
    "detect_format",
    "items_to_records",
    "parse_records",
    "read_items",
    "read_records",
    "write_records",
]

MAX_TEXT_CHARS = 100_000
MAX_ID_CHARS = 300
MAX_RATER_CHARS = 200
GOLD_RATER = "gold"
LabelScale = Literal["binary", "three"]
LABEL_SCALES = ("binary", "three")

#: Input/output formats by file suffix.
FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}

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
}

_FORMAT_HINT = " (or name the format: --format jsonl|json|csv|tsv|parquet)"
_SURROGATE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class RaterLabel:
    """One rater's judgment on the 0/1/2 scale, as read from a file."""

    rater: str
    value: int
    rule: int | None = None
    note: str | None = None
    seconds: float | None = None


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

    def to_item(self, dataset: str | None = None) -> Item:
        return Item(
            question=self.question,
            references=tuple(self.references),
            candidate=self.candidate,
            context=self.context,
            choices=self.choices,
            wrong_answers=self.wrong_answers,
            id=self.external_id,
            dataset=dataset,
            qa_model=self.qa_model,
            meta=dict(self.meta or {}),
        )

    def _same_item(self, other: ItemRow) -> bool:
        return (self.content_key, self.choices, self.wrong_answers) == (
            other.content_key,
            other.choices,
            other.wrong_answers,
        )


def item_hash(external_id: str, content_key: str) -> str:
    """The ``items.content_hash`` value: unique per dataset because the id is part of it."""
    return hashlib.sha256(f"{external_id}\x1f{content_key}".encode()).hexdigest()


# -- reading -------------------------------------------------------------------------------


def detect_format(path: str | os.PathLike[str], *, hint: str = "") -> str:
    """The format named by the file's suffix; a :class:`ConfigError` for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(
            f"Cannot tell the format of {os.fspath(path)!r} from its suffix "
            f"{suffix or '(none)'!r}: use one of {', '.join(sorted(FORMATS))}{hint}."
        )
    return FORMATS[suffix]


def _check_format(fmt: str) -> str:
    fmt = fmt.lower().lstrip(".")
    if fmt in ("ndjson",):
        return "jsonl"
    if fmt not in set(FORMATS.values()):
        raise ConfigError(
            f"Unknown format {fmt!r}: expected one of {', '.join(sorted(set(FORMATS.values())))}."
        )
    return fmt


def read_records(
    source: str | os.PathLike[str] | bytes, *, fmt: str | None = None, name: str | None = None
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    """Raw records with their 1-based row numbers, and the rows that could not be decoded.

    ``source`` is a path or the file's bytes (then give ``fmt`` or a ``name`` with a suffix).
    """
    if isinstance(source, bytes | bytearray):
        label = name or "<upload>"
        if fmt is None:
            if name is None:
                raise ConfigError("Reading bytes needs fmt= or a file name with a suffix.")
            fmt = detect_format(name, hint=_FORMAT_HINT)
        data = bytes(source)
    else:
        label = os.fspath(source)
        fmt = detect_format(label, hint=_FORMAT_HINT) if fmt is None else fmt
        try:
            data = Path(label).read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"No such file: {label}") from None
        except OSError as exc:
            raise ConfigError(f"Cannot read {label}: {exc.strerror or exc}") from None
    fmt = _check_format(fmt)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if fmt == "jsonl":
        return _read_jsonl(data)
    if fmt == "json":
        return _read_json(data, label)
    if fmt in ("csv", "tsv"):
        return _read_csv(data, "\t" if fmt == "tsv" else ",")
    return _read_parquet(data, label)


def _utf8_error(exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.start + 1].hex()
    return f"undecodable bytes: 0x{bad} at byte {exc.start} is not valid UTF-8 (save as UTF-8)"


def _read_jsonl(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[RowError] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            errors.append(RowError(number, _utf8_error(exc)))
            continue
        if not line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, f"invalid JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(value, dict):
            errors.append(RowError(number, f"expected a JSON object, got {_kind(value)}"))
            continue
        records.append((number, value))
    return records, errors


def _read_json(data: bytes, label: str) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: {_utf8_error(exc)}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{label}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(value, list):
        raise ConfigError(f"{label}: expected a JSON array of objects, got {_kind(value)}.")
    records, errors = [], []
    for number, rec in enumerate(value, start=1):
        if isinstance(rec, dict):
            records.append((number, rec))
        else:
            errors.append(RowError(number, f"expected a JSON object, got {_kind(rec)}"))
    return records, errors


def _read_csv(
    data: bytes, delimiter: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    # surrogateescape keeps undecodable bytes as markers so each bad row can be reported.
    text = data.decode("utf-8", errors="surrogateescape")
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.reader(_stdio.StringIO(text, newline=""), delimiter=delimiter)
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[RowError] = []
    try:
        header = next(reader, None)
        if header is None:
            return records, errors
        if any(_SURROGATE.search(h) for h in header):
            raise ConfigError("The header row has undecodable bytes: save the file as UTF-8.")
        header = [h.strip() for h in header]
        for number, values in enumerate(reader, start=1):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                errors.append(
                    RowError(number, f"has {len(values)} values but the header has {len(header)}")
                )
                continue
            bad = next((v for v in values if _SURROGATE.search(v)), None)
            if bad is not None:
                raw = bad.encode("utf-8", errors="surrogateescape")
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    errors.append(RowError(number, _utf8_error(exc)))
                continue
            records.append((number, dict(zip(header, values, strict=True))))
    except csv.Error as exc:
        errors.append(RowError(len(records) + len(errors) + 1, f"unreadable CSV: {exc}"))
    return records, errors


def _read_parquet(
    data: bytes, label: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"Cannot read {label} as Parquet: {exc}") from None
    return [(i, rec) for i, rec in enumerate(table.to_pylist(), start=1)], []


# -- validation ----------------------------------------------------------------------------


class _Bad(Exception):
    """A reason why one value of a row is invalid."""


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        bool: "a boolean",
        str: "a string",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Bad(f"{what}: {_utf8_error(exc)}") from None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _Bad(f"{what} must be text, got {_kind(value)}")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        raise _Bad(f"{what} has {len(text):,} characters; the limit is {limit:,}")
    return text


def _decode_json(value: Any, what: str, *, want: type) -> Any:
    """Decode a JSON-encoded value (CSV/Parquet cells); plain strings come back unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            if want is dict:
                raise _Bad(f"{what} is not valid JSON: {exc.msg}") from None
            return value
        if isinstance(decoded, want):
            return decoded
    return value


def _text_list(value: Any, what: str, *, sep: str | None) -> list[str]:
    value = _decode_json(value, what, want=list)
    if isinstance(value, str):
        parts = value.split(sep) if sep else [value]
        items = [p.strip() for p in parts if p.strip()]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        items = [_as_text(value, what)]
    elif isinstance(value, list | tuple):
        items = []
        for i, v in enumerate(value, start=1):
            if _missing(v):
                raise _Bad(f"{what}[{i}] is null")
            text = _as_text(v, f"{what}[{i}]")
            if not text.strip():
                raise _Bad(f"{what}[{i}] is empty")
            items.append(text)
    else:
        raise _Bad(f"{what} must be a list of strings (or one string), got {_kind(value)}")
    for i, text in enumerate(items, start=1):
        if len(text) > MAX_TEXT_CHARS:
            raise _Bad(f"{what}[{i}] has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}")
    return items


def _label_value(value: Any, scale: str, what: str) -> int:
    original = value
    if isinstance(value, str):
        s = value.strip().lower()
        value = {"true": 1, "false": 0, "yes": 1, "no": 0}.get(s, s)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise _Bad(f"{what} {original!r} is not a number") from None
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise _Bad(f"{what} must be a number, got {_kind(original)} {original!r}")
    if scale == "binary":
        if value not in (0, 1):
            raise _Bad(
                f"{what} {original!r} is not binary 0/1 (for 0/1/2 labels use label_scale three"
                ", --label-scale three on the command line)"
            )
        return 2 if value == 1 else 0
    if value not in (0, 1, 2):
        raise _Bad(f"{what} {original!r} is not 0, 1 or 2")
    return value


def _rating_value(value: Any, what: str) -> int:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise _Bad(f"{what} {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 5:
        raise _Bad(f"{what} must be a 1-5 rating, got {value!r}")
    return 2 if value >= 4 else 0 if value <= 2 else 1


def _check_scale(scale: Any, what: str = "label_scale") -> str:
    if scale not in LABEL_SCALES:
        raise _Bad(f"{what} must be one of {', '.join(LABEL_SCALES)}, got {scale!r}")
    return str(scale)


def _rater_entry(entry: Any, scale: str, what: str) -> RaterLabel | None:
    if not isinstance(entry, dict):
        raise _Bad(f"{what} must be an object with a rater and a label, got {_kind(entry)}")
    name = next(
        (entry[k] for k in ("rater", "annotator", "name") if not _missing(entry.get(k))), None
    )
    if name is None:
        raise _Bad(f"{what} has no rater name")
    name = _as_text(name, f"{what}.rater", limit=MAX_RATER_CHARS).strip()
    if not name:
        raise _Bad(f"{what}.rater is empty")
    if not _missing(entry.get("label")):
        value = _label_value(entry["label"], scale, f"{what}.label")
    elif not _missing(entry.get("rating_match")):
        value = _rating_value(entry["rating_match"], f"{what}.rating_match")
    elif not _missing(entry.get("rating")):
        value = _rating_value(entry["rating"], f"{what}.rating")
    elif not _missing(entry.get("binary")):
        value = _label_value(entry["binary"], "binary", f"{what}.binary")
    else:
        return None  # listed but did not rate this item
    rule = entry.get("rule")
    if not _missing(rule):
        if isinstance(rule, float) and rule.is_integer():
            rule = int(rule)
        if isinstance(rule, bool) or not isinstance(rule, int) or not 1 <= rule <= 7:
            raise _Bad(f"{what}.rule must be a rule number 1-7, got {rule!r}")
    note = entry.get("note")
    note = None if _missing(note) or note == "" else _as_text(note, f"{what}.note")
    seconds = entry.get("seconds")
    if not _missing(seconds):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise _Bad(f"{what}.seconds must be a non-negative number, got {seconds!r}")
        seconds = float(seconds)
    return RaterLabel(name, value, None if _missing(rule) else rule, note, seconds)


def _labels_of(fields: dict[str, Any], scale: str) -> tuple[list[RaterLabel], dict[str, Any]]:
    """Every rater label of a row, and what else ``human`` said (kept in the item's meta)."""
    labels: list[RaterLabel] = []
    summary: dict[str, Any] = {}
    human = fields.get("human")
    if human is not None:
        human = _decode_json(human, "human", want=dict)
        if not isinstance(human, dict):
            raise _Bad(f"human must be an object like {{label, raters}}, got {_kind(human)}")
        hscale = (
            scale if _missing(human.get("scale")) else _check_scale(human["scale"], "human.scale")
        )
        raters = human.get("raters")
        if not _missing(raters):
            if not isinstance(raters, list):
                raise _Bad(f"human.raters must be a list, got {_kind(raters)}")
            for i, entry in enumerate(raters, start=1):
                label = _rater_entry(entry, hscale, f"human.raters[{i}]")
                if label is not None:
                    labels.append(label)
        summary = {
            k: v for k, v in human.items() if k not in ("raters", "scale") and not _missing(v)
        }
        if not labels and "label" in summary:
            labels.append(
                RaterLabel(GOLD_RATER, _label_value(human["label"], hscale, "human.label"))
            )
            del summary["label"]
    extra = fields.get("labels")
    if extra is not None:
        extra = _decode_json(extra, "labels", want=dict)
        if isinstance(extra, str):
            extra = _decode_json(extra, "labels", want=list)
        if isinstance(extra, dict):
            for rater, value in extra.items():
                if not _missing(value):
                    entry = {"rater": rater, "label": value}
                    labels.append(_rater_entry(entry, scale, f"labels[{rater!r}]"))  # type: ignore[arg-type]
        elif isinstance(extra, list):
            for i, entry in enumerate(extra, start=1):
                label = _rater_entry(entry, scale, f"labels[{i}]")
                if label is not None:
                    labels.append(label)
        else:
            raise _Bad(f"labels must be an object {{rater: label}}, got {_kind(extra)}")
    if fields.get("label") is not None:
        rater = fields.get("rater")
        name = GOLD_RATER if rater is None else _as_text(rater, "rater", limit=MAX_RATER_CHARS)
        if not name.strip():
            raise _Bad("rater is empty")
        labels.append(RaterLabel(name.strip(), _label_value(fields["label"], scale, "label")))
    # One label per rater and item: repeats must agree.
    unique: dict[str, RaterLabel] = {}
    for label in labels:
        seen = unique.get(label.rater)
        if seen is not None and seen.value != label.value:
            raise _Bad(
                f"rater {label.rater!r} has two different labels ({seen.value}, {label.value})"
            )
        unique.setdefault(label.rater, label)
    return list(unique.values()), summary


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
            if column in rec and not _missing(rec[column]):
                value = rec[column]
                used.add(column)
                if name not in ("candidate", "question", "references") and value == "":
                    break  # an empty CSV cell of an optional field means "none"
                fields[name] = value
                break
    extras = {k: v for k, v in rec.items() if k not in used and not _missing(v) and v != "" and k}
    return fields, extras


def _parse_one(
    rec: Mapping[str, Any],
    mapping: Mapping[str, str],
    scale: str,
    sep: str | None,
    row: int,
) -> ItemRow:
    fields, extras = _resolve(rec, mapping)
    problems: list[str] = []

    def check(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _Bad as exc:
            problems.append(str(exc))
            return None

    def required(name: str) -> Any:
        if name not in fields:
            looked = [c for c, f in mapping.items() if f == name] + list(FIELD_ALIASES[name])
            problems.append(
                f"missing field {name!r} (looked for {', '.join(looked)}; "
                f"map another column with --map COLUMN={name})"
            )
            return None
        return fields[name]

    question = required("question")
    if question is not None:
        question = check(_as_text, question, "question")
        if question is not None and not question.strip():
            problems.append("question is empty")
    references = required("references")
    if references is not None:
        references = check(_text_list, references, "references", sep=sep)
        if references == []:
            problems.append("references is empty (need at least one gold answer)")
    candidate = required("candidate")
    if candidate is not None:
        candidate = check(_as_text, candidate, "candidate")
    context = None if "context" not in fields else check(_as_text, fields["context"], "context")
    choices = (
        None
        if "choices" not in fields
        else check(_text_list, fields["choices"], "choices", sep=None)
    )
    wrong = (
        None
        if "wrong_answers" not in fields
        else check(_text_list, fields["wrong_answers"], "wrong_answers", sep=None)
    )
    model = fields.get("model")
    if model is not None:
        model = _decode_json(model, "model", want=list)
        if isinstance(model, list | tuple):
            model = check(_text_list, model, "model", sep=None)
        else:
            model = check(_as_text, model, "model")
        model = join_models(model) if model is not None else None
    meta = fields.get("meta")
    if meta is not None:
        meta = check(_decode_json, meta, "meta", want=dict)
        if meta is not None and not isinstance(meta, dict):
            problems.append(f"meta must be an object, got {_kind(meta)}")
            meta = None
    ext_id = fields.get("id")
    if ext_id is not None:
        ext_id = check(_as_text, ext_id, "id", limit=MAX_ID_CHARS)
        ext_id = ext_id.strip() if ext_id is not None else None
    row_scale = scale
    if fields.get("label_scale") is not None:
        row_scale = check(_check_scale, fields["label_scale"]) or scale
    if fields.get("rater") is not None and fields.get("label") is None:
        problems.append("a rater column needs a label column next to it")
    labels, summary = check(_labels_of, fields, row_scale) or ([], {})
    if candidate is not None and not candidate.strip() and not labels:
        problems.append(
            "candidate is empty (an empty answer is only accepted with a human label on it)"
        )
    if problems:
        raise _Bad("; ".join(problems))
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


def _merge(first: ItemRow, other: ItemRow) -> str | None:
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


def parse_records(
    records: Iterable[Mapping[str, Any]] | Iterable[tuple[int, Mapping[str, Any]]],
    *,
    source: str = "<records>",
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    read_errors: Sequence[RowError] = (),
) -> list[ItemRow]:
    """Validate records into items; raises :class:`ValidationError` listing every bad row.

    ``records`` are mappings (numbered from 1) or ``(row, mapping)`` pairs. ``mapping`` maps a
    source column to a field name, e.g. ``{"gold_answer": "references"}``.
    """
    mapping = dict(mapping or {})
    for column, name in mapping.items():
        if name not in FIELD_ALIASES:
            raise ConfigError(
                f"Cannot map column {column!r} to {name!r}: fields are {', '.join(FIELD_ALIASES)}."
            )
    if label_scale not in LABEL_SCALES:
        raise ConfigError(
            f"label_scale must be one of {', '.join(LABEL_SCALES)}, got {label_scale!r}."
        )
    errors = list(read_errors)
    by_id: dict[str, ItemRow] = {}
    for number, entry in enumerate(records, start=1):
        row, rec = entry if isinstance(entry, tuple) else (number, entry)
        try:
            item = _parse_one(rec, mapping, label_scale, alias_separator or None, row)
        except _Bad as exc:
            errors.append(RowError(row, str(exc)))
            continue
        first = by_id.get(item.external_id)
        if first is None:
            by_id[item.external_id] = item
        elif (reason := _merge(first, item)) is not None:
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
    )


# -- writing -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-friendly Python value (numpy scalars, NaN/NA, timestamps handled)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _plain(value.tolist())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _records_of(data: Any) -> list[dict[str, Any]]:
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        data = data.to_dict(orient="records")
    return [{str(k): _plain(v) for k, v in rec.items()} for rec in data]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def write_records(
    records: Iterable[Mapping[str, Any]] | Any,
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
) -> Path:
    """Write records (or a DataFrame) to ``path``; the format comes from the suffix.

    Lists and objects become JSON strings in CSV/TSV (objects also in Parquet), which the
    readers decode again, so exported files import back unchanged. The file is written to a
    temporary name and renamed, so a failed export never leaves half a file.
    """
    target = Path(path)
    fmt = _check_format(fmt) if fmt else detect_format(target)
    rows = _records_of(records)
    columns: list[str] = []
    for rec in rows:
        columns += [k for k in rec if k not in columns]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if fmt in ("jsonl", "json"):
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                if fmt == "jsonl":
                    for rec in rows:
                        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                else:
                    json.dump(rows, fh, ensure_ascii=False, indent=1)
        elif fmt in ("csv", "tsv"):
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                writer = csv.writer(fh, delimiter="\t" if fmt == "tsv" else ",")
                writer.writerow(columns)
                for rec in rows:
                    writer.writerow([_cell(rec.get(c)) for c in columns])
        else:
            _write_parquet(rows, columns, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _write_parquet(rows: list[dict[str, Any]], columns: list[str], path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def cell(value: Any) -> Any:
        if isinstance(value, dict) or (
            isinstance(value, list) and any(isinstance(v, dict | list) for v in value)
        ):
            return json.dumps(value, ensure_ascii=False)
        return value

    data = {c: [cell(rec.get(c)) for rec in rows] for c in columns}
    try:
        table = pa.table(data) if columns else pa.table({})
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # A column mixing types: store it as JSON text rather than fail the export.
        fixed = {}
        for c, values in data.items():
            try:
                fixed[c] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                fixed[c] = pa.array([None if v is None else json.dumps(v) for v in values])
        table = pa.table(fixed)
    pq.write_table(table, path)


def items_to_records(items: Any, labels: Any = None) -> list[dict[str, Any]]:
    """Export rows of items (a DataFrame from ``repo.list_items``) with their current labels.

    Labels go into ``human = {scale: "three", raters: [{rater, label, rule?, note?,
    seconds?}]}`` so the file imports back with the same labels.
    """
    by_item: dict[int, list[dict[str, Any]]] = {}
    if labels is not None and len(labels):
        for rec in _records_of(labels):
            entry = {"rater": rec["user"], "label": rec["value"]}
            entry.update({k: rec[k] for k in ("rule", "note", "seconds") if rec.get(k) is not None})
            by_item.setdefault(rec["item_id"], []).append(entry)
    out = []
    for rec in _records_of(items):
        raters = by_item.get(rec["item_id"])
        out.append(
            {
                "id": rec["external_id"],
                "question": rec["question"],
                "references": rec["references"],
                "candidate": rec["candidate"],
                "context": rec.get("context"),
                "choices": rec.get("choices"),
                "wrong_answers": rec.get("wrong_answers"),
                "model": rec.get("qa_model"),
                "meta": rec.get("meta"),
                "human": {"scale": "three", "raters": raters} if raters else None,
            }
        )
    return out
