"""The calibration's inputs: which metrics a judge is fitted on, and how items are grouped.

Shared by :func:`qaeval_core.workflows.calibrate_dataset` (stored datasets), the calibration
page's summaries and the experiments, so all of them fit on the same columns and keep every
question's rows in one fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, get_metric
from qaeval_core.questions import question_groups  # the grouping rule, shared with judges

__all__ = ["DEFAULT_METRICS", "FEATURE_ONLY", "metric_specs", "question_groups"]

#: ``(column, metric id, params)`` calibrated when no metrics are named: every CPU metric that
#: needs no LLM, plus the answer-shape features of :mod:`qaeval_core.metrics.shape`
#: (experiments/README.md measures them). The neural ones (embeddings, BERTScore, SMILE, A-VERT,
#: extraction) use the packaged MiniLM and take a few minutes per thousand items on a CPU; the
#: static ones (``static_cosine``, ``static_keyword``: MiniLM distilled into token vectors,
#: :mod:`qaeval_core.metrics.static`) read the same signal in milliseconds, a family of their own.
DEFAULT_METRICS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("em", "em", {}),
    ("contains", "contains", {}),
    ("f1", "f1", {}),
    ("precision", "precision", {}),
    ("recall", "recall", {}),
    ("word_match", "word_match", {}),
    ("rouge1", "rouge1", {}),
    ("rouge2", "rouge2", {}),
    ("rougeL", "rougeL", {}),
    ("bleu", "bleu", {}),
    ("meteor", "meteor", {}),
    ("vqa_accuracy", "vqa_accuracy", {}),
    ("soft_vqa_accuracy", "soft_vqa_accuracy", {}),
    ("panda", "panda", {}),
    ("embed_cosine", "embed_cosine", {}),
    ("bertscore", "bertscore", {}),
    ("smile", "smile", {}),
    ("smile_paper", "smile_paper", {}),
    ("avert", "avert", {}),
    ("extract_f1", "extract", {"metric": "f1"}),
    ("static_cosine", "static_cosine", {}),
    ("static_keyword", "static_keyword", {}),
    ("number_match", "number_match", {}),
    ("number_agree", "number_agree", {}),
    ("brevity", "brevity", {}),
    ("no_hedge", "no_hedge", {}),
    ("number_closeness", "number_closeness", {}),
    ("number_closeness_scaled", "number_closeness_scaled", {}),
)
#: Columns that are calibration inputs, not judges (left out of "best single metric" reports).
FEATURE_ONLY: tuple[str, ...] = (
    "number_match",
    "number_agree",
    "brevity",
    "no_hedge",
    "number_closeness",
    "number_closeness_scaled",
)


def metric_specs(metrics: Sequence[str | Metric] | None = None) -> list[tuple[str, Metric]]:
    """``(column, metric)`` pairs: the named metric ids (default parameters) or the defaults."""
    if not metrics:
        return [(col, get_metric(mid, **params)) for col, mid, params in DEFAULT_METRICS]
    out = [(m.id, m) if isinstance(m, Metric) else (m, get_metric(m)) for m in metrics]
    cols = [c for c, _ in out]
    if len(set(cols)) != len(cols):
        raise ConfigError(f"A metric is named twice in {cols}.")
    return out
