"""Fit a judge from labelled items: score, compare combiners by cross-validation, export.

``fit_judge`` is what ``qaeval calibrate`` and the calibration page call. It takes the metric
scores of the labelled items (a frame, one column per metric), compares the candidate combiners
(a calibrated threshold on the best single metric, the paper's fusion, the logistic stacker,
PANDA refitted on the labels) by grouped k-fold cross-validation, refits the winner on every
label and wraps it in a :class:`~qaeval_core.judge.Judge` with its cross-validated quality.

Why the winner is not simply the top CV accuracy: with a few hundred labels the CV accuracy of
each candidate has a standard error of 2-3 points, so picking the maximum mostly picks noise.
The first candidate listed is the default and wins unless another beats its CV accuracy by more
than the :class:`~qaeval_core.calibrate.options.CrossValidation`'s ``win_margin`` (one point).
The default order puts the stacker first: it contains the other two as special cases (one
metric, or a few metrics voting, are linear rules on the same scores), its penalty is itself
chosen by inner CV, and in ``experiments/`` it was never worse on average than the threshold or
the fusion on held-out rows, while CV selection among the three lost 0.5-2 points at 100-200
labels by picking a lucky threshold or fusion (first run, experiments/README).

Cost-aware inputs (issue 15): given measured input costs (:mod:`qaeval_core.calibrate.cost`),
``fit_judge`` first keeps only the cheapest input families whose cross-validated accuracy loses
at most the :class:`~qaeval_core.calibrate.options.CostPolicy`'s ``max_accuracy_loss`` (0.3
points) against the best set evaluated
(:func:`~qaeval_core.calibrate.select.select_inputs`, with the first candidate combiner on the
same folds of the same labels), then compares the combiners on them. The CV quality reported
afterwards is measured on the folds that chose the set, so it is slightly optimistic for the
chosen set; held-out numbers are in experiments/. ``CostPolicy(inputs="all")`` keeps every
input.

Taught answers (issue 24, item 2): given ``knowledge`` (a
:class:`~qaeval_core.judge.JudgeKnowledge` snapshot) and ``knowledge_scores`` (its similarity
inputs on these rows, computed leave-one-out by the caller:
:func:`qaeval_core.knowledge.knowledge_similarity`), the combiners also read those inputs and
the judge keeps the snapshot to compute them on new rows. They are appended after the
cost-aware choice (they cost next to nothing and have no measured cost), and kept in the judge
only if the winner reads them.

Why it is one module: the input choice, the comparison of combiners and the judge built from
the winner share one set of folds and one report; split, they would each redo or pass them on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.calibrate.cost import CostTable, cost_record
from qaeval_core.calibrate.guarantee import GuaranteeFit, GuaranteeNotSupported, guaranteed_band
from qaeval_core.calibrate.options import (
    DEFAULT_CANDIDATES,
    CostPolicy,
    CrossValidation,
    TriagePolicy,
)
from qaeval_core.calibrate.progress import ProgressCallback, Steps
from qaeval_core.calibrate.protocol import (
    assign_folds,
    bootstrap_ci,
    cross_val_predict_proba,
    quality,
)
from qaeval_core.calibrate.select import InputSelection, choose_inputs, single_blas_thread
from qaeval_core.calibrate.triage import effort_curve, fit_band, fit_probability
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge import FeatureSpec, Judge, JudgeKnowledge
from qaeval_core.judge.combiners import (
    TEXT_COLUMNS,
    CalibratedClassifier,
    FusionClassifier,
    PandaFitClassifier,
    StackerClassifier,
    ThresholdClassifier,
    as_binary,
)
from qaeval_core.metrics.base import Metric
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, run_jobs

__all__ = [
    "CANDIDATES",
    "CalibrationReport",
    "check_candidates",
    "feature_scores",
    "fit_judge",
    "fit_steps",
    "used_columns",
]


#: Candidate combiners by name. ``panda`` reads the items' text (PANDA refitted on the labels) and
#: is the slowest to fit. :data:`~qaeval_core.calibrate.options.DEFAULT_CANDIDATES` (the first
#: is preferred unless another is clearly better, see above) is the order ``fit_judge`` uses.
CANDIDATES: dict[str, Callable[[], CalibratedClassifier]] = {
    "threshold": lambda: ThresholdClassifier(column="best"),
    "fusion": lambda: FusionClassifier(),
    "stacker": lambda: StackerClassifier(),
    "panda": lambda: PandaFitClassifier(),
}


#: The steps of :func:`fit_judge` as its ``progress`` names them.
CHOOSING_INPUTS = "Choosing inputs"
COMPARING = "Comparing combiners"
FINISHING = "Refitting the winner, baselines and triage band"


def fit_steps(with_costs: bool) -> list[str]:
    """The steps :func:`fit_judge` reports, in order: choosing inputs only when it is given
    measured ``costs``."""
    return ([CHOOSING_INPUTS] if with_costs else []) + [COMPARING, FINISHING]


def check_candidates(names: Sequence[str]) -> list[str]:
    """The candidate names, checked against :data:`CANDIDATES` (callers check flags early)."""
    names = list(names)
    unknown = [c for c in names if c not in CANDIDATES]
    if unknown:
        raise ConfigError(
            f"Unknown candidate combiner(s) {unknown} in candidates; choose from "
            f"{list(CANDIDATES)} (e.g. candidates=['stacker', 'threshold']).",
            param="candidates",
        )
    if not names:
        raise ConfigError(
            f"No candidate combiners to compare; name at least one of {list(CANDIDATES)}.",
            param="candidates",
        )
    return names


def feature_scores(
    items: Sequence[Item], metrics: Sequence[Metric], *, columns: Sequence[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[FeatureSpec]]:
    """Scores and default decisions of every metric on the items (one column per metric, run
    through :func:`qaeval_core.scoring.run_jobs` and its NaN policy), and their feature specs.
    """
    items = list(items)
    columns = list(columns) if columns is not None else [m.id for m in metrics]
    if len(columns) != len(metrics) or len(set(columns)) != len(columns):
        raise ConfigError(
            f"Need one unique column name per metric, got {columns} for {len(metrics)} "
            "metric(s); pass columns=[...] naming each metric once."
        )
    jobs = [ScoringJob(col, m, items) for col, m in zip(columns, metrics, strict=True)]
    results = run_jobs(jobs)
    scores = pd.DataFrame({col: results[col].scores for col in columns})
    decisions = pd.DataFrame({col: results[col].decisions for col in columns})
    specs = [FeatureSpec.from_metric(m, c) for m, c in zip(metrics, columns, strict=True)]
    return scores, decisions, specs


def used_columns(model: CalibratedClassifier) -> list[str]:
    """The score columns a fitted model actually reads."""
    names = [str(c) for c in model.feature_names_in_]
    if isinstance(model, ThresholdClassifier):
        col = model.column_
        return [col if isinstance(col, str) else names[int(col or 0)]]
    if isinstance(model, FusionClassifier):
        used = {f["column"] for f in model.filters_} | set(model.voters_)
        return [c for c in names if c in used]
    return names


def _prune(
    model: CalibratedClassifier,
    factory: Callable[[], CalibratedClassifier],
    X: pd.DataFrame,
    y: np.ndarray,
) -> CalibratedClassifier:
    """Refit on only the columns the model reads, if that changes none of its outputs."""
    if getattr(model, "needs_text", False):
        return model
    cols = used_columns(model)
    if len(cols) == X.shape[1]:
        return model
    small = factory()
    if isinstance(small, ThresholdClassifier):
        small.set_params(column=None)
    small.fit(X[cols], y)
    same = np.array_equal(small.predict_proba(X[cols]), model.predict_proba(X))
    return small if same else model


@dataclass
class CalibrationReport:
    """Cross-validated quality of every candidate, the winner, and the uncalibrated baselines."""

    winner: str
    candidates: pd.DataFrame
    baselines: pd.DataFrame
    n_labels: int
    n_splits: int
    seed: int
    oof_proba: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    #: The winner's accuracy-vs-human-effort curve (see :mod:`qaeval_core.calibrate.triage`).
    effort_curve: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    #: Measured input costs and the cost-aware input selection (None: not measured / all).
    costs: CostTable | None = field(default=None, repr=False)
    inputs: InputSelection | None = field(default=None, repr=False)
    #: The fixed-sequence walk when a guarantee was asked for (:mod:`.guarantee`).
    guarantee: GuaranteeFit | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what goes into the judge's ``quality`` field)."""
        win = self.candidates.set_index("candidate").loc[self.winner]
        return {
            "protocol": (
                f"{self.n_splits}-fold cross-validation grouped by question over "
                f"{self.n_labels} labels; 95% bootstrap CIs over questions"
            ),
            "winner": self.winner,
            "cv_accuracy": float(win["accuracy"]),
            "cv_accuracy_ci": [float(win["accuracy_lo"]), float(win["accuracy_hi"])],
            "cv_balanced_accuracy": float(win["balanced_accuracy"]),
            "cv_f1": float(win["f1"]),
            "candidates": _records(self.candidates),
            "baselines": _records(self.baselines),
            "n_labels": self.n_labels,
            "n_splits": self.n_splits,
            "seed": self.seed,
        }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]


@single_blas_thread
def fit_judge(
    scores: pd.DataFrame,
    y: Any,
    features: Sequence[FeatureSpec],
    *,
    candidates: Sequence[str] | Mapping[str, Callable[[], CalibratedClassifier]] = (
        DEFAULT_CANDIDATES
    ),
    groups: Sequence[Any] | np.ndarray | None = None,
    texts: pd.DataFrame | None = None,
    default_decisions: pd.DataFrame | None = None,
    costs: CostTable | None = None,
    knowledge: JudgeKnowledge | None = None,
    knowledge_scores: pd.DataFrame | None = None,
    cv: CrossValidation = CrossValidation(),
    triage: TriagePolicy = TriagePolicy(),
    cost_policy: CostPolicy = CostPolicy(),
    name: str | None = None,
    fitted_on: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[Judge, CalibrationReport]:
    """Compare candidate combiners by grouped CV, refit the winner on all labels, wrap it.

    The data, one row per label: ``scores`` has one column per feature (same order as
    ``features``); ``groups`` (optional) the question of each row, kept in one fold; ``texts``
    (question, references, candidate) is needed by text-reading candidates such as ``panda``;
    ``default_decisions`` (optional, same columns) are the metrics' own decisions at their
    shipped thresholds, reported as the uncalibrated baselines on the same labels.

    The options (:mod:`qaeval_core.calibrate.options`; their defaults are the plain fit):
    ``cv`` is the cross-validation (folds, seed, bootstrap, the combiners' win margin). The
    winner's out-of-fold scores also give the judge its calibrated probability and the triage
    band ``triage`` asks for: about ``human_share`` of items come out ``uncertain`` (none
    given: 0, the verdicts are the combiner's), or the smallest share whose cross-validated
    combined accuracy reaches ``target_accuracy`` (:mod:`qaeval_core.calibrate.triage`), or
    the widest band whose accuracy on what the judge decides alone is at least ``guarantee``
    with probability at least ``1 - risk`` (:mod:`qaeval_core.calibrate.guarantee`;
    GuaranteeNotSupported, an InputError saying how many more labels would do, when the labels
    support none).

    ``costs`` (measured on these or similar rows, one entry per feature) makes the fit
    cost-aware: by the ``cost_policy`` (``inputs="cheap"``, or a ``max_cost`` in seconds per
    1,000 rows) only the chosen input families are used (see the module docstring); either way
    the costs, the selection and its accuracy/cost frontier go into the judge's ``cost``
    record. Without ``costs`` every input is used and nothing is recorded (a ``max_cost``
    then is an error: nothing to cap).

    ``progress`` hears the steps of :func:`fit_steps` as they go (input sets evaluated,
    combiners compared; :mod:`qaeval_core.calibrate.progress`); nothing is printed.

    ``knowledge`` with ``knowledge_scores`` (one row per label, the snapshot's columns, each
    row's computed without its own label) adds the taught-answer inputs (module docstring).
    """
    n_splits, seed, n_boot = cv.n_splits, cv.seed, cv.n_boot
    yb = as_binary(y)
    cols = [f.column for f in features]
    if list(scores.columns) != cols:
        raise InputError(
            f"scores columns {list(scores.columns)} differ from features {cols}; pass one "
            "score column per feature, in the features' order."
        )
    if len(scores) != len(yb):
        raise InputError(f"{len(scores)} score rows for {len(yb)} labels; give one label per row.")
    if (knowledge is None) != (knowledge_scores is None):
        raise InputError("Give knowledge and knowledge_scores together (or neither).")
    if knowledge is not None and knowledge_scores is not None:
        if list(knowledge_scores.columns) != list(knowledge.columns):
            raise InputError(
                f"knowledge_scores columns {list(knowledge_scores.columns)} differ from the "
                f"knowledge's inputs {list(knowledge.columns)}."
            )
        if len(knowledge_scores) != len(yb):
            raise InputError(f"{len(knowledge_scores)} knowledge rows for {len(yb)} labels.")
    if isinstance(candidates, Mapping):
        factories = dict(candidates)
    else:
        factories = {c: CANDIDATES[c] for c in check_candidates(candidates)}
    if not factories:
        raise InputError(f"No candidate combiners to compare; name some of {list(CANDIDATES)}.")
    X = scores.reset_index(drop=True)
    g = None if groups is None else np.asarray(groups, dtype=object)
    folds = assign_folds(len(yb), n_splits, groups=g, y=yb, seed=seed)
    # Input sets are compared with the first candidate that reads only scores (the stacker by
    # default: it reads every column it is given); a text-only list keeps every input.
    score_only = [f for f in factories.values() if not getattr(f(), "needs_text", False)]
    steps = Steps(progress, fit_steps(costs is not None))
    if costs is not None:
        steps.start(CHOOSING_INPUTS, "Choosing the cheapest inputs as accurate as the best ...")

    def evaluated(done: int, at_most: int) -> None:
        steps.advance(
            f"{done} input set(s) evaluated (at most {at_most})", done=done, total=at_most
        )

    selection = choose_inputs(
        X,
        yb,
        costs,
        score_only[0] if score_only else None,
        cost_policy=cost_policy,
        cv=cv,
        fold_ids=folds,
        groups=g,
        progress=evaluated,
    )
    if selection is not None:
        keep = set(selection.columns)
        features = [f for f in features if f.column in keep]
        X = X[[f.column for f in features]]
    if knowledge_scores is not None:
        X = pd.concat([X, knowledge_scores.reset_index(drop=True)], axis=1)
    XT = None
    if texts is not None:
        if len(texts) != len(X):
            raise InputError(
                f"texts has {len(texts)} rows for {len(X)} score rows; pass the text of "
                "exactly the scored rows."
            )
        XT = pd.concat([X, texts.reset_index(drop=True)[list(TEXT_COLUMNS)]], axis=1)

    def design(factory: Callable[[], CalibratedClassifier]) -> pd.DataFrame:
        if not getattr(factory(), "needs_text", False):
            return X
        if XT is None:
            raise InputError("A text-reading candidate (panda) needs texts=<question, ...>.")
        return XT

    rows, oof = [], {}
    names = list(factories)
    steps.start(
        COMPARING,
        f"Comparing {', '.join(names)} by {n_splits}-fold cross-validation",
        total=len(names),
    )
    for k, (cname, factory) in enumerate(factories.items()):
        steps.advance(f"{cname}: cross-validating ({k + 1} of {len(names)})", done=k)
        proba = cross_val_predict_proba(factory(), design(factory), yb, folds, groups=g)
        pred = proba >= 0.5
        q = quality(yb, pred)
        _, lo, hi = bootstrap_ci(yb, pred, "accuracy", n_boot=n_boot, seed=seed, groups=g)
        rows.append({"candidate": cname, **q, "accuracy_lo": lo, "accuracy_hi": hi})
        oof[cname] = proba
    steps.advance(f"Compared {len(names)} combiner(s)", done=len(names))
    table = pd.DataFrame(rows)
    best = float(table["accuracy"].max())
    winner = next(r["candidate"] for r in rows if r["accuracy"] >= best - cv.win_margin)

    steps.start(FINISHING, f"Refitting {winner} on every label; baselines; triage band ...")
    base_rows = []
    if default_decisions is not None:
        for col in default_decisions.columns:
            pred = default_decisions[col].to_numpy(dtype=bool)
            q = quality(yb, pred)
            _, lo, hi = bootstrap_ci(yb, pred, "accuracy", n_boot=n_boot, seed=seed, groups=g)
            base_rows.append({"metric": col, **q, "accuracy_lo": lo, "accuracy_hi": hi})
    baselines = pd.DataFrame(base_rows)

    model = factories[winner]()
    if "groups" in inspect.signature(model.fit).parameters:
        model.fit(design(factories[winner]), yb, groups=g)
    else:
        model.fit(design(factories[winner]), yb)
    model = _prune(model, factories[winner], X, yb)
    keep = {str(c) for c in model.feature_names_in_}  # what the (maybe pruned) model reads
    kept_features = [f for f in features if f.column in keep]
    read_knowledge = [] if knowledge is None else [c for c in knowledge.columns if c in keep]
    calibrator = fit_probability(oof[winner], yb)
    curve = effort_curve(oof[winner], yb, calibrator, groups=g, n_boot=min(n_boot, 1000), seed=seed)
    walk = None
    human_share = triage.share
    if triage.guarantee is not None:
        walk = guaranteed_band(
            oof[winner],
            yb,
            calibrator,
            curve,
            guarantee=triage.guarantee,
            risk=triage.risk,
            groups=g,
            seed=seed,
        )
        if walk.guarantee is None:
            raise GuaranteeNotSupported(walk)
        human_share = walk.guarantee.share
    band = fit_band(curve, human_share=human_share, target_accuracy=triage.target_accuracy)
    report = CalibrationReport(
        winner=winner,
        candidates=table,
        baselines=baselines,
        n_labels=int(len(yb)),
        n_splits=n_splits,
        seed=seed,
        oof_proba=oof,
        effort_curve=curve,
        costs=costs,
        inputs=selection,
        guarantee=walk,
    )
    info = {
        "n_labels": int(len(yb)),
        "n_positive": int(yb.sum()),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": seed,
        **dict(fitted_on or {}),
    }
    if knowledge is not None:  # offered: which of its inputs the winner reads (maybe none)
        info["knowledge_inputs"] = read_knowledge
    quality_info = report.to_dict()
    quality_info["triage"] = {
        "share": band.share,
        "cv_accuracy_confident": band.cv_accuracy_confident,
        "cv_accuracy_combined": band.cv_accuracy_combined,
        "probability": "Platt scaling of the winner's out-of-fold scores",
    }
    if walk is not None and walk.guarantee is not None:
        quality_info["triage"]["guarantee"] = walk.guarantee.statement()
    judge = Judge(
        kept_features,
        model,
        name=name,
        fitted_on=info,
        quality=quality_info,
        probability=calibrator,
        triage=band,
        guarantee=None if walk is None else walk.guarantee,
        knowledge=knowledge.with_columns(read_knowledge) if read_knowledge and knowledge else None,
        cost=None
        if costs is None
        else cost_record(
            costs,
            cols,
            [f.column for f in kept_features],
            None if selection is None else selection.to_dict(),
            cost_policy.inputs,
        ),
    )
    return judge, report
