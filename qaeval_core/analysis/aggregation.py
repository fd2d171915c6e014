"""Annotator quality and an aggregate beyond majority vote (Dawid-Skene, via ``crowd-kit``).

Majority vote trusts every rater equally; Dawid-Skene (1979) estimates each rater's confusion
matrix by EM and weighs their labels by it, so a careful rater outvotes two careless ones and a
single label counts as much as its rater deserves. The EM is ``crowd-kit``'s
:class:`crowdkit.aggregation.DawidSkene` (initialised from majority vote, deterministic); this
module only shapes the frames and reads the results.

The 3-point scale. Dawid-Skene is nominal: the values 0 (incorrect), 1 (unclear) and 2
(correct) are fitted as three classes, so "unclear" stays an answer the aggregate can give
(as in the majority policy, where a tie is "unclear") and each rater's habit of saying
"unclear" is part of their confusion matrix. A class nobody used is simply absent. An exact tie
of the posterior gives 1 ("unclear"), like a tied majority. MACE (also in crowd-kit) was left
out: it takes seconds per fit on the demo (Dawid-Skene: a fraction of one) and its random
restarts would make the Agreement page's numbers wobble unless seeded everywhere.

:func:`annotator_quality` puts per rater side by side: agreement with the researchers'
adjudicated labels, with the majority of the other raters (:func:`.agreement.rater_vs_rest`)
and with the Dawid-Skene aggregate, plus Dawid-Skene's estimate of the rater's accuracy.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.analysis.agreement import check_labels, rater_vs_rest
from qaeval_core.errors import QAEvalError
from qaeval_core.stats import cohen_kappa
from qaeval_core.vocabulary import AGGREGATES, Aggregate

__all__ = [
    "AGGREGATES",
    "Aggregate",
    "QUALITY_COLUMNS",
    "annotator_quality",
    "check_aggregate",
    "dawid_skene",
]

# How the annotators' labels of an item become one (``final_labels``' "annotators' aggregate"):
# defined in the light vocabulary module, so the CLI lists them without importing this one.
QUALITY_COLUMNS = [
    "rater",
    "n_labels",
    "n_adjudicated",
    "agree_adjudicated",
    "kappa_adjudicated",
    "n_vs_rest",
    "agree_rest",
    "kappa_rest",
    "agree_dawid_skene",
    "ds_accuracy",
]
_VALUES = [0, 1, 2]


def check_aggregate(aggregate: str) -> Aggregate:
    """``aggregate`` if it is one of :data:`AGGREGATES`, else an error listing them."""
    if aggregate not in AGGREGATES:
        raise QAEvalError(f"aggregate must be one of {', '.join(AGGREGATES)}; got {aggregate!r}.")
    return aggregate  # type: ignore[return-value]


def _fit(frame: pd.DataFrame, n_iter: int, tol: float) -> Any:
    """crowd-kit's DawidSkene fitted on the labels (imported here: ``crowdkit.aggregation``
    takes seconds to import, which every CLI command and page would otherwise pay)."""
    from crowdkit.aggregation import DawidSkene

    data = pd.DataFrame(
        {"task": frame["item_id"], "worker": frame["rater"].astype(str), "label": frame["value"]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DawidSkene(n_iter=n_iter, tol=tol).fit(data)


def dawid_skene(labels: pd.DataFrame, *, n_iter: int = 100, tol: float = 1e-5) -> pd.DataFrame:
    """The Dawid-Skene label of every labelled item (3-point, see the module docstring).

    Returns columns ``item_id``, ``label`` (Int64: 0, 1 or 2), ``p_correct`` (the posterior
    probability of "clearly correct") and ``confidence`` (the posterior of ``label``); empty
    without labels.

    >>> labels = pd.DataFrame({"item_id": [1, 1, 1, 2, 2, 2], "rater": list("abcabc"),
    ...                        "value": [2, 2, 0, 0, 0, 0]})
    >>> dawid_skene(labels)["label"].tolist()
    [2, 0]
    """
    frame = check_labels(labels)
    columns = ["item_id", "label", "p_correct", "confidence"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    model = _fit(frame, n_iter, tol)
    probas = model.probas_.reindex(columns=_VALUES, fill_value=0.0).astype(float)
    p = probas.to_numpy()
    top = p.max(axis=1)
    tied = (np.isclose(p, top[:, None])).sum(axis=1) > 1
    label = np.where(tied, 1, np.array(_VALUES)[p.argmax(axis=1)])
    out = pd.DataFrame(
        {
            "item_id": probas.index.to_numpy(),
            "label": pd.array(label, dtype="Int64"),
            "p_correct": p[:, 2],
            "confidence": top,
        }
    )
    return out.sort_values("item_id").reset_index(drop=True)


def _rater_accuracy(model: Any) -> dict[str, float]:
    """Dawid-Skene's estimate of each rater's accuracy: sum over classes of the class prior
    times P(rater says it | it is true)."""
    errors = model.errors_  # index (worker, label given), columns: true label
    priors = model.priors_
    out: dict[str, float] = {}
    for worker, part in errors.groupby(level=0):
        given = part.droplevel(0)
        out[str(worker)] = float(
            sum(priors.get(c, 0.0) * given.at[c, c] for c in given.columns if c in given.index)
        )
    return out


def annotator_quality(
    labels: pd.DataFrame, adjudications: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per rater: agreement with the adjudicated labels, with the others and with the
    Dawid-Skene aggregate, and Dawid-Skene's estimate of their accuracy.

    ``agree_adjudicated`` is the share of the rater's items with an adjudication (last row per
    item) where the rater gave the same 3-point value; ``kappa_adjudicated`` Cohen's kappa on
    the binary label (correct or not) over those items. ``n_vs_rest``, ``agree_rest`` and
    ``kappa_rest`` are :func:`~.agreement.rater_vs_rest` (binary, against the others'
    majority). ``agree_dawid_skene``: share of the rater's labels equal to the aggregate.
    Undefined values are NaN (no adjudicated item, nobody else on their items).

    Returns :data:`QUALITY_COLUMNS`, one row per rater, sorted by name.
    """
    frame = check_labels(labels)
    if frame.empty:
        return pd.DataFrame(columns=QUALITY_COLUMNS)
    model = _fit(frame, 100, 1e-5)
    accuracy = _rater_accuracy(model)
    aggregate = dawid_skene(frame).set_index("item_id")["label"]
    adj = pd.Series(dtype="Int64")
    if adjudications is not None and len(adjudications):
        last = adjudications.dropna(subset=["value"]).drop_duplicates("item_id", keep="last")
        adj = last.set_index("item_id")["value"].astype(int)
    rest = rater_vs_rest(frame).set_index("rater")
    rows = []
    for rater, own in frame.groupby("rater", sort=True):
        mine = own.set_index("item_id")["value"]
        decided = mine[mine.index.isin(adj.index)]
        truth = adj.reindex(decided.index)
        n_adj = len(decided)
        ds = aggregate.reindex(mine.index).astype(int)
        rows.append(
            {
                "rater": rater,
                "n_labels": len(own),
                "n_adjudicated": n_adj,
                "agree_adjudicated": float((decided == truth).mean()) if n_adj else np.nan,
                "kappa_adjudicated": cohen_kappa(
                    (decided.to_numpy() == 2).astype(int),
                    (truth.to_numpy() == 2).astype(int),
                    [0, 1],
                )
                if n_adj
                else np.nan,
                "n_vs_rest": int(rest.at[rater, "n_items"]),
                "agree_rest": float(rest.at[rater, "agreement"]),
                "kappa_rest": float(rest.at[rater, "kappa"]),
                "agree_dawid_skene": float((mine == ds).mean()),
                "ds_accuracy": accuracy.get(str(rater), np.nan),
            }
        )
    return pd.DataFrame(rows, columns=QUALITY_COLUMNS)
