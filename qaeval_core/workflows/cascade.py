"""The LLM tier of a stored dataset's calibration (cheap judge -> LLM -> people).

:func:`fit_llm_tier` is the one way the CLI (``qaeval calibrate --llm``) and the Calibrate page
add an LLM tier to a judge that :func:`~qaeval_core.workflows.calibrate_dataset` just fitted:
it reads back the items and human labels the fit used, in the fit's order (the order of the
report's out-of-fold probabilities), and hands them to
:func:`qaeval_core.calibrate.cascade.add_llm_tier`. Gathering them here, and not in each caller,
keeps the rows the LLM reads and the rows the cheap judge was cross-validated on the same.
"""

from __future__ import annotations

from collections.abc import Callable

from qaeval_core.calibrate.cascade import HUMAN_SHARES, add_llm_tier
from qaeval_core.judge import Judge
from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM
from qaeval_core.store import repo
from qaeval_core.workflows.calibration import DatasetCalibration, labelled_data

__all__ = ["fit_llm_tier", "nearest_human_share"]


def nearest_human_share(share: float) -> float:
    """The human share of the cascade curve (:data:`HUMAN_SHARES`) nearest ``share``: the
    curve is fitted at those shares only, so a band chosen elsewhere (a target accuracy, a
    slider) starts the cascade at the closest point it has."""
    return min(HUMAN_SHARES, key=lambda h: (abs(h - share), h))


def fit_llm_tier(
    db: repo.Store,
    dataset: str,
    fit: DatasetCalibration,
    *,
    model: str = DEFAULT_JUDGE_LLM,
    url: str | None = None,
    prompt: str = "naqt",
    llm_share: float | None = None,
    human_share: float | None = None,
    n_splits: int | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Judge:
    """``fit.judge`` with an LLM tier fitted on the labelled items ``fit`` used (the judge is
    changed in place and returned).

    ``model`` / ``url`` / ``prompt`` name the LLM (:func:`qaeval_core.llm.packaged
    .resolve_llm`); the LLM reads every used item once, cached verdicts reused. ``llm_share``
    None picks the smallest share within 0.5 points of the best; ``human_share`` None starts
    at the cascade share nearest the judge's triage band (:func:`nearest_human_share`).
    ``n_splits`` and ``seed`` default to the fit's, so the tier is cross-validated on the
    folds the cheap judge was. A :class:`~qaeval_core.calibrate.cascade.ChanceWarning` is
    warned (not raised) when the LLM agrees with the labels at chance.
    """
    report = fit.report
    if human_share is None:
        band = fit.judge.triage
        human_share = nearest_human_share(0.0 if band is None else float(band.share))
    ids = list(fit.used_item_ids)
    by_id = {int(it.meta["item_id"]): it for it in repo.load_items(db, dataset)}
    data = labelled_data(db, dataset, ids, metrics=[])
    return add_llm_tier(
        fit.judge,
        report,
        [by_id[i] for i in ids],
        data.y,
        groups=data.groups,
        model=model,
        url=url,
        prompt=prompt,
        llm_share=llm_share,
        human_share=human_share,
        n_splits=report.n_splits if n_splits is None else n_splits,
        seed=report.seed if seed is None else seed,
        progress=progress,
    )
