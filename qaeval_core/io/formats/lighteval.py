"""lighteval ``--save-details`` parquet: ``details/<model>/<date>/details_<task>_<date>.parquet``.

``EvaluationTracker.save`` writes one row per ``DetailsLogger.Detail``. Since v0.11 a detail is
``doc`` (lighteval's ``Doc``: ``query``, ``choices``, ``gold_index``, ``original_query``,
``id``, ``task_name``...), ``model_response`` (``ModelResponse``: ``text``,
``text_post_processed``...) and ``metric`` (the per-sample scores), stored as struct columns.
Up to v0.10 a detail was flat (``example``, ``full_prompt``, ``predictions``, ``gold``,
``metrics``, ``choices``, ``gold_index``...), and some versions wrote every value as its
``str()``, so lists and dicts may arrive as Python literals.

Mapping (docs/formats.md): id ``doc.id`` / question ``doc.original_query`` when set, else
``doc.query`` (the whole prompt) / references ``doc.choices[i]`` for ``i`` in
``doc.gold_index`` / candidate ``model_response.text_post_processed[0]``, else ``text[0]`` /
model from the path / task ``doc.task_name`` (else the file name).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io.formats._common import (
    Entry,
    converted,
    literal,
    no_references,
    object_of,
    record,
    texts,
)

__all__ = ["NAME", "TITLE", "detect", "read"]

NAME = "lighteval"
TITLE = "lighteval --save-details parquet (v0.11+ and the older flat layout)"

_NEW = {"doc", "model_response"}
_OLD = {"example", "predictions", "gold"}
_FILE = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.parquet$")


def _columns(path: Path) -> set[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return set(pq.read_schema(path).names)
    except (pa.ArrowException, OSError):
        return set()


def detect(path: Path) -> bool:
    """A Parquet file with lighteval's detail columns (read from the schema alone)."""
    if path.suffix.lower() not in (".parquet", ".pq") or not path.is_file():
        return False
    columns = _columns(path)
    return columns >= _NEW or columns >= _OLD


def _run(path: Path) -> tuple[str, str]:
    """(model, task) from ``details/<org>/<model>/<date>/details_<task>_<date>.parquet``."""
    match = _FILE.match(path.name)
    task = match["task"] if match else path.stem.removeprefix("details_")
    parts = path.parts
    if "details" in parts[:-1]:
        start = len(parts) - 1 - parts[::-1].index("details")
        model = "/".join(parts[start + 1 : -2]) or path.parent.parent.name
    else:
        model = path.parent.parent.name or "unknown"
    return model, task


def _list(value: Any) -> list[Any]:
    value = literal(value)
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _first_text(*candidates: Any) -> str | None:
    for value in candidates:
        items = _list(value)
        if items and isinstance(items[0], str):
            return items[0]
    return None


def _new(row: int, rec: dict[str, Any], model: str, task: str) -> Entry:
    doc = object_of(literal(rec.get("doc")), "doc")
    response = object_of(literal(rec.get("model_response")), "model_response")
    original = doc.get("original_query")
    question = original if isinstance(original, str) and original.strip() else doc.get("query")
    if not isinstance(question, str) or not question.strip():
        return RowError(row, "no question: doc.query is empty")
    choices = _list(doc.get("choices"))
    golds = [
        choices[i]
        for i in _list(doc.get("gold_index"))
        if isinstance(i, int) and 0 <= i < len(choices)
    ]
    references = texts([g for gold in golds for g in _list(gold)])
    if not references:
        return no_references(row, "doc.gold_index names no choice")
    candidate = _first_text(response.get("text_post_processed"), response.get("text"))
    if candidate is None:
        return RowError(
            row,
            "no generated text: model_response has only log-probabilities (a loglikelihood "
            "task); only generative tasks have answers to judge",
        )
    key = doc.get("id") if doc.get("id") not in (None, "") else row - 1
    if not isinstance(key, str | int) or isinstance(key, bool):
        return RowError(row, "wrong field type: doc.id is not text or a number")
    return row, record(
        harness=NAME,
        model=model,
        task=str(doc.get("task_name") or task),
        key=key,
        question=question,
        references=references,
        candidate=candidate.strip(),
        scores=literal(rec.get("metric")) if isinstance(literal(rec.get("metric")), dict) else None,
        extra={"doc_id": key},
    )


def _old(row: int, rec: dict[str, Any], model: str, task: str) -> Entry:
    question = rec.get("example") or rec.get("full_prompt")
    if not isinstance(question, str) or not question.strip():
        return RowError(row, "no question: example and full_prompt are empty")
    references = texts(_list(rec.get("gold")))
    if not references:
        return no_references(row, "gold is empty")
    candidate = _first_text(rec.get("predictions"))
    if candidate is None:
        return RowError(row, "no generated text in predictions (a loglikelihood task)")
    metrics = literal(rec.get("metrics"))
    return row, record(
        harness=NAME,
        model=model,
        task=task,
        key=row - 1,
        question=question,
        references=references,
        candidate=candidate.strip(),
        scores=metrics if isinstance(metrics, dict) else None,
    )


def read(path: Path, model: str | None = None) -> Iterator[Entry]:
    """The details of one file, in row order (row = Parquet row, 1-based); ``model`` names
    the model instead of the path ``details/<model>/<date>/``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"Cannot read {path} as Parquet: {exc}") from None
    found, task = _run(path)
    model = model or found
    convert = _new if set(table.column_names) >= _NEW else _old
    for row, rec in enumerate(table.to_pylist(), start=1):
        yield converted(row, convert, rec, model, task)
