"""Closing the loop between a calibrated judge and people: route, decide, estimate.

* :func:`route_uncertain` applies a saved calibration to a stored dataset and deals the items
  the judge is unsure of to annotators, as a recorded ``triage`` deal.
* :func:`final_labels` gives every item one final label and says where it came from:
  adjudication, then the annotators' aggregate (majority by default, or Dawid-Skene), then the
  judge.
* :func:`estimation_frame` is the one-row-per-item frame that
  :func:`qaeval_core.analysis.estimates.estimate_accuracy` reads (judge probability, human gold
  label, and whether that label belongs to the random sample).
* :func:`export_records` / :data:`EXPORTS`: the store's exports plus ``final``
  (``qaeval export --what final``).

``label_sample`` says how an item's human labels were chosen. It is ``"random"`` when the item
was drawn by an **audit deal** (:class:`qaeval_core.store.AuditSample`, a
seeded uniform random sample), whoever labelled it: an audit that draws an item triage already
sent to someone keeps it in the random sample, or the random sample would lack exactly the
items the judge doubts. Otherwise it is the kind of deal that queued the item for its raters
(``"triage"``, then ``"queue"``), else the labels' source (``"import"`` for imported raters),
else ``"adjudication"`` (an adjudication and no rater label); empty for items without a human
label. Only ``"random"`` labels may stand in for the whole dataset in an estimate; a random
sample still being labelled is random only if its labelled part is (an audit deal serves its
sample in random order for that reason).

Why it is one module: routing, final labels, the estimation frame and the ``final`` export all
read one per-item "human side" (:func:`_human_side`: the aggregate verdict and how its labels
were chosen) joined to one judge's verdicts; split apart, that join and its precedence rules
would be written twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.aggregation import Aggregate, check_aggregate, dawid_skene
from qaeval_core.analysis.agreement import aggregate_labels
from qaeval_core.analysis.estimates import RANDOM_SAMPLE  # the audit deal's label_sample
from qaeval_core.errors import ConfigError, InputError, NothingToDraw
from qaeval_core.judge import Judge
from qaeval_core.vocabulary import EXPORTS, FINAL_EXPORT
from qaeval_core.workflows.sample_probability import sample_probabilities
from qaeval_core.workflows.stored_scoring import judge_dataset

__all__ = [
    "ESTIMATION_COLUMNS",
    "EXPORTS",
    "FINAL_COLUMNS",
    "FINAL_EXPORT",
    "LABEL_SOURCES",
    "RANDOM_SAMPLE",
    "TriageResult",
    "estimation_frame",
    "export_records",
    "final_labels",
    "route_uncertain",
]

#: Where a final label comes from, in order of precedence ("none": no human label, no judge).
LABEL_SOURCES = ("adjudication", "annotators", "judge", "none")
FINAL_COLUMNS = [
    "item_id",
    "external_id",
    "qa_model",
    "final_label",
    "final_correct",
    "source",
    "label_sample",
    "sample_probability",
    "judge_probability",
    "judge_outcome",
]
ESTIMATION_COLUMNS = [
    "item_id",
    "external_id",
    "qa_model",
    "judge_probability",
    "judge_correct",
    "judge_outcome",
    "judge_reason",
    "gold_label",
    "label_scale",
    "label_sample",
    "sample_probability",
]
_JUDGE_COLUMNS = ["item_id", "judge_probability", "judge_correct", "judge_outcome", "judge_doubt"]
_STATUS = ("dealt", "labelled", "queued")


# ----------------------------------------------------------------------------- inputs


def _load_judge(db: store.Store, calibration: str) -> Judge:
    """The saved calibration as a judge (NotFoundError naming the saved ones)."""
    if not isinstance(calibration, str) or not calibration.strip():
        raise InputError(
            "Name the saved calibration to apply (one saved when calibrating with a name).",
            param="calibration",
        )
    return Judge.from_config(store.get_calibration(db, calibration).config)


def _judged(db: store.Store, dataset: str, judge: Judge) -> pd.DataFrame:
    """The judge's columns per item (stored input scores reused, missing ones stored)."""
    frame, _ = judge_dataset(db, dataset, judge)
    missing = [c for c in _JUDGE_COLUMNS if c not in frame.columns]
    if missing:  # pragma: no cover - a judge always adds them
        raise ConfigError(f"The judge gave no {', '.join(missing)} column(s).")
    return frame[_JUDGE_COLUMNS + [c for c in ("judge_reason",) if c in frame.columns]]


def _url(db: store.Store) -> str | None:
    if db is not None and not isinstance(db, str):
        raise InputError(
            "route_uncertain deals in its own locked transaction; pass a store URL (or None for "
            "the default store), not an open session."
        )
    return db


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise InputError(f"{name} must be a whole number >= 1, got {value!r}.")
    return int(value)


# ----------------------------------------------------------------------------- routing


@dataclass(frozen=True)
class TriageResult:
    """What :func:`route_uncertain` did.

    ``items`` has one row per selected item, most doubtful first: ``item_id``, ``external_id``,
    ``qa_model``, ``judge_probability``, ``judge_doubt``, ``judge_outcome`` and ``status``:
    ``dealt``, ``labelled`` (skipped: it already has a human label) or ``queued`` (skipped: it
    is already in someone's queue). ``deal`` is the store's record of the triage deal
    (``deal.deal_id`` is None when nothing was left to deal); ``selection`` says how items were
    chosen.
    """

    dataset: str
    calibration: str
    selection: str
    items: pd.DataFrame
    deal: store.DealResult

    def _ids(self, status: str) -> list[int]:
        return [int(i) for i in self.items.loc[self.items["status"] == status, "item_id"]]

    @property
    def dealt(self) -> list[int]:
        return self._ids("dealt")

    @property
    def skipped(self) -> dict[str, list[int]]:
        """Item ids left out, by reason: ``labelled`` and ``queued``."""
        return {"labelled": self._ids("labelled"), "queued": self._ids("queued")}

    def summary(self) -> str:
        skipped = self.skipped
        per = ", ".join(f"{n}: +{k}" for n, k in self.deal.per_annotator.items())
        return (
            f"{len(self.items)} item(s) of {self.dataset!r} selected ({self.selection}); "
            f"{len(self.dealt)} dealt ({self.deal.added} assignment(s); {per}); skipped "
            f"{len(skipped['labelled'])} already labelled, {len(skipped['queued'])} already "
            "queued."
        )


def _band_error(name: str, judge: Judge) -> ConfigError:
    curve = judge.triage is not None and bool(judge.triage.curve)
    alt = "pass human_share=S (read off its effort curve) or" if curve else "or use"
    return ConfigError(
        f"Calibration {name!r} has no triage band to route 'uncertain' items: calibrate again "
        f"with a human share (human_share=S), {alt} n_most_uncertain=N to route the N items "
        "the judge doubts most."
    )


def route_uncertain(
    db: store.Store,
    dataset: str,
    calibration: str,
    users: list[str] | tuple[str, ...],
    *,
    n_most_uncertain: int | None = None,
    human_share: float | None = None,
    seed: int = 0,
    base: int = 1,
    extra_fraction: float = 0.0,
    extra_k: int = 2,
    created_by: str | None = None,
    floor: float | None = None,
) -> TriageResult:
    """Deal the items a saved calibration is unsure of to ``users`` (a ``triage`` deal).

    With ``floor`` (a probability in (0, 1]) the items are **drawn by chance** instead
    (:func:`_route_by_chance`): as many as the selection below would route among the
    unlabelled items are drawn in expectation, each with a known probability that grows with
    the judge's doubt and is never below ``floor``, so their labels count in estimates
    (issue 24); ``seed`` also seeds the draw.

    The calibration is applied through :func:`judge_dataset` (stored scores reused). Selected
    are the items whose ``judge_outcome`` is ``uncertain`` under the calibration's triage band
    (``human_share``: the band routing about that share instead, read off the stored effort
    curve), or with ``n_most_uncertain`` the N items of highest ``judge_doubt``, labelled or not.
    Selected items that already have a human label or are already in someone's queue are
    skipped and reported; the rest are dealt, most doubtful first, with the overlap options of
    :func:`qaeval_core.store.deal` (``base``, ``extra_fraction``, ``extra_k``; ``seed``
    picks the overlap items). Running it again routes nothing twice.

    Every argument is checked before anything is scored or dealt: an unknown dataset,
    calibration or user, ``n_most_uncertain`` below 1, a share outside [0, 1) or a calibration
    without a band (unless ``n_most_uncertain`` is given) raise a :class:`QAEvalError`.
    """
    url = _url(db)
    if n_most_uncertain is not None and human_share is not None:
        raise InputError("Give n_most_uncertain or human_share, not both.")
    if n_most_uncertain is not None:
        n_most_uncertain = _positive_int(n_most_uncertain, "n_most_uncertain")
    store.get_dataset(url, dataset)
    judge = _load_judge(url, calibration)
    if n_most_uncertain is None:
        if judge.triage is None or (human_share is None and judge.triage.share <= 0):
            raise _band_error(calibration, judge)
        if human_share is not None:
            judge = judge.with_share(human_share)
    store.check_queue_users(
        url, list(users), base=base, extra_fraction=extra_fraction, extra_k=extra_k
    )
    if created_by is not None:
        store.get_user(url, created_by)

    if floor is not None:
        _check_floor(floor)

    judged = _judged(url, dataset, judge)
    items = store.list_items(url, dataset)[["item_id", "external_id", "qa_model"]]
    frame = items.merge(judged, on="item_id", how="left")
    frame = frame.sort_values(
        ["judge_doubt", "item_id"], ascending=[False, True], na_position="last", kind="stable"
    )
    if n_most_uncertain is not None:
        chosen = frame.head(n_most_uncertain)
        selection = f"the {n_most_uncertain} of highest judge_doubt"
    else:
        band = judge.triage
        chosen = frame[frame["judge_outcome"] == "uncertain"]
        selection = f"judge_outcome 'uncertain', band share {band.share:g}" if band else ""
    ids = [int(i) for i in chosen["item_id"]]
    params = {
        "calibration": calibration,
        "selection": "n_most_uncertain" if n_most_uncertain is not None else "band",
        "n_most_uncertain": n_most_uncertain,
        "human_share": human_share,
        "band_threshold": None if judge.triage is None else judge.triage.threshold,
        "band_share": None if judge.triage is None else judge.triage.share,
    }
    options = store.DealOptions(
        base=base, extra_fraction=extra_fraction, extra_k=extra_k, seed=seed, created_by=created_by
    )
    if floor is not None:
        return _route_by_chance(
            url, dataset, calibration, list(users), frame, chosen, float(floor), options, params
        )
    result = store.deal(url, dataset, list(users), store.TriageItems(ids, params), options)
    status = dict.fromkeys(result.item_ids, "dealt")
    status.update(dict.fromkeys(result.skipped_labelled, "labelled"))
    status.update(dict.fromkeys(result.skipped_queued, "queued"))
    out = chosen[
        ["item_id", "external_id", "qa_model", "judge_probability", "judge_doubt", "judge_outcome"]
    ].reset_index(drop=True)
    out["status"] = [status.get(int(i), "dealt") for i in out["item_id"]]
    return TriageResult(result.dataset, calibration, selection, out, result)


def _check_floor(floor: Any) -> None:
    ok = isinstance(floor, int | float | np.integer | np.floating) and not isinstance(floor, bool)
    if not ok or not 0 < floor <= 1:
        raise InputError(
            f"floor must be a probability in (0, 1] (each unlabelled item's least chance to be "
            f"drawn); got {floor!r}."
        )


def _route_by_chance(
    url, dataset, calibration, users, frame, chosen, floor, options, params
) -> TriageResult:
    """``route_uncertain`` with ``floor``: draw by chance (:func:`route_uncertain`)."""
    from qaeval_core.analysis.selection_design import inclusion_probabilities

    human = _human_side(url, dataset)
    done = set(
        human.loc[
            (human["n_labels"].fillna(0) > 0) | human["adjudicated"].notna(), "item_id"
        ].astype(int)
    )
    todo = frame[~frame["item_id"].astype(int).isin(done)]
    if todo["judge_probability"].isna().any():  # pragma: no cover - the judge scores every item
        raise ConfigError("The judge gave no probability for some items; score them first.")
    budget = int((~chosen["item_id"].astype(int).isin(done)).sum())
    if budget == 0 or todo.empty:
        raise NothingToDraw(
            "Nothing to draw: every item the selection would route is labelled already."
        )
    pi = inclusion_probabilities(todo["judge_probability"].to_numpy(float), budget, floor)
    probabilities = dict(zip(todo["item_id"].astype(int), pi, strict=True))
    params = {**params, "floor": floor, "budget": budget}
    draw = store.TriageByChance(probabilities, params)
    result = store.deal(url, dataset, users, draw, options)
    status = dict.fromkeys(result.item_ids, "dealt")
    status.update(dict.fromkeys(result.skipped_queued, "queued"))
    drawn = todo[todo["item_id"].astype(int).isin(status)]
    out = drawn[
        ["item_id", "external_id", "qa_model", "judge_probability", "judge_doubt", "judge_outcome"]
    ].reset_index(drop=True)
    out["inclusion_probability"] = [probabilities[int(i)] for i in out["item_id"]]
    out["status"] = [status[int(i)] for i in out["item_id"]]
    selection = (
        f"drawn by chance: {budget} expected among {len(todo)} unlabelled items, probability "
        f"growing with judge_doubt, floor {floor:g}"
    )
    return TriageResult(result.dataset, calibration, selection, out, result)


# ----------------------------------------------------------------------------- final labels


def _label_sample(
    agg: pd.DataFrame, origins: pd.DataFrame, audit_items: set[int]
) -> dict[int, str]:
    """``label_sample`` per item with a human verdict (see the module docstring)."""
    by_item: dict[int, list[tuple[Any, Any]]] = {}
    for item_id, kind, source in origins[["item_id", "deal_kind", "source"]].itertuples(
        index=False
    ):
        by_item.setdefault(int(item_id), []).append((kind, source))
    out: dict[int, str] = {}
    human = agg[(agg["n_labels"] > 0) | agg["adjudicated"].notna()]
    for item_id in human["item_id"].astype(int):
        rows = by_item.get(item_id, [])
        kinds = {k for k, _ in rows if isinstance(k, str)}
        sources = sorted({str(s) for k, s in rows if not isinstance(k, str) and s is not None})
        if item_id in audit_items or "audit" in kinds:
            out[item_id] = RANDOM_SAMPLE
        elif "triage" in kinds:
            out[item_id] = "triage"
        elif "queue" in kinds:
            out[item_id] = "queue"
        elif sources:
            out[item_id] = "import" if "import" in sources else sources[0]
        else:
            out[item_id] = "adjudication"
    return out


def _human_side(db: store.Store, dataset: str, aggregate: str = "majority") -> pd.DataFrame:
    """Per item (import order): ids, QA model, the aggregate verdict and ``label_sample``.

    ``aggregate`` (:data:`~qaeval_core.analysis.aggregation.AGGREGATES`) turns the raters'
    labels of an item into one: ``majority`` (a tie is 1) or ``dawid_skene``; an adjudication
    overrides either.
    """
    check_aggregate(aggregate)
    with store.store_scope(db) as s:
        items = store.frame_items(s, dataset)
        labels = store.frame_labels(s, dataset)
        adjudications = store.adjudication_rows(s, dataset)
        origins = store.label_origins(s, dataset)
        drawn = store.deal_item_rows(s, dataset)
        deals = store.list_deals(s, dataset)
    audit = drawn[drawn["kind"] == "audit"]
    agg = aggregate_labels(labels, adjudications, items[["item_id"]])
    if aggregate == "dawid_skene":
        weighted = dawid_skene(labels).set_index("item_id")["label"]
        raters = weighted.reindex(agg["item_id"]).to_numpy()
        agg["final"] = agg["adjudicated"].fillna(pd.Series(raters, index=agg.index, dtype="Int64"))
    items = items.astype({"item_id": "int64"})  # also when empty (object dtype)
    agg = agg.astype({"item_id": "int64"})
    out = items[["item_id", "external_id", "qa_model"]].merge(
        agg[["item_id", "n_labels", "adjudicated", "final"]], on="item_id", how="left"
    )
    sample = _label_sample(agg, origins, {int(i) for i in audit["item_id"]})
    out["label_sample"] = [sample.get(int(i), "") for i in out["item_id"]]
    known = sample_probabilities(deals, drawn, sample)
    out["sample_probability"] = [known.get(int(i), np.nan) for i in out["item_id"]]
    return out


def _with_judge(db: store.Store, dataset: str, human: pd.DataFrame, calibration: str | None):
    if calibration is None:
        out = human.copy()
        out["judge_probability"] = np.nan
        out["judge_correct"] = pd.array([pd.NA] * len(out), dtype="boolean")
        out["judge_outcome"] = None
        out["judge_reason"] = None
        out["judge_doubt"] = np.nan
        return out
    judged = _judged(db, dataset, _load_judge(db, calibration))
    return human.merge(judged.astype({"item_id": "int64"}), on="item_id", how="left")


def final_labels(
    db: store.Store,
    dataset: str,
    calibration: str | None = None,
    *,
    aggregate: Aggregate = "majority",
) -> pd.DataFrame:
    """One final label per item of the dataset, with where it came from.

    Columns :data:`FINAL_COLUMNS`: ``final_label`` on the 3-point scale (0 incorrect, 1
    unclear, 2 correct; a judge-decided item gets 2 or 0), ``final_correct`` (label 2),
    ``source`` (:data:`LABEL_SOURCES`: an adjudication, else the annotators' aggregate:
    ``aggregate="majority"`` (default; :func:`qaeval_core.analysis.agreement.aggregate_labels`,
    a tie is 1) or ``"dawid_skene"`` (:func:`qaeval_core.analysis.aggregation.dawid_skene`,
    each rater weighed by their estimated confusion matrix), else the
    judge of the saved ``calibration``, else ``none`` with no label), ``label_sample`` (module
    docstring), ``sample_probability`` (the probability the item was chosen for labelling,
    :mod:`.sample_probability`; empty where unknown), and the judge's ``judge_probability`` and
    ``judge_outcome`` (empty without a calibration). An item the judge is ``uncertain`` about
    and no person has labelled still gets the judge's verdict: ``judge_outcome`` says so
    (:func:`route_uncertain` sends such items to people).
    """
    human = _human_side(db, dataset, aggregate)  # first: an unknown dataset fails before scoring
    frame = _with_judge(db, dataset, human, calibration)
    adjudicated = frame["adjudicated"].notna().to_numpy()
    rated = (frame["n_labels"].fillna(0) > 0).to_numpy() & ~adjudicated
    judged = ~adjudicated & ~rated & frame["judge_correct"].notna().to_numpy()
    source = np.select([adjudicated, rated, judged], list(LABEL_SOURCES[:3]), LABEL_SOURCES[3])
    human_final = frame["final"].astype("Int64")
    judge_final = pd.Series(
        np.where(frame["judge_correct"].fillna(False).astype(bool), 2, 0), index=frame.index
    ).astype("Int64")
    final = human_final.where(adjudicated | rated, judge_final.where(judged, pd.NA))
    out = frame[["item_id", "external_id", "qa_model"]].copy()
    out["final_label"] = final.astype("Int64")
    out["final_correct"] = (out["final_label"] == 2).astype("boolean")
    out.loc[out["final_label"].isna(), "final_correct"] = pd.NA
    out["source"] = source
    out["label_sample"] = frame["label_sample"]
    out["sample_probability"] = frame["sample_probability"].astype(float)
    out["judge_probability"] = frame["judge_probability"].astype(float)
    out["judge_outcome"] = frame["judge_outcome"]
    return out[FINAL_COLUMNS].reset_index(drop=True)


def estimation_frame(db: store.Store, dataset: str, calibration: str) -> pd.DataFrame:
    """One row per item for :func:`qaeval_core.analysis.estimates.estimate_accuracy`.

    Columns :data:`ESTIMATION_COLUMNS`: the saved calibration's ``judge_probability``,
    ``judge_correct`` and ``judge_outcome``; ``gold_label``, the human verdict on the 3-point
    scale (adjudication, else the annotators' majority; missing without a human label) with
    ``label_scale`` ``"three"`` on every row; ``label_sample``, ``"random"`` exactly for the
    items of an audit deal's random sample; and ``sample_probability`` (:mod:`.sample_probability`:
    known for the labels of a triage deal drawn by chance, which estimates then weight). Call::

        estimate_accuracy(frame, prediction="judge_probability", label="gold_label",
                          model="qa_model", sample="label_sample")
    """
    if calibration is None:
        raise InputError("estimation_frame needs a saved calibration (the judge's predictions).")
    human = _human_side(db, dataset)
    frame = _with_judge(db, dataset, human, calibration)
    out = frame[["item_id", "external_id", "qa_model"]].copy()
    out["judge_probability"] = frame["judge_probability"].astype(float)
    out["judge_correct"] = frame["judge_correct"].astype(bool)
    out["judge_outcome"] = frame["judge_outcome"]
    out["judge_reason"] = frame.get("judge_reason")
    out["gold_label"] = frame["final"].astype("Int64")
    out["label_scale"] = "three"
    out["label_sample"] = frame["label_sample"]
    out["sample_probability"] = frame["sample_probability"].astype(float)
    return out[ESTIMATION_COLUMNS].reset_index(drop=True)


# ----------------------------------------------------------------------------- exports


def export_records(
    db: store.Store,
    dataset: str,
    what: str = "items",
    *,
    metric_id: str | None = None,
    calibration: str | None = None,
    aggregate: Aggregate = "majority",
) -> list[dict[str, Any]] | pd.DataFrame:
    """The rows of one export (:data:`EXPORTS`): the store's, or ``final`` (:func:`final_labels`
    with the saved ``calibration`` and the annotators' ``aggregate``, which only ``final``
    takes)."""
    if what not in EXPORTS:
        raise ConfigError(f"Unknown export {what!r}; expected one of {', '.join(EXPORTS)}.")
    if what == FINAL_EXPORT:
        return final_labels(db, dataset, calibration, aggregate=aggregate)
    if aggregate != "majority":
        raise ConfigError(
            f"An aggregate only applies to the {FINAL_EXPORT!r} export, not to {what!r}."
        )
    if calibration is not None:
        raise ConfigError(
            f"A calibration only applies to the {FINAL_EXPORT!r} export (judge-decided final "
            f"labels), not to {what!r}."
        )
    return store.export_store_records(db, dataset, what, metric_id=metric_id)
