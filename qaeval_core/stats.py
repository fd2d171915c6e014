"""The small statistics several floors share, each defined once: intervals of a share, the
logit, the majority vote, Cohen's kappa, and the ranking of QA models.

Why one module: the same statistic had been written out in up to four places (Wilson intervals
in the calibration's label planner, the gold check, the PPI estimates and the weighted
estimates; three logits clipping at different distances from 0 and 1, so the judge trace could
show a logit the judge never applied; two majority rules; two kappas; two tie-breaks for the
ranking of models). Each copy was locally reasonable and each drifted. Here they are pure
functions of numbers (floor 0; numpy, scipy and scikit-learn are imported where used, so
``qaeval --help``, which loads the gold check, stays light), and ``tests/test_one_home.py``
refuses a second definition anywhere else.

Where a library already does it, it is used: :func:`wilson_interval` agrees with scipy's
``binomtest(...).proportion_ci(method="wilson")`` on whole counts (tested), but is written out
because the weighted estimates need it at a fractional, effective number of labels and with
Student's t quantile, which scipy's function takes neither of; :func:`cohen_kappa` is
scikit-learn's.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "NO_MAJORITY",
    "cohen_kappa",
    "competition_ranks",
    "design_effect_wilson",
    "logit",
    "majority_vote",
    "normal_quantile",
    "rank_order",
    "student_quantile",
    "wilson_ci",
    "wilson_interval",
    "wilson_width",
]

#: What :func:`majority_vote` gives where no value is the most frequent alone (or nothing was
#: counted).
NO_MAJORITY = -1


# -- intervals of a share ----------------------------------------------------------------------
def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level: 1.96 at 0.95.

    >>> round(normal_quantile(0.95), 4)
    1.96
    """
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def student_quantile(confidence: float, df: float) -> float:
    """The two-sided quantile of Student's t with ``df`` degrees of freedom (at least 1).

    >>> round(student_quantile(0.95, 9), 3)
    2.262
    """
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, max(float(df), 1.0)))


def wilson_interval(share: float, n: float, quantile: float) -> tuple[float, float]:
    """The Wilson score interval of a ``share`` seen on ``n`` labels, at ``quantile``.

    ``n`` may be fractional (an effective number of labels) and ``quantile`` any (the normal
    one, or Student's t for a variance estimated from few labels). Unlike the normal interval it
    neither collapses to a point when every label agrees nor leaves [0, 1], and it covers at
    about the nominal rate with few labels.

    >>> [round(x, 4) for x in wilson_interval(1.0, 1, normal_quantile(0.95))]
    [0.2065, 1.0]
    """
    z = float(quantile)
    denom = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(max(share * (1 - share), 0.0) / n + z * z / (4 * n * n))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def wilson_ci(successes: float, n: float, confidence: float) -> tuple[float, float]:
    """The Wilson interval of ``successes`` out of ``n`` at ``confidence`` (normal quantile):
    what scipy's ``binomtest(k, n).proportion_ci(confidence, method="wilson")`` gives."""
    return wilson_interval(successes / n, n, normal_quantile(confidence))


def wilson_width(share: float, n: float, confidence: float = 0.95) -> float:
    """The width of :func:`wilson_ci` at a share: what ``n`` labels buy (1 without labels).

    >>> round(wilson_width(0.8, 100), 4)
    0.1555
    """
    if n <= 0:
        return 1.0
    z = normal_quantile(confidence)
    return 2 * z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))


def design_effect_wilson(estimate: float, se: float, quantile: float) -> tuple[float, float]:
    """The Wilson interval at the design-effect sample size ``n* = e (1 - e) / se**2``.

    A symmetric ``estimate +- t * se`` undercovers near 0 or 1 (0.91 at accuracy 0.9 with 60
    labels in the simulation of ``tests/analysis/test_ipw_estimates.py``) for the same reason
    the Wald interval does; the Wilson interval at the sample size a binomial share with this
    standard error would have (Korn and Graubard, 1998: design-effect-adjusted intervals for
    proportions) keeps the width and bends towards the middle as the Wilson interval does. At
    0 or 1 (or without a standard error) it is the symmetric interval, clipped to [0, 1].
    """
    if not (0 < estimate < 1 and se > 0):
        half = quantile * se
        return max(estimate - half, 0.0), min(estimate + half, 1.0)
    return wilson_interval(estimate, estimate * (1 - estimate) / se**2, quantile)


# -- the logit ---------------------------------------------------------------------------------
def logit(p: Any, eps: float) -> np.ndarray:
    """``log(p / (1 - p))`` of ``p`` clipped to ``[eps, 1 - eps]`` (an array).

    ``eps`` has no default on purpose: where it sits is part of what a saved judge means (its
    combiner scores are clipped at :data:`qaeval_core.judge.triage.SCORE_EPS`, an LLM's
    probabilities at :data:`qaeval_core.judge.cascade.LLM_EPS`), so each caller names its own.

    >>> logit([0.5, 1.0], 1e-6).round(3).tolist()
    [0.0, 13.816]
    """
    import numpy as np

    q = np.clip(np.asarray(p, dtype=float), eps, 1 - eps)
    return np.log(q / (1 - q))


# -- the majority vote -------------------------------------------------------------------------
def majority_vote(counts: Any) -> np.ndarray:
    """Per row of ``counts`` (items x values, how many raters gave each value): the column of
    the most frequent value, or :data:`NO_MAJORITY` where two or more tie for it or the row is
    empty. The one majority rule: what a tie *means* (the 3-point scale's "unclear", no gold
    verdict, an item left out) is the caller's, the rule is not.

    >>> majority_vote([[0, 1, 2], [1, 0, 1], [0, 0, 0]]).tolist()
    [2, -1, -1]
    """
    import numpy as np

    c = np.atleast_2d(np.asarray(counts))
    if c.size == 0:
        return np.full(len(c), NO_MAJORITY, dtype=int)
    top = c.max(axis=1)
    alone = (c == top[:, None]).sum(axis=1) == 1
    return np.where(alone & (top > 0), c.argmax(axis=1), NO_MAJORITY).astype(int)


# -- agreement ---------------------------------------------------------------------------------
def cohen_kappa(a: Any, b: Any, labels: Sequence[int], weights: str | None = None) -> float:
    """Cohen's kappa (scikit-learn's) of two raters' labels over ``labels``; NaN where it is
    undefined (both raters gave one and the same value throughout), without a warning.

    >>> cohen_kappa([0, 1, 1, 0], [0, 1, 0, 0], [0, 1])
    0.5
    """
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a, b, labels=list(labels), weights=weights))


# -- ranking QA models -------------------------------------------------------------------------
def rank_order(values: Sequence[float], names: Sequence[Any]) -> list[int]:
    """Positions of the models best first: by ``values`` (higher is better), equal values by
    name (as text), so the order never depends on the input's order. NaN values are left out.

    >>> rank_order([0.7, 0.9, 0.7, float("nan")], ["b", "c", "a", "d"])
    [1, 2, 0]
    """
    keep = [i for i, v in enumerate(values) if not math.isnan(float(v))]
    return sorted(keep, key=lambda i: (-float(values[i]), str(names[i])))


def competition_ranks(values: Sequence[float]) -> list[int]:
    """Rank of each value, 1 the highest; equal values share the best rank ("1224"), so two
    models the data cannot tell apart are never ranked apart by their names.

    >>> competition_ranks([0.7, 0.9, 0.7, 0.5])
    [2, 1, 2, 4]
    """
    import numpy as np
    from scipy.stats import rankdata

    v = np.asarray(values, dtype=float)
    return rankdata(-v, method="min").astype(int).tolist() if len(v) else []
