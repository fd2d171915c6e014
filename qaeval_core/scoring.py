"""The one scoring loop: metrics x items -> results, with batching, progress and a NaN policy.

Every path that runs metrics goes through :func:`run_jobs`: ``qaeval_core.score`` (frames),
``qaeval score`` (files and stored datasets, via :mod:`qaeval_core.workflows`), calibration
(the inputs it has not stored yet) and a calibrated :class:`~qaeval_core.judge.Judge`. So a
score means the same thing whichever path computed it:

* **NaN policy.** A non-finite score (a metric bug, or an item it cannot handle) becomes
  ``0.0`` (not correct) with the reason in the item's details (``"error"``), instead of
  aborting a long run or reaching a fitted model as NaN (:func:`apply_nan_policy`). The one
  exception is *no verdict* (``details[NO_VERDICT]``: an LLM endpoint failed on the item):
  its NaN stays, with ``"error"`` added, because a 0.0 there would read as a verdict of
  "incorrect" that nobody gave. :func:`score` leaves its ``<label>_correct`` empty (NA) and
  :func:`no_verdicts` counts such rows (the CLI exits non-zero on them).
* **A metric that raises** on a batch is retried item by item, so only the items that still
  raise fail: they get ``0.0`` with ``details["error"]`` naming the exception (a judge reports
  them as ``judge_error``). A configuration or model-loading error, the first few retries all
  failing, or every item failing re-raises instead (the metric, not a row, is broken).
* **Batches.** Each metric sees all its items in one ``score_batch`` call unless
  ``batch_size`` is given: embedding metrics then embed each unique string once. Batches are
  only about speed: no metric's score for an item depends on the items batched with it or on
  their order (``tests/metrics/test_batch_independence.py``; A-VERT's distractors come from a fixed
  pool).
* **Encode once per run.** Before any job runs, the metrics that can say which texts they
  will encode (``encoding_requests``: the MiniLM metrics) hand them over, and each encoder
  runs once over all of them, length-sorted across metrics
  (:func:`qaeval_core.models.embedding_cache.encode_shared`); the metrics then read their
  vectors from memory. Scores are those of each metric alone, up to float rounding. A request
  that fails is skipped (logged): the metric then encodes for itself, and fails, as before.
  With a ``batch_size`` that splits the items there is no shared pass (each metric encodes
  batch by batch, as before): a pass over every batch at once would hold every batch's token
  vectors and plans until the last metric reaches them.
* **Progress** bars count items over all jobs.

This module knows nothing of the store; metrics are :class:`~qaeval_core.metrics.base.Metric`
objects or spec strings (:mod:`qaeval_core.metrics.specs`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.io.item_frames import items_from_frame
from qaeval_core.jsonable import to_jsonable
from qaeval_core.metrics.base import NO_VERDICT, Metric, MetricResult
from qaeval_core.metrics.specs import (
    metric_label,
    parse_metric_list,
    parse_metric_spec,
    resolve_metrics,
)
from qaeval_core.schema import Item

__all__ = [
    "NAN_SCORE",
    "NO_VERDICT",
    "no_verdicts",
    "ScoringJob",
    "apply_nan_policy",
    "details_json",
    "items_from_frame",
    "metric_label",
    "parse_metric_list",
    "parse_metric_spec",
    "resolve_metrics",
    "run_jobs",
    "score",
    "score_items",
]

log = logging.getLogger(__name__)

#: The score a non-finite metric value is replaced with (see the module docstring).
NAN_SCORE = 0.0


@dataclass(frozen=True)
class ScoringJob:
    """One metric to run on some items; ``label`` names its results (a column, a feature)."""

    label: str
    metric: Metric
    items: Sequence[Item]


def apply_nan_policy(result: MetricResult) -> MetricResult:
    """``result`` with every non-finite score replaced by :data:`NAN_SCORE`, decided not
    correct, and ``details["error"]`` saying so; a row with no verdict (``details[NO_VERDICT]``)
    keeps its NaN, not correct, with ``"error"`` naming the reason. Returns ``result`` itself
    when all are finite.
    """
    bad = np.flatnonzero(~np.isfinite(result.scores))
    if len(bad) == 0:
        return result
    scores = result.scores.copy()
    decisions = result.decisions.copy()
    details = list(result.details)
    for i in bad.tolist():
        reason = details[i].get(NO_VERDICT)
        if reason:
            scores[i] = np.nan
            decisions[i] = False
            details[i] = {**details[i], "error": f"no verdict: {reason}"[:500]}
            continue
        details[i] = {
            **details[i],
            "error": f"non-finite score {float(scores[i])!r} stored as {NAN_SCORE}",
        }
        scores[i] = NAN_SCORE
        decisions[i] = False
    return MetricResult(scores, decisions, details)


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


def _run_job(job: ScoringJob, batch_size: int | None, bar: Any) -> MetricResult:
    items = list(job.items)
    step = len(items) if not batch_size or batch_size <= 0 else int(batch_size)
    parts: list[MetricResult] = []
    if bar is not None:
        bar.set_postfix_str(job.label)
    failed: list[BaseException] = []
    for start in range(0, len(items), max(step, 1)):
        batch = items[start : start + step]
        try:
            res = job.metric.score_batch(batch)
        except _SYSTEMIC:
            raise
        except Exception as exc:
            res = _row_by_row(job, batch, exc, failed)
        if len(res) != len(batch):
            raise RuntimeError(
                f"Metric {job.label!r} returned {len(res)} results for a batch of "
                f"{len(batch)} items."
            )
        parts.append(res)
        if bar is not None:
            bar.update(len(batch))
    if failed and len(failed) == len(items):
        raise failed[0]  # not a bad row: the metric cannot score anything
    return apply_nan_policy(_concat(parts))


#: Failures that no row causes (a model that does not load, a bad parameter, memory): a batch
#: that raises one is not retried row by row.
_SYSTEMIC: tuple[type[BaseException], ...] = (ConfigError, ModelLoadError, MemoryError)
#: Rows retried alone before a batch failure whose every retry also fails is taken as the
#: metric's, not the rows' (and re-raised instead of scoring the whole batch one by one).
ROW_RETRY_PROBE = 5


def _row_by_row(
    job: ScoringJob, batch: Sequence[Item], error: Exception, failed: list[BaseException]
) -> MetricResult:
    """Score a batch that raised one item at a time: the items that still raise get
    :data:`NAN_SCORE`, not correct, and ``details["error"]`` naming the exception (the
    judge reports them as ``judge_error``); the others keep their real scores. When the first
    :data:`ROW_RETRY_PROBE` retries all fail, the batch's own exception is re-raised."""
    parts: list[MetricResult] = []
    ok = 0
    for i, item in enumerate(batch):
        try:
            one = job.metric.score_batch([item])
            if len(one) != 1:
                raise RuntimeError(f"returned {len(one)} results for one item")
            parts.append(one)
            ok += 1
        except _SYSTEMIC:
            raise
        except Exception as exc:
            if ok == 0 and i + 1 >= min(ROW_RETRY_PROBE, len(batch)):
                raise error from exc
            failed.append(exc)
            message = f"metric raised {type(exc).__name__}: {exc}"[:500]
            parts.append(MetricResult([NAN_SCORE], [False], [{"error": message}]))
    return _concat(parts)


def _progress_bar(total: int, enabled: bool, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", dynamic_ncols=True, leave=True)


def _encode_ahead(jobs: Sequence[ScoringJob], batch_size: int | None) -> None:
    """The shared encoder pass of a run (module docstring, "Encode once per run")."""
    if batch_size and batch_size > 0 and any(len(job.items) > batch_size for job in jobs):
        return
    sharing = [job for job in jobs if job.items and hasattr(job.metric, "encoding_requests")]
    if not sharing:
        return
    from qaeval_core.models.embedding_cache import encode_shared

    requests = []
    for job in sharing:
        try:
            requests.extend(job.metric.encoding_requests(list(job.items)))  # type: ignore[attr-defined]
        except Exception as exc:  # the job itself reports it, in its usual place
            log.info("%s: no shared encoding (%s: %s)", job.label, type(exc).__name__, exc)
    try:
        encode_shared(requests)
    except Exception as exc:  # each metric encodes for itself, and fails there if it must
        log.info("The shared encoder pass failed (%s: %s)", type(exc).__name__, exc)


def run_jobs(
    jobs: Sequence[ScoringJob],
    *,
    batch_size: int | None = None,
    progress: bool = False,
    desc: str | None = None,
    on_result: Callable[[ScoringJob, MetricResult], None] | None = None,
) -> dict[str, MetricResult]:
    """Run every job in order; ``{label: MetricResult}`` aligned with each job's items.

    ``on_result`` is called after each job (a store saves its scores there, so a crash in a
    later metric keeps the earlier ones). Jobs with no items are skipped.
    """
    labels = [job.label for job in jobs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"job labels must be unique, got {labels}")
    if desc is None:
        desc = jobs[0].label if len(jobs) == 1 else "scoring"
    bar = _progress_bar(sum(len(job.items) for job in jobs), progress, desc)
    out: dict[str, MetricResult] = {}
    _encode_ahead(jobs, batch_size)
    try:
        for job in jobs:
            if not job.items:
                out[job.label] = _concat([])
                continue
            out[job.label] = result = _run_job(job, batch_size, bar)
            if on_result is not None:
                on_result(job, result)
    finally:
        if bar is not None:
            bar.close()
    return out


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
    jobs = [ScoringJob(label, metric, items) for label, metric in resolve_metrics(metrics)]
    return run_jobs(jobs, batch_size=batch_size, progress=progress)


def details_json(details: Mapping[str, Any]) -> str:
    """A details dict as compact JSON (numpy values converted, NaN as null)."""
    return json.dumps(to_jsonable(details), ensure_ascii=False, separators=(",", ":"))


def score(
    frame: pd.DataFrame,
    metrics: Iterable[str | Metric] | str,
    *,
    batch_size: int | None = None,
    progress: bool = False,
    engine: str = "local",
    ray_address: str | None = None,
) -> pd.DataFrame:
    """A copy of ``frame`` with ``<label>`` (score in [0, 1]), ``<label>_correct`` (decision at
    the metric's threshold) and ``<label>_details`` (JSON text) columns per metric.

    ``engine="ray"`` scores on Ray (the ``qaeval[distributed]`` extra; ``ray_address`` as for
    ``ray.init``, default a local Ray) in batches of ``batch_size`` rows (default 1000) and
    returns what ``engine="local"`` returns with the same ``batch_size``
    (:mod:`qaeval_core.distributed`).

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"question": ["Capital of France?"], "references": [["Paris"]],
    ...                       "candidate": ["It is Paris."]})
    >>> score(frame, ["em", "contains"])[["em", "contains", "contains_correct"]]
        em  contains  contains_correct
    0  0.0       1.0              True
    """
    if engine != "local":
        return _score_on_ray(frame, metrics, batch_size, progress, engine, ray_address)
    items = items_from_frame(frame)
    results = score_items(items, metrics, batch_size=batch_size, progress=progress)
    out = frame.copy()
    for label, res in results.items():
        out[label] = res.scores
        out[f"{label}_correct"] = _decisions(res)
        out[f"{label}_details"] = [details_json(d) for d in res.details]
    return out


def _decisions(result: MetricResult) -> Any:
    """The decisions, NA where the item has no verdict (a nullable boolean column then)."""
    missing = np.isnan(result.scores)
    if not missing.any():
        return result.decisions
    out = pd.array(result.decisions, dtype="boolean")
    out[missing] = pd.NA
    return out


def no_verdicts(frame: pd.DataFrame, labels: Iterable[str]) -> dict[str, tuple[int, str]]:
    """Per score column of :func:`score`'s output that has rows without a verdict: how many,
    and the first one's reason (from its details). Columns where every row has one are left
    out, so an empty dict means the run is complete."""
    out: dict[str, tuple[int, str]] = {}
    for label in labels:
        missing = np.flatnonzero(pd.isna(frame[label]).to_numpy())
        if len(missing) == 0:
            continue
        reason = "no verdict"
        column = f"{label}_details"
        if column in frame:
            raw = frame[column].iloc[int(missing[0])]
            try:
                det = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                det = None
            if isinstance(det, dict) and det.get(NO_VERDICT):
                reason = str(det[NO_VERDICT])
        out[label] = (len(missing), reason)
    return out


def _score_on_ray(
    frame: pd.DataFrame,
    metrics: Iterable[str | Metric] | str,
    batch_size: int | None,
    progress: bool,
    engine: str,
    ray_address: str | None,
) -> pd.DataFrame:
    """:func:`score` with each chunk of ``batch_size`` rows scored by a Ray actor."""
    from functools import partial

    from qaeval_core import distributed

    distributed.check_engine(engine)
    resolved = resolve_metrics(metrics)  # bad specs fail here, before Ray starts
    objects = [metric for _, metric in resolved]
    return distributed.map_frame(
        frame,
        [partial(score, metrics=objects)],
        batch_size=batch_size,
        options=distributed.RayOptions(address=ray_address),
        needs_models=any(m.needs_models for m in objects),
        progress=progress,
    )
