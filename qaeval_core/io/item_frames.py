"""DataFrame rows <-> :class:`~qaeval_core.schema.Item`: the in-memory twin of reading a file.

:func:`items_from_frame` is the one conversion every scorer uses (``qaeval_core.score``, a
judge's ``judge``, a refitted PANDA reading text columns), so a frame is read the same
way whichever path scores it. It accepts the importer's column aliases
(:data:`~qaeval_core.io.rows.FIELD_ALIASES`) and a few more that only frames use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import ConfigError
from qaeval_core.io.rows import FIELD_ALIASES
from qaeval_core.schema import Item, join_models

__all__ = ["field_aliases", "items_from_frame", "items_frame"]


_FRAME_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "item_id", "external_id"),
    "question": ("question", "query", "prompt"),
    "references": ("references", "reference", "answers", "answer", "gold", "target"),
    "candidate": ("candidate", "prediction", "response", "output", "pred", "model_answer"),
    "context": ("context", "passage"),
    "choices": ("choices", "options"),
    "wrong_answers": ("wrong_answers", "incorrect_answers"),
    "model": ("model", "qa_model", "system"),
    "dataset": ("dataset",),
}


def field_aliases(field: str) -> tuple[str, ...]:
    """The columns read for an item field, in priority order: the importer's aliases first,
    then the ones only frames use (the file checks of ``qaeval score`` read the same)."""
    return tuple(dict.fromkeys([*FIELD_ALIASES.get(field, ()), *_FRAME_ALIASES[field]]))


def _column(frame: pd.DataFrame, field: str) -> str | None:
    return next((c for c in field_aliases(field) if c in frame.columns), None)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple, np.ndarray, dict)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _text(value: Any) -> str:
    return "" if _is_missing(value) else str(value)


def _text_list(value: Any, *, split: str | None) -> tuple[str, ...]:
    """A list cell as strings: lists/arrays, JSON-encoded lists (CSV), or one string split
    into aliases on ``split`` ("Paris / Paris, France")."""
    if _is_missing(value):
        return ()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                parsed = json.loads(stripped)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, list):
                return tuple(str(v) for v in parsed if not _is_missing(v))
        parts = stripped.split(split) if split else [stripped]
        return tuple(p.strip() for p in parts if p.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if not _is_missing(v))
    return (str(value),)


def items_from_frame(frame: pd.DataFrame, *, alias_separator: str | None = "/") -> list[Item]:
    """One :class:`~qaeval_core.schema.Item` per row, in row order.

    Needs ``question``, ``references`` and ``candidate`` columns (the importer's aliases
    such as ``answers`` / ``prediction`` work too); ``context``, ``choices``,
    ``wrong_answers``, ``id``, ``dataset`` and ``model`` are used when present. A string in
    ``references`` is a JSON list or ``/``-separated aliases.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"question": ["Who wrote Hamlet?"],
    ...                       "answers": ["Shakespeare/William Shakespeare"],
    ...                       "prediction": ["Shakespeare"], "model": ["gpt"]})
    >>> item = items_from_frame(frame)[0]
    >>> item.references, item.candidate, item.qa_model
    (('Shakespeare', 'William Shakespeare'), 'Shakespeare', 'gpt')
    """
    cols = {f: _column(frame, f) for f in _FRAME_ALIASES}
    missing = [f for f in ("question", "references", "candidate") if cols[f] is None]
    if missing:
        raise ConfigError(
            f"The input lacks column(s) for {', '.join(missing)}; expected format: question, "
            f"references (a list, or '/'-separated aliases), candidate. Columns found: "
            f"{list(map(str, frame.columns))}."
        )
    n = len(frame)

    def values(field: str) -> list[Any]:
        col = cols[field]
        return frame[col].tolist() if col is not None else [None] * n

    q, r, c = values("question"), values("references"), values("candidate")
    ctx, cho, wrong = values("context"), values("choices"), values("wrong_answers")
    ids, ds, models = values("id"), values("dataset"), values("model")
    items = []
    for i in range(n):
        model = _text_list(models[i], split=None)
        items.append(
            Item(
                question=_text(q[i]),
                references=_text_list(r[i], split=alias_separator),
                candidate=_text(c[i]),
                context=None if _is_missing(ctx[i]) else str(ctx[i]),
                choices=_text_list(cho[i], split=None) or None,
                wrong_answers=_text_list(wrong[i], split=None) or None,
                id=None if _is_missing(ids[i]) else str(ids[i]),
                dataset=None if _is_missing(ds[i]) else str(ds[i]),
                qa_model=join_models(model) if model else None,
            )
        )
    return items


def items_frame(items: Sequence[Item]) -> pd.DataFrame:
    """The text columns a text-reading model needs (question, references, candidate).

    >>> from qaeval_core.schema import Item
    >>> items_frame([Item("Capital of France?", ("Paris",), "It is Paris.")]).to_dict("records")
    [{'question': 'Capital of France?', 'references': ['Paris'], 'candidate': 'It is Paris.'}]
    """
    return pd.DataFrame(
        {
            "question": [it.question for it in items],
            "references": [list(it.references) for it in items],
            "candidate": [it.candidate for it in items],
        }
    )
