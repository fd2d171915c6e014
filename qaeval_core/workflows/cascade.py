"""The LLM tier of a stored dataset's calibration (cheap judge -> LLM -> people).

:func:`fit_llm_tier` is the one way the CLI (``qaeval calibrate --llm``) and the Calibrate page
add an LLM tier to a judge that :func:`~qaeval_core.workflows.calibrate_dataset` just fitted:
it reads back the items and human labels the fit used, in the fit's order (the order of the
report's out-of-fold probabilities), and hands them to
:func:`qaeval_core.calibrate.cascade.add_llm_tier`. Gathering them here, and not in each caller,
keeps the rows the LLM reads and the rows the cheap judge was cross-validated on the same.

What the tier asks (the LLM, its endpoint and prompt, the shares) is an
:class:`~qaeval_core.calibrate.options.LLMTierPolicy`, made and checked (with
:meth:`~qaeval_core.calibrate.options.LLMTierPolicy.check_triage` against the calibration's
triage policy) before the calibration starts, so a bad value is refused before minutes of
work, not after.
"""

from __future__ import annotations

from collections.abc import Callable

from qaeval_core import store
from qaeval_core.calibrate.cascade import add_llm_tier
from qaeval_core.calibrate.options import LLMTierPolicy
from qaeval_core.judge import Judge
from qaeval_core.workflows.calibration import DatasetCalibration, labelled_data

__all__ = ["fit_llm_tier"]


def fit_llm_tier(
    db: store.Store,
    dataset: str,
    fit: DatasetCalibration,
    *,
    llm_tier: LLMTierPolicy = LLMTierPolicy(),
    progress: Callable[[str], None] | None = None,
) -> Judge:
    """``fit.judge`` with an LLM tier fitted on the labelled items ``fit`` used (the judge is
    changed in place and returned).

    ``llm_tier`` names the LLM (read by :func:`qaeval_core.llm.packaged.resolve_llm`) and the
    shares: ``llm_share`` None picks the smallest share within 0.5 points of the best,
    ``human_share`` None starts at the cascade share nearest the judge's triage band
    (:meth:`~qaeval_core.calibrate.options.LLMTierPolicy.human_share_for`). The LLM reads
    every used item once, cached verdicts reused; the tier is cross-validated on the folds the
    cheap judge was. A :class:`~qaeval_core.calibrate.cascade.ChanceWarning` is warned (not
    raised) when the LLM agrees with the labels at chance.
    """
    ids = list(fit.used_item_ids)
    by_id = {int(it.meta["item_id"]): it for it in store.load_items(db, dataset)}
    data = labelled_data(db, dataset, ids, metrics=[])
    return add_llm_tier(
        fit.judge,
        fit.report,
        [by_id[i] for i in ids],
        data.y,
        groups=data.groups,
        llm_tier=llm_tier,
        progress=progress,
    )
