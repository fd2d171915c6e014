"""Calibration on a stored dataset: fit a judge on its human labels, read back what it used.

* :func:`calibrate_dataset` fits a judge on (at most ``max_labels`` of) a dataset's human
  labels, reusing stored input scores and storing the ones it computes.
* :func:`labelled_data` reads back what a calibration used, for the page's summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from qaeval_core import analysis, store
from qaeval_core.calibrate.cost import input_family, measure_costs
from qaeval_core.calibrate.fit import CalibrationReport, check_candidates, fit_judge, fit_steps
from qaeval_core.calibrate.inputs import (
    DEFAULT_PROFILE,
    FEATURE_ONLY,
    at_profile,
    metric_specs,
    question_groups,
)
from qaeval_core.calibrate.options import (
    DEFAULT_CANDIDATES,
    CostPolicy,
    CrossValidation,
    TriagePolicy,
)
from qaeval_core.calibrate.progress import ProgressCallback, Steps
from qaeval_core.calibrate.protocol import held_out_split
from qaeval_core.calibrate.summary import LabelledData
from qaeval_core.errors import ConfigError, IncompleteRunError
from qaeval_core.io.item_frames import items_frame
from qaeval_core.judge import FeatureSpec, Judge
from qaeval_core.metrics.base import NO_VERDICT, Metric, MetricResult
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, run_jobs
from qaeval_core.text.profiles import check_profile
from qaeval_core.workflows.answer_knowledge import calibration_knowledge
from qaeval_core.workflows.stored_scoring import score_rows, stored_scores

__all__ = [
    "MIN_LABELS",
    "DatasetCalibration",
    "calibrate_dataset",
    "calibration_steps",
    "check_max_labels",
    "labelled_data",
    "profile_specs",
]

#: The steps of :func:`calibrate_dataset` before the fit's own (:func:`calibration_steps`).
READING = "Reading labels"
SCORING = "Scoring inputs"
MEASURING = "Measuring input costs"

#: The fewest labels ``max_labels`` may ask a calibration to fit on.
MIN_LABELS = 20


def _item_id(item: Item) -> int:
    return int(item.meta["item_id"])


@dataclass
class DatasetCalibration:
    """A fitted judge, its report, and which labelled items were used or held back."""

    judge: Judge
    report: CalibrationReport
    n_labelled: int
    used_item_ids: list[int] = field(default_factory=list)
    unseen_item_ids: list[int] = field(default_factory=list)


def profile_specs(
    specs: Sequence[tuple[str, Metric]], normalize: str = DEFAULT_PROFILE
) -> list[tuple[str, Metric]]:
    """The inputs at one normalisation profile: every metric that takes ``normalize`` at
    ``normalize`` (default :data:`~qaeval_core.calibrate.inputs.DEFAULT_PROFILE`, robust),
    the answer-shape inputs under ``robust`` on the reader text, numbers as written
    (:func:`~qaeval_core.calibrate.inputs.at_profile`: their canonical robust reading respells
    numbers and cost accuracy), the others as they are; the columns keep their names. With
    ``"spaced"`` (each metric's own default) nothing changes. A judge fitted on them records
    those parameters, so ``qaeval score --config`` reads answers the same way."""
    check_profile(normalize)
    return [(col, at_profile(m, normalize)) for col, m in specs]


def check_max_labels(max_labels: int | None) -> int | None:
    """``max_labels`` when it is None or at least :data:`MIN_LABELS`, else an error naming it
    (:func:`calibrate_dataset` checks it when it would draw fewer than the labels there are;
    callers check it before any work)."""
    if max_labels is not None and max_labels < MIN_LABELS:
        raise ConfigError(
            f"max_labels {max_labels} is too few to calibrate; use >= {MIN_LABELS}.",
            param="max_labels",
        )
    return max_labels


def calibration_steps(*, measures_costs: bool) -> list[str]:
    """The steps :func:`calibrate_dataset` reports through ``progress``, in order (the cost
    measurement and the input choice only when the fit is cost-aware)."""
    middle = [MEASURING] if measures_costs else []
    return [READING, SCORING, *middle, *fit_steps(measures_costs)]


def _check_verdicts(label: str, result: MetricResult) -> None:
    """Stop when an input gave no verdict on some items (an LLM endpoint failed on them): a
    judge fitted on whichever items happened to work would be wrong without saying so."""
    missing = [d[NO_VERDICT] for d in result.details if d.get(NO_VERDICT)]
    if missing:
        raise IncompleteRunError(
            f"{label}: {len(missing)} of {len(result)} calibration items have no verdict "
            f"({missing[0]}). The scores that worked are stored and cached, so calibrating "
            "again scores only the missing ones."
        )


def _calibration_inputs(
    db: store.Store,
    dataset: str,
    specs: Sequence[tuple[str, Metric]],
    used: Sequence[Item],
    *,
    store_scores: bool,
    steps: Steps,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores and default decisions of every input on the used items, in their order.

    A column whose scores are all stored is read back; any other is scored on all used items
    at once and, with ``store_scores``, stored. ``steps`` hears each input read back or
    scored (the scoring step's units are the inputs).
    """
    used_ids = [_item_id(it) for it in used]
    stored = stored_scores(db, dataset, [m for _, m in specs])
    score_cols: dict[str, np.ndarray] = {}
    decision_cols: dict[str, np.ndarray] = {}
    jobs = []
    steps.start(SCORING, f"{len(specs)} input(s) on {len(used)} items", total=len(specs))
    done = 0
    for column, metric in specs:
        have = stored[
            (stored["metric_id"] == metric.id) & (stored["config_hash"] == metric.config_hash())
        ].set_index("item_id")
        if set(used_ids) <= set(have.index):
            done += 1
            steps.advance(f"{column}: reusing stored scores.", done=done)
            score_cols[column] = have.loc[used_ids, "value"].to_numpy(dtype=float)
            thr = getattr(metric, "threshold", None)
            decision_cols[column] = (
                metric.decide(score_cols[column])
                if thr is not None
                else have.loc[used_ids, "decision"].fillna(False).to_numpy(dtype=bool)
            )
            continue
        jobs.append(ScoringJob(column, metric, used))

    def save(job: ScoringJob, result: MetricResult) -> None:
        if store_scores:
            store.add_scores(db, score_rows(job.label, job.metric, job.items, result))

    for job in jobs:  # one at a time, so the progress names the input being scored
        steps.advance(f"{job.label}: scoring {len(used)} items ...")
        result = run_jobs([job], on_result=save)[job.label]
        _check_verdicts(job.label, result)
        score_cols[job.label] = result.scores
        decision_cols[job.label] = result.decisions
        done += 1
        steps.advance(f"{job.label}: scored.", done=done)
    columns = [column for column, _ in specs]
    return (
        pd.DataFrame({c: score_cols[c] for c in columns}),
        pd.DataFrame({c: decision_cols[c] for c in columns}),
    )


def calibrate_dataset(
    db: store.Store,
    dataset: str,
    *,
    metrics: Sequence[str | Metric] | None = None,
    max_labels: int | None = None,
    candidates: Sequence[str] = DEFAULT_CANDIDATES,
    name: str | None = None,
    normalize: str = DEFAULT_PROFILE,
    knowledge: bool = False,
    cv: CrossValidation = CrossValidation(),
    triage: TriagePolicy = TriagePolicy(),
    cost_policy: CostPolicy = CostPolicy(),
    store_scores: bool = True,
    progress: ProgressCallback | None = None,
) -> DatasetCalibration:
    """Fit a judge on (at most ``max_labels`` of) a stored dataset's human labels.

    Steps: read the dataset's items and current human labels (one verdict per item by the
    policy of :func:`qaeval_core.analysis.aggregate_labels`: adjudication, else majority;
    "unclear" and ties count as not correct), keep at most ``max_labels`` labelled items chosen
    at random with ``cv.seed`` (whole questions at a time, so the held-back rest stays truly
    unseen), score them with the chosen metrics (reusing stored scores with the same config
    hash, storing new ones; ``store_scores=False`` stores none), and run
    :func:`~qaeval_core.calibrate.fit.fit_judge` with the ``candidates``, the cross-validation
    ``cv`` and the ``triage`` policy that chooses the triage band (the options are the objects
    of :mod:`qaeval_core.calibrate.options`; their defaults are the plain calibration).

    Cost-aware by default (``cost_policy``): each input's cost is measured on (at most
    ``sample`` of) the used items (:func:`~qaeval_core.calibrate.cost.measure_costs`) and the
    judge reads the cheapest input families within the policy's ``max_accuracy_loss`` of the best
    cross-validated accuracy, costing at most ``max_cost`` seconds per 1,000 rows when given.
    ``CostPolicy(inputs="all")`` (and no ``max_cost``) measures nothing and uses every input,
    as before. Measured costs are cached per machine (:mod:`qaeval_core.calibrate.cost`), so a
    second calibration on this machine reads them back; ``remeasure=True`` measures them again.

    ``normalize="robust"`` (the default, :data:`~qaeval_core.calibrate.inputs.DEFAULT_PROFILE`)
    fits a judge whose every input that normalises reads the answer with the robust profile
    (:func:`profile_specs`): formatting, glued tokens and footnote digits change no verdict.
    ``normalize="spaced"`` fits on the metrics as they read by default (SQuAD's steps,
    punctuation read as a space), ``normalize="squad"`` on the official SQuAD v1.1 rules.

    ``knowledge=True`` adds the taught-answer inputs (issue 24, item 2): each used row's
    similarity to its question's accepted aliases and known wrong answers, made by the *other*
    used rows' labels (leave-one-out, :func:`~qaeval_core.workflows.answer_knowledge
    .calibration_knowledge`); they are computed here, never stored as scores (they change with
    the researchers' decisions), and the judge keeps a snapshot of that knowledge.

    ``progress`` (optional) is called with a
    :class:`~qaeval_core.calibrate.progress.CalibrationProgress` at every step of
    :func:`calibration_steps` and every unit of work inside one (an input scored, an input
    family measured, an input set evaluated, a combiner compared): the library prints nothing;
    the page and the CLI draw these.
    """
    check_profile(normalize)
    check_candidates(candidates)
    seed = cv.seed
    measures_costs = cost_policy.measures_costs
    steps = Steps(progress, calibration_steps(measures_costs=measures_costs))
    steps.start(READING, f"Reading the labels of {dataset} ...")
    frames = analysis.load_frames(db, dataset, metrics=())  # labels only: scores below
    verdicts = analysis.human_verdicts(frames)
    verdicts = verdicts[verdicts["final"].notna()]
    if verdicts.empty:
        raise ConfigError(
            f"Dataset {dataset!r} has no human labels yet; label some items (or import a file "
            "with labels) before calibrating."
        )
    correct = dict(zip(verdicts["item_id"], verdicts["human_correct"].astype(bool), strict=True))
    final = dict(zip(verdicts["item_id"], verdicts["final"].astype(int), strict=True))
    items = [it for it in store.load_items(db, dataset) if it.meta["item_id"] in correct]
    groups = question_groups(items)
    n_labelled = len(items)
    if max_labels is not None and max_labels < n_labelled:
        check_max_labels(max_labels)
        train, _ = held_out_split(n_labelled, max_labels, groups=groups, seed=seed)
    else:
        train = np.arange(n_labelled)
    used = [items[i] for i in train]
    used_ids = [_item_id(it) for it in used]
    unseen = sorted(set(_item_id(it) for it in items) - set(used_ids))
    y = np.array([correct[i] for i in used_ids])
    if y.all() or not y.any():
        raise ConfigError(
            f"The {len(y)} labels chosen are all {'correct' if y.all() else 'incorrect'}; "
            "calibration needs both. Label more items"
            + (" or raise max_labels." if max_labels is not None else "."),
            param="max_labels" if max_labels is not None else None,
        )
    steps.advance(
        f"{len(used)} of {n_labelled} labelled items used for fitting ({int(y.sum())} correct)."
    )

    # Before any scoring, so a dataset without accepted knowledge fails at once.
    taught, taught_scores = (
        calibration_knowledge(db, dataset, used, [final[i] for i in used_ids])
        if knowledge
        else (None, None)
    )
    specs_in = profile_specs(metric_specs(metrics), normalize)
    scores, decisions = _calibration_inputs(
        db, dataset, specs_in, used, store_scores=store_scores, steps=steps
    )
    # Answer-shape inputs are not judges: leave them out of the uncalibrated baselines.
    decisions = decisions[[c for c in decisions.columns if c not in FEATURE_ONLY]]
    specs = [FeatureSpec.from_metric(m, column) for column, m in specs_in]
    costs = None
    if measures_costs:
        families = len({input_family(m) for _, m in specs_in})
        steps.start(
            MEASURING,
            f"Input costs on {min(len(used), cost_policy.sample)} items (cost cache, else "
            "measured) ...",
            total=families,
        )
        costs = measure_costs(
            specs_in,
            used,
            sample=cost_policy.sample,
            seed=seed,
            remeasure=cost_policy.remeasure,
            progress=steps.advance,
            on_family=lambda done, total: steps.advance(
                f"{done} of {total} input families measured or cached", done=done, total=total
            ),
        )
    judge, report = fit_judge(
        scores,
        y,
        specs,
        candidates=candidates,
        groups=groups[train],
        texts=items_frame(used),
        default_decisions=decisions,
        costs=costs,
        knowledge=taught,
        knowledge_scores=taught_scores,
        cv=cv,
        triage=triage,
        cost_policy=cost_policy,
        name=name,
        progress=steps.relay,
        fitted_on={
            "dataset": dataset,
            "n_labelled_available": n_labelled,
            "label_rule": "adjudicated, else majority of current labels; correct = clearly "
            "correct (2); unclear and ties count as not correct",
            "max_labels": max_labels,
            "normalize": normalize,
        },
    )
    return DatasetCalibration(judge, report, n_labelled, used_ids, unseen)


def labelled_data(
    db: store.Store,
    dataset: str,
    item_ids: Sequence[int],
    *,
    metrics: Sequence[str] | None = None,
    normalize: str = DEFAULT_PROFILE,
) -> LabelledData:
    """Verdicts and stored scores/decisions of ``item_ids`` (as fitted by
    :func:`calibrate_dataset`, which stores the scores it computes) for the calibration's
    metric columns at its ``normalize`` profile, in the order given."""
    frames = analysis.load_frames(db, dataset, metrics=())  # labels only: scores below
    verdicts = analysis.human_verdicts(frames).set_index("item_id")
    ids = [int(i) for i in item_ids]
    y = verdicts.loc[ids, "human_correct"].astype(bool).to_numpy()
    by_id = {_item_id(it): it for it in store.load_items(db, dataset)}
    groups = question_groups([by_id[i] for i in ids])
    specs = profile_specs(metric_specs(metrics), normalize)
    stored = stored_scores(db, dataset, [m for _, m in specs])
    score_cols, decision_cols = {}, {}
    for column, metric in specs:
        rows = stored[
            (stored["metric_id"] == metric.id) & (stored["config_hash"] == metric.config_hash())
        ]
        rows = rows.set_index("item_id").reindex(ids)
        score_cols[column] = rows["value"].astype(float).to_numpy()
        decision_cols[column] = rows["decision"].fillna(False).astype(bool).to_numpy()
    return LabelledData(ids, y, groups, pd.DataFrame(score_cols), pd.DataFrame(decision_cols))
