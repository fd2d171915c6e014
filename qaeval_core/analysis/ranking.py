"""The one ranking of QA models by accuracy, for ``qaeval estimate``, the report and the
Leaderboard.

Why here: the Leaderboard page sorted the estimates itself (equal PPI estimates kept the
table's order, ranks counted 1, 2, 3 whatever the ties) while :mod:`.estimates` broke ties by
name, and the terminal and the report listed the models unranked. The rule (:data:`RANK_RULE`,
said under every ranking) is now applied once, by :func:`ranked_models`, on
:func:`qaeval_core.stats.rank_order` (best first, equal estimates by name) and
:func:`qaeval_core.stats.competition_ranks` (equal estimates share the best rank: the data
cannot tell them apart, so their names must not).
"""

from __future__ import annotations

import pandas as pd

from qaeval_core.analysis.estimates import ALL_MODELS
from qaeval_core.stats import competition_ranks, rank_order

__all__ = ["RANK_RULE", "rankable", "ranked_models"]

#: The ranking rule, said under every ranking of QA models.
RANK_RULE = (
    "Rank: by PPI accuracy, given only when every QA model has a PPI estimate (enough random "
    "labels each); otherwise no model is ranked and they are listed by name, as a model without "
    "enough labels would otherwise sit below on less evidence. Equal estimates share a rank "
    "and are listed by name. Judge accuracy (share judged correct) and judge mean probability "
    "have no valid CI."
)


def rankable(table: pd.DataFrame) -> bool:
    """Whether the models of an :func:`~.estimates.estimate_accuracy` table may be ranked
    (:data:`RANK_RULE`): two or more, each with a PPI estimate."""
    models = table[table["model"] != ALL_MODELS]
    return len(models) >= 2 and bool(models["ppi_estimate"].notna().all())


def ranked_models(table: pd.DataFrame) -> pd.DataFrame:
    """The table's model rows in :data:`RANK_RULE` order with a ``rank`` column (Int64; NA
    where no model is ranked), then the overall row (rank NA).

    >>> t = pd.DataFrame({"model": ["b", "a", "c", ALL_MODELS],
    ...                   "ppi_estimate": [0.7, 0.7, 0.9, 0.75]})
    >>> r = ranked_models(t)
    >>> r["model"].tolist(), r["rank"].tolist()
    (['c', 'a', 'b', '(all)'], [1, 2, 2, <NA>])
    """
    models = table[table["model"] != ALL_MODELS].reset_index(drop=True)
    overall = table[table["model"] == ALL_MODELS].assign(rank=pd.NA)
    if rankable(table):
        estimates = models["ppi_estimate"].astype(float).tolist()
        order = rank_order(estimates, models["model"].tolist())
        ranks = competition_ranks(estimates)
        ordered = models.iloc[order].assign(rank=[ranks[i] for i in order])
    else:
        by_name = sorted(range(len(models)), key=lambda i: str(models["model"].iloc[i]))
        ordered = models.iloc[by_name].assign(rank=pd.NA)
    out = pd.concat([ordered, overall]) if len(overall) else ordered
    out["rank"] = out["rank"].astype("Int64")
    return out.reset_index(drop=True)
