"""The calibration's inputs: which metrics a judge is fitted on, and how items are grouped.

Shared by :func:`qaeval_core.workflows.calibrate_dataset` (stored datasets), the calibration
page's summaries and the experiments, so all of them fit on the same columns and keep every
question's rows in one fold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, default_inputs, get_metric, metric_class, with_profile
from qaeval_core.questions import question_groups  # the grouping rule, shared with judges
from qaeval_core.vocabulary import DEFAULT_PROFILE

__all__ = [
    "DEFAULT_METRICS",
    "DEFAULT_PROFILE",
    "FEATURE_ONLY",
    "SHAPE_ROBUST_TEXT",
    "at_profile",
    "metric_specs",
    "question_groups",
]

# DEFAULT_PROFILE (defined in vocabulary.py, so ``qaeval --help`` shows it without loading the
# metrics) is how a calibrated judge's inputs read answers unless told otherwise (``normalize=`` of
# :func:`qaeval_core.workflows.calibrate_dataset`, ``qaeval calibrate --normalize``, the
# Calibrate page's "Read answers as a person does"): the robust profile, so that bold, a
# citation marker or a lost space around the answer changes no verdict (issue 33: the
# ``spaced`` judge kept its verdict on 96.0-96.9% of such copies in our experiment, 93.4% in
# the issue's; the robust one on 99.9-100%), with the answer-shape inputs on the reader text
# (:func:`at_profile`). Accuracy vs ``spaced``, exported judge, 5 seeds, N = 300: NQ301 +0.10
# points, MMLU-Pro -0.79 (-1.12 with the answer-shape inputs on the canonical text; the issue's
# 0.5-point target is not met on MMLU-Pro; experiments/results/default_profile.md,
# invariance.md). ``"spaced"`` (or ``"squad"``, the official SQuAD v1.1 rules) is one option
# away. Judge files record each input's profile in its parameters; a file without it reads
# ``spaced``, as it always did.

#: ``(column, metric id, params)`` calibrated when no metrics are named: every metric class
#: that declares ``calibrate_by_default`` (:func:`qaeval_core.metrics.base.default_inputs`, in
#: registration order), today every CPU metric that needs no LLM, plus the answer-shape
#: features of :mod:`qaeval_core.metrics.shape` (experiments/README.md measures them). The
#: neural ones (embeddings, BERTScore, SMILE, A-VERT, extraction) use the packaged MiniLM and
#: take a few minutes per thousand items on a CPU; the static ones (``static_cosine``,
#: ``static_keyword``: MiniLM distilled into token vectors, :mod:`qaeval_core.metrics.static`)
#: read the same signal in milliseconds, a family of their own.
DEFAULT_METRICS: tuple[tuple[str, str, dict[str, Any]], ...] = default_inputs()
#: Columns that are calibration inputs, not judges (left out of "best single metric" reports):
#: the default inputs whose class declares ``feature_only``.
FEATURE_ONLY: tuple[str, ...] = tuple(
    col for col, mid, _ in DEFAULT_METRICS if metric_class(mid).feature_only
)


#: How the answer-shape inputs (:data:`FEATURE_ONLY`) read answers when the calibration profile
#: is ``robust``: the reader text with LaTeX as written (``robust_text="reader_latex"`` of
#: :mod:`qaeval_core.metrics.shape`: markdown, HTML, citation markers and mojibake removed, glue
#: repaired, footnote digits dropped, numbers and math as written; the number readers parse
#: ``\\frac``, ``\\sqrt`` and ``\\pi`` themselves). On the canonical text (numbers and dates
#: respelled, "twenty-five" -> 25) the judge lost 1.12 points on MMLU-Pro; on the reader text
#: with LaTeX flattened (``"reader"``: "\\frac{\\pi - 2}{\\pi}" -> "π - 2/ π", two numbers) it
#: still lost 0.79 (measured before the static inputs joined); with LaTeX kept, see
#: experiments/results/default_profile.md. Read as written (``spaced``) they let a citation
#: marker or mojibake move brevity and the number features: 1.4% of NQ301's reformattings
#: flipped a verdict (experiments/results/default_profile.md, invariance.md).
SHAPE_ROBUST_TEXT = "reader_latex"


def at_profile(metric: Metric, normalize: str) -> Metric:
    """``metric`` as a calibration at ``normalize`` reads it: ``normalize=normalize`` when it
    takes that parameter (:func:`~qaeval_core.metrics.base.with_profile`), and an answer-shape
    input under ``robust`` on the reader text (:data:`SHAPE_ROBUST_TEXT`)."""
    metric = with_profile(metric, normalize)
    if normalize == "robust" and metric.feature_only:
        params = metric.get_params()
        if params.get("robust_text") != SHAPE_ROBUST_TEXT:
            metric = type(metric)(**{**params, "robust_text": SHAPE_ROBUST_TEXT})
    return metric


def metric_specs(metrics: Sequence[str | Metric] | None = None) -> list[tuple[str, Metric]]:
    """``(column, metric)`` pairs: the named metric ids (default parameters) or the defaults."""
    if not metrics:
        return [(col, get_metric(mid, **params)) for col, mid, params in DEFAULT_METRICS]
    out = [(m.id, m) if isinstance(m, Metric) else (m, get_metric(m)) for m in metrics]
    cols = [c for c, _ in out]
    if len(set(cols)) != len(cols):
        raise ConfigError(f"A metric is named twice in {cols}.")
    return out
