"""Choosing items for people by the judge's doubt, at random with known probabilities.

Why this exists: labels asked for because the judge doubted the items are not a random sample,
so a plain estimate from them is biased, and qaeval used to leave them out. Active statistical
inference (Zrnic and Candes, ICML 2024) keeps them: draw each item independently (Poisson
sampling) with a known probability ``pi_i`` that grows with the judge's doubt, and weigh each
label by ``1 / pi_i`` (:mod:`.ipw_estimates`). The estimate is then unbiased whatever the judge,
and a good judge makes it narrower than a uniform sample of the same size, since the labels go
where the judge is likely wrong.

:func:`inclusion_probabilities` gives ``pi_i = clip(c * sqrt(d_i * (1 - d_i)), floor, 1)`` with
``d_i`` the judge's doubt (the probability its verdict is wrong, ``min(p, 1 - p)``) and ``c``
chosen so the probabilities add up to the requested expected number of labels (``budget``).
``sqrt(d (1 - d))`` is ``sqrt(p (1 - p))``, the standard deviation of the label given a
calibrated judge's probability, which is the variance-optimal sampling rule of Zrnic and Candes
(their section 3); it grows with the doubt. The ``floor`` keeps every item drawable: without
it an item the judge is sure of could never be checked, and its weight would be infinite if it
were; it also bounds the weights (at most ``1 / floor``), which keeps a judge that is confidently
wrong, or says nothing, from making the interval much wider than a uniform sample's.
:func:`poisson_draw` is the seeded draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qaeval_core.errors import InputError

__all__ = ["inclusion_probabilities", "poisson_draw", "doubt_of_probability"]

#: Bisection steps for the scale ``c`` (the sum is monotone in ``c``; 100 halvings reach
#: float precision from any bracket used here).
_STEPS = 100


def doubt_of_probability(probability: Any) -> np.ndarray:
    """The probability that the judge's verdict is wrong: ``min(p, 1 - p)`` (its verdict is
    "correct" when ``p >= 0.5``)."""
    p = np.asarray(probability, dtype=float)
    return np.minimum(p, 1.0 - p)


def _check_probabilities(values: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(values) | (values < 0) | (values > 1)
    if bad.any():
        raise InputError(
            f"{what} must be numbers in [0, 1] on every item; {int(bad.sum())} are not "
            f"(e.g. {values[bad][0]!r})."
        )


def inclusion_probabilities(judge_probability: Any, budget: float, floor: float) -> np.ndarray:
    """Per item, the probability to draw it for labelling (module docstring).

    ``judge_probability``: the judge's probability that each answer is correct; ``budget``: the
    expected number of labels (the probabilities add up to it); ``floor``: the smallest
    probability any item gets, in (0, 1], with ``floor * items <= budget`` (the floor alone must
    fit in the budget). A judge sure of every item gives every item ``budget / items``.
    """
    p = np.asarray(judge_probability, dtype=float).ravel()
    _check_probabilities(p, "judge_probability")
    n = len(p)
    if n == 0:
        raise InputError("No items to draw from.")
    ok_budget = isinstance(budget, int | float | np.integer | np.floating)
    if isinstance(budget, bool) or not ok_budget or not 0 < budget <= n:
        raise InputError(
            f"budget (expected labels) must be a number in (0, {n}] for {n} item(s); "
            f"got {budget!r}."
        )
    ok_floor = isinstance(floor, int | float | np.integer | np.floating)
    if isinstance(floor, bool) or not ok_floor or not 0 < floor <= 1:
        raise InputError(
            f"floor must be a probability in (0, 1] (every item keeps at least this chance to "
            f"be drawn); got {floor!r}."
        )
    if floor * n > budget * (1 + 1e-9):
        raise InputError(
            f"floor={floor:g} on {n} item(s) already expects {floor * n:.1f} labels, more than "
            f"the budget of {budget:g}; lower the floor to at most {budget / n:.4g} or raise "
            "the budget."
        )
    d = doubt_of_probability(p)
    score = np.sqrt(d * (1.0 - d))
    if score.max() <= 0 or floor * n >= budget * (1 - 1e-12):
        return np.full(n, float(budget) / n)
    low, high = 0.0, 1.0 / score[score > 0].min()  # at ``high`` every scored item is 1
    for _ in range(_STEPS):
        c = (low + high) / 2
        if np.clip(c * score, floor, 1.0).sum() < budget:
            low = c
        else:
            high = c
    return np.clip(high * score, floor, 1.0)


def poisson_draw(probabilities: Any, seed: int) -> np.ndarray:
    """Which items a seeded Poisson draw takes: item ``i`` independently with probability
    ``probabilities[i]`` (the same seed and probabilities draw the same items)."""
    pi = np.asarray(probabilities, dtype=float).ravel()
    _check_probabilities(pi, "probabilities")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise InputError(f"seed must be an integer, got {seed!r}.")
    return np.random.default_rng(int(seed)).random(len(pi)) < pi
