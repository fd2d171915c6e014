"""Score items, frames and stored datasets with any set of metrics.

One entry point per kind of input, all built on :func:`score_items`:

* :func:`score` adds ``<metric>``, ``<metric>_correct`` and ``<metric>_details`` (JSON) columns
  to a pandas frame (the Python twin of ``qaeval score FILE``);
* :func:`score_dataset` scores a dataset in the store and saves one ``Score`` row per item and
  metric configuration, skipping items already scored under the same config hash, so adding a
  metric or new items to a dataset only computes what is missing.

Metrics are :class:`~qaeval_core.metrics.base.Metric` objects or spec strings
``"id"`` / ``"id:param=value,param=value"`` (see :func:`parse_metric_spec`).

Each metric sees all items in one ``score_batch`` call unless ``batch_size`` is given: embedding
metrics then embed each unique string once, and A-VERT draws its distractors from the whole set
(it picks them within a batch, so chunking changes its wrong group). Progress bars count items.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import ConfigError
from qaeval_core.jsonable import to_jsonable
from qaeval_core.metrics.base import Metric, MetricResult, get_metric
from qaeval_core.schema import Item, join_models

__all__ = [
    "parse_metric_spec",
    "parse_metric_list",
    "resolve_metrics",
    "metric_label",
    "items_from_frame",
    "score_items",
    "score",
    "score_dataset",
]

# --------------------------------------------------------------------------------------------
# Metric specs
# --------------------------------------------------------------------------------------------


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside double quotes and brackets (values may hold JSON lists)."""
    parts: list[str] = []
    depth, quoted, start = 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch in "[{":
            depth += 1
        elif not quoted and ch in "]}":
            depth -= 1
        elif not quoted and depth == 0 and ch == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _parse_value(raw: str) -> Any:
    """JSON when it parses (numbers, true/false/null, "strings", lists); Python spellings of
    booleans and None too; otherwise the raw text (paths, URLs, model names)."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_metric_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"smile:w=0.5,variant=code"`` -> ``("smile", {"w": 0.5, "variant": "code"})``.

    Parameters follow the first ``:`` as ``name=value`` pairs separated by commas. Values are
    parsed as JSON when possible (``0.5``, ``true``, ``"a,b"``, ``[1, 2]``), else kept as
    text, so ``lave:url=http://127.0.0.1:8000/v1`` works without quotes.

    >>> parse_metric_spec("f1:threshold=0.4")
    ('f1', {'threshold': 0.4})
    """
    text = spec.strip()
    if not text:
        raise ConfigError("Empty metric spec; expected 'id' or 'id:param=value,...'.")
    metric_id, _, rest = text.partition(":")
    metric_id = metric_id.strip()
    params: dict[str, Any] = {}
    if rest.strip():
        for chunk in _split_top(rest, ","):
            if not chunk.strip():
                continue
            name, eq, value = chunk.partition("=")
            if not eq or not name.strip():
                raise ConfigError(
                    f"Metric spec {spec!r}: expected param=value after ':', got {chunk!r} "
                    "(example: smile:w=0.5,variant=code)."
                )
            params[name.strip()] = _parse_value(value)
    return metric_id, params


def parse_metric_list(text: str) -> list[str]:
    """Split a CLI metric list into specs: ``"em,f1,smile:w=0.5,variant=code,bleu"`` ->
    ``["em", "f1", "smile:w=0.5,variant=code", "bleu"]``.

    A comma-separated piece holding ``=`` but no ``:`` continues the previous metric's
    parameters, so one comma-separated option can carry parametrised metrics.
    """
    specs: list[str] = []
    for piece in _split_top(text, ","):
        piece = piece.strip()
        if not piece:
            continue
        head = piece.split("=", 1)[0]
        if "=" in piece and ":" not in head and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    if not specs:
        raise ConfigError("No metrics given; e.g. --metrics em,f1,contains (see `qaeval metrics`).")
    return specs


def metric_label(metric: Metric) -> str:
    """Column name for a metric: its id, plus its non-default parameters when it has any.

    >>> metric_label(get_metric("f1", threshold=0.4))
    'f1:threshold=0.4'
    """
    defaults = type(metric).default_params()
    changed = {k: v for k, v in metric.get_params().items() if defaults.get(k, object()) != v}
    if not changed:
        return metric.id
    args = ",".join(
        f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in changed.items()
    )
    return f"{metric.id}:{args}"


def resolve_metrics(metrics: Iterable[str | Metric] | str) -> list[tuple[str, Metric]]:
    """(column label, metric) pairs from metric objects and/or spec strings; labels unique."""
    if isinstance(metrics, str):
        metrics = parse_metric_list(metrics)
    out: list[tuple[str, Metric]] = []
    for entry in metrics:
        if isinstance(entry, Metric):
            metric = entry
        elif isinstance(entry, str):
            metric_id, params = parse_metric_spec(entry)
            metric = get_metric(metric_id, **params)
        else:
            raise ConfigError(
                f"A metric must be an id string or a Metric object, got {type(entry).__name__}."
            )
        out.append((metric_label(metric), metric))
    labels = [label for label, _ in out]
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise ConfigError(f"Metric(s) given twice with the same parameters: {', '.join(dupes)}.")
    if not out:
        raise ConfigError("No metrics given; see `qaeval metrics` for the ids.")
    return out


# --------------------------------------------------------------------------------------------
# Frames <-> items
# --------------------------------------------------------------------------------------------

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


def _column(frame: pd.DataFrame, field: str) -> str | None:
    aliases = _FRAME_ALIASES[field]
    try:  # follow the importer's aliases when they are available
        from qaeval_core.io import FIELD_ALIASES

        aliases = tuple(dict.fromkeys([*FIELD_ALIASES.get(field, ()), *aliases]))
    except ImportError:  # pragma: no cover - io is part of the package
        pass
    return next((c for c in aliases if c in frame.columns), None)


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


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def _concat(results: list[MetricResult]) -> MetricResult:
    if len(results) == 1:
        return results[0]
    if not results:
        return MetricResult(np.zeros(0), np.zeros(0, dtype=bool), [])
    return MetricResult(
        np.concatenate([r.scores for r in results]),
        np.concatenate([r.decisions for r in results]),
        [d for r in results for d in r.details],
    )


def _run_metric(
    label: str,
    metric: Metric,
    items: Sequence[Item],
    batch_size: int | None,
    bar: Any,
) -> MetricResult:
    step = len(items) if not batch_size or batch_size <= 0 else int(batch_size)
    parts: list[MetricResult] = []
    if bar is not None:
        bar.set_postfix_str(label)
    for start in range(0, len(items), max(step, 1)):
        batch = items[start : start + step]
        res = metric.score_batch(batch)
        if len(res) != len(batch):
            raise RuntimeError(
                f"Metric {label!r} returned {len(res)} results for a batch of {len(batch)} items."
            )
        parts.append(res)
        if bar is not None:
            bar.update(len(batch))
    return _concat(parts)


def _progress_bar(total: int, enabled: bool, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", dynamic_ncols=True, leave=True)


def score_items(
    items: Sequence[Item],
    metrics: Iterable[str | Metric] | str,
    *,
    batch_size: int | None = None,
    progress: bool = False,
) -> dict[str, MetricResult]:
    """Score items with every metric. Returns ``{column label: MetricResult}`` in the given
    order; the label is the metric id, plus its non-default parameters (``f1:threshold=0.4``).
    """
    items = list(items)
    resolved = resolve_metrics(metrics)
    desc = resolved[0][0] if len(resolved) == 1 else "scoring"
    bar = _progress_bar(len(items) * len(resolved), progress, desc)
    try:
        return {
            label: _run_metric(label, metric, items, batch_size, bar) for label, metric in resolved
        }
    finally:
        if bar is not None:
            bar.close()


def details_json(details: Mapping[str, Any]) -> str:
    """A details dict as compact JSON (numpy values converted, NaN as null)."""
    return json.dumps(to_jsonable(details), ensure_ascii=False, separators=(",", ":"))


def score(
    frame: pd.DataFrame,
    metrics: Iterable[str | Metric] | str,
    *,
    batch_size: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """A copy of ``frame`` with ``<label>`` (score in [0, 1]), ``<label>_correct`` (decision at
    the metric's threshold) and ``<label>_details`` (JSON text) columns per metric.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"question": ["Capital of France?"], "references": [["Paris"]],
    ...                       "candidate": ["It is Paris."]})
    >>> score(frame, ["em", "contains"])[["em", "contains", "contains_correct"]]
        em  contains  contains_correct
    0  0.0       1.0              True
    """
    items = items_from_frame(frame)
    results = score_items(items, metrics, batch_size=batch_size, progress=progress)
    out = frame.copy()
    for label, res in results.items():
        out[label] = res.scores
        out[f"{label}_correct"] = res.decisions
        out[f"{label}_details"] = [details_json(d) for d in res.details]
    return out


def _score_rows(
    label: str, metric_id: str, cfg_hash: str, items: Sequence[Item], res: MetricResult
) -> list[dict[str, Any]]:
    """Store rows for one metric's results. A non-finite score (a metric bug or an item it
    cannot handle) is stored as 0.0 with the reason in its details rather than aborting a long
    run; the store refuses NaN."""
    rows = []
    for it, value, decision, det in zip(
        items, res.scores.tolist(), res.decisions.tolist(), res.details, strict=True
    ):
        details = {**det, "label": label}
        if not math.isfinite(value):
            details["error"] = f"non-finite score {value!r} stored as 0.0"
            value = 0.0
        rows.append(
            {
                "item_id": int(it.meta["item_id"]),
                "metric_id": metric_id,
                "config_hash": cfg_hash,
                "value": value,
                "decision": bool(decision),
                "details": to_jsonable(details),
            }
        )
    return rows


def score_dataset(
    url: str | None,
    dataset_name: str,
    metrics: Iterable[str | Metric] | str,
    *,
    rescore: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
    """Score a stored dataset and save the scores (value, decision, details, config hash).

    Items that already have a score for the same metric id and config hash are skipped unless
    ``rescore``; a changed parameter or metric version gives a new hash, so both versions stay
    side by side. Returns per metric label ``{"metric_id", "config_hash", "scored",
    "skipped"}``.
    """
    from qaeval_core.store import repo

    resolved = resolve_metrics(metrics)
    items = repo.load_items(url, dataset_name)
    summary: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, Metric, str, list[Item]]] = []
    for label, metric in resolved:
        cfg_hash = metric.config_hash()
        done: set[int] = set()
        if not rescore:
            stored = repo.scores(url, dataset_name, metric_id=metric.id, config_hash=cfg_hash)
            done = set(stored["item_id"].astype(int).tolist())
        pending = [it for it in items if int(it.meta["item_id"]) not in done]
        todo.append((label, metric, cfg_hash, pending))
        summary[label] = {
            "metric_id": metric.id,
            "config_hash": cfg_hash,
            "scored": len(pending),
            "skipped": len(items) - len(pending),
        }
    bar = _progress_bar(sum(len(p) for *_, p in todo), progress, f"scoring {dataset_name}")
    try:
        for label, metric, cfg_hash, pending in todo:
            if not pending:
                continue
            res = _run_metric(label, metric, pending, batch_size, bar)
            repo.add_scores(url, _score_rows(label, metric.id, cfg_hash, pending, res))
    finally:
        if bar is not None:
            bar.close()
    return summary
