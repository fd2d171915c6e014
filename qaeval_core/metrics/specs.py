"""Metric specs: ``"id"`` or ``"id:param=value,..."`` strings to metric objects and back.

The CLI's ``--metrics``, ``qaeval_core.score(frame, ["f1:threshold=0.4"])`` and column labels
of scored files all spell metrics this way; :func:`metric_label` is the inverse of
:func:`parse_metric_spec` for a configured metric (its id plus non-default parameters).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, get_metric

__all__ = [
    "parse_metric_spec",
    "parse_metric_list",
    "resolve_metrics",
    "metric_label",
]


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
        raise ConfigError(
            "No metrics given; e.g. metrics='em,f1,contains' (metric_ids() lists the ids).",
            param="metrics",
        )
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
        raise ConfigError("No metrics given; metric_ids() lists the ids.", param="metrics")
    return out
