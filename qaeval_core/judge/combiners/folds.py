"""Grouped, stratified fold assignment: the one split shared by fitting and evaluation.

It lives with the combiners, not in :mod:`qaeval_core.calibrate.protocol`, because two fitted
combiners choose their own hyper-parameters by inner cross-validation at ``fit`` time (the
stacker's penalty, the refitted PANDA's threshold) and must split exactly as the outer
protocol does (whole questions per fold), without the judge importing the training code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary

__all__ = ["assign_folds", "group_codes"]


def group_codes(n_items: int, groups: Sequence[Any] | np.ndarray | None) -> np.ndarray:
    if groups is None:
        return np.arange(n_items)
    g = np.asarray(groups, dtype=object)
    if len(g) != n_items:
        raise InputError(f"groups has {len(g)} entries for {n_items} items; give one per item.")
    # Missing group ids (None/NaN) make each such item its own group.
    keys = [
        ("__item__", i) if v is None or (isinstance(v, float) and np.isnan(v)) else ("g", v)
        for i, v in enumerate(g)
    ]
    _, codes = np.unique(np.array([repr(k) for k in keys]), return_inverse=True)
    return codes


def assign_folds(
    n_items: int,
    n_splits: int = 5,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    y: Any = None,
    seed: int = 0,
) -> np.ndarray:
    """A fold number in ``0..n_splits-1`` for every item.

    Groups are shuffled with ``seed`` and dealt, largest first, to the fold that currently has
    the fewest items (ties: the fewest positives when ``y`` is given, so folds keep a similar
    share of correct answers). Every item of a group gets the same fold.
    """
    if n_splits < 2:
        raise InputError(f"n_splits must be >= 2 (e.g. 5), got {n_splits}.")
    codes = group_codes(n_items, groups)
    n_groups = int(codes.max()) + 1 if n_items else 0
    if n_groups < n_splits:
        raise InputError(
            f"Cannot make {n_splits} folds from {n_groups} group(s); label more questions or "
            "lower n_splits."
        )
    yb = None if y is None else as_binary(y)
    if yb is not None and len(yb) != n_items:
        raise InputError(f"y has {len(yb)} labels for {n_items} items; give one label per item.")
    rng = np.random.default_rng(seed)
    sizes = np.bincount(codes, minlength=n_groups)
    pos = (
        np.bincount(codes, weights=yb.astype(float), minlength=n_groups)
        if yb is not None
        else np.zeros(n_groups)
    )
    order = rng.permutation(n_groups)
    order = order[np.argsort(-sizes[order], kind="stable")]
    fold_size = np.zeros(n_splits)
    fold_pos = np.zeros(n_splits)
    group_fold = np.empty(n_groups, dtype=int)
    tiebreak = rng.permutation(n_splits)
    for g in order:
        key = np.lexsort((tiebreak, fold_pos, fold_size))
        f = int(key[0])
        group_fold[g] = f
        fold_size[f] += sizes[g]
        fold_pos[f] += pos[g]
    return group_fold[codes]
