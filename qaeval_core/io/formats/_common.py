"""What every harness reader shares: the record it yields, and small readers of raw values.

Each reader turns one harness log into records of the import schema (docs/data-format.md), so
the ordinary validation (:mod:`qaeval_core.io.rows`) checks them like any other file. The
record carries the harness's facts in ``meta`` under fixed keys, which the harness report
(:mod:`qaeval_core.analysis.harness_report`) and the cross-model join read:

``harness``  the format name (``lm-eval``, ``inspect``...);
``task``     the harness's task name, the same for every model;
``qid``      ``task:question key``: the same question in two models' logs has the same qid;
``variant``  what tells several candidates of one question and model apart (an lm-eval filter,
             an Inspect epoch, a HELM trial), absent when there is one;
``harness_scores``  the harness's own per-sample scores, ``{metric: number}``.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io.cells import MAX_ID_CHARS

__all__ = [
    "BadField",
    "Entry",
    "Format",
    "converted",
    "list_of",
    "object_of",
    "head",
    "literal",
    "load_json",
    "make_id",
    "no_references",
    "numeric_scores",
    "record",
    "texts",
]

#: What a reader yields: ``(row, record)`` or the reason a row cannot be imported.
Entry = tuple[int, dict[str, Any]] | RowError
#: Bytes read to recognise a file: enough for any harness's first keys, cheap on huge files.
HEAD_BYTES = 65536


@dataclass(frozen=True)
class Format:
    """One registered format: its name, title, detector and reader (``harness``: a harness
    log read by its own module; else a plain table file of :mod:`qaeval_core.io.files`)."""

    name: str
    title: str
    detect: Callable[[Path], bool]
    #: ``read(path, model=None)``: ``model`` names the model instead of the log's own name.
    read: Callable[..., Iterator[Entry]]
    harness: bool = True
    #: The harness version the log records (``None``: it records none).
    version: Callable[[Path], str | None] = lambda path: None
    #: A file this format detects that is no log itself (lm-eval's results file): a folder
    #: import leaves it out.
    auxiliary: Callable[[Path], bool] = lambda path: False


class BadField(Exception):
    """A field of a harness sample has the wrong type; :func:`converted` makes it a row's
    refusal (never an AttributeError from deep inside a reader)."""


def _kind(value: Any) -> str:
    from qaeval_core.io.files import describe_kind

    return describe_kind(value)


def object_of(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is an object, ``{}`` when absent (None), else :class:`BadField`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadField(f"{where} is {_kind(value)}, expected an object")
    return value


def list_of(value: Any, where: str) -> list[Any]:
    """``value`` when it is a list, ``[]`` when absent (None), else :class:`BadField`."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise BadField(f"{where} is {_kind(value)}, expected a list")
    return list(value)


def converted(row: int, convert: Callable[..., Entry], *args: Any) -> Entry:
    """``convert(row, *args)``, with a wrong-typed field refused as this row's error.

    The readers check the fields they read (:func:`object_of`, :func:`list_of`); the
    ``AttributeError``/``TypeError``/``ValueError`` net catches a field a check missed, so a
    hostile log gives a row-numbered refusal instead of a traceback."""
    try:
        return convert(row, *args)
    except BadField as exc:
        return RowError(row, f"wrong field type: {exc}")
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        return RowError(row, f"a field has an unexpected type or value ({exc})")


def head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a file (empty for a folder or an unreadable path)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def load_json(path: Path) -> Any:
    """A whole JSON file, or a :class:`ConfigError` that names the file and the problem."""
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except FileNotFoundError:
        raise ConfigError(f"No such file: {path}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: objects/lists nest too deeply to read.") from None


def literal(value: Any) -> Any:
    """``value``, or the Python literal a string spells (``"['a', 'b']"``) when it is one.

    Harnesses write ``str()`` of lists and dicts (lm-eval's ``target``, lighteval <= 0.10's
    every column); only literals are parsed (``ast.literal_eval``), never code."""
    if isinstance(value, str) and value[:1] in "[{(" and value[-1:] in "]})":
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def texts(value: Any) -> list[str]:
    """Gold answers as non-empty strings: a string, a number or a list of them."""
    if value is None:
        return []
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list | tuple):
        return []
    out = [str(v).strip() for v in value if isinstance(v, str | int | float)]
    return [v for v in out if v]


def numeric_scores(scores: Mapping[str, Any] | None) -> dict[str, float]:
    """The numeric per-sample scores of a harness (booleans as 0/1; anything else dropped)."""
    out: dict[str, float] = {}
    for name, value in (scores or {}).items():
        if isinstance(value, bool | int | float) and value == value:  # not NaN
            out[str(name)] = float(value)
    return out


def make_id(*parts: Any) -> str:
    """An item id from its parts (model/task/key/variant), within the id length limit.

    The model is part of the id because one dataset holds several models' answers to the same
    question; ``qid`` (not the id) joins them. A too long id keeps its end and a hash."""
    text = "/".join(str(p) for p in parts if p not in (None, ""))
    if len(text) <= MAX_ID_CHARS:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{digest}~{text[-(MAX_ID_CHARS - 17) :]}"


def record(
    *,
    harness: str,
    model: str,
    task: str,
    key: Any,
    question: str,
    references: Iterable[str],
    candidate: str,
    scores: Mapping[str, Any] | None = None,
    variant: str | None = None,
    qid: str | None = None,
    context: str | None = None,
    choices: list[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One import record of a harness sample (module docstring: the ``meta`` keys)."""
    meta: dict[str, Any] = {"harness": harness, "task": task, "qid": qid or f"{task}:{key}"}
    if variant is not None:
        meta["variant"] = variant
    meta["harness_scores"] = numeric_scores(scores)
    meta.update({k: v for k, v in (extra or {}).items() if v is not None})
    rec: dict[str, Any] = {
        "id": make_id(model, task, key, variant),
        "question": question,
        "references": list(references),
        "candidate": candidate,
        "model": model,
        "meta": meta,
    }
    if context:
        rec["context"] = context
    if choices:
        rec["choices"] = choices
    return rec


def no_references(row: int, what: str) -> RowError:
    """The refusal of a row without gold answers, with what the file lacks."""
    return RowError(row, f"no references: {what}; a row without a gold answer cannot be judged")
