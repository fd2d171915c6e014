"""Per labelled item, the probability that it was chosen for labelling (``sample_probability``).

Why this exists: :func:`qaeval_core.analysis.estimates.estimate_accuracy` counts a label chosen
by the judge's doubt only when it knows the probability that the label was asked for
(inverse-probability weighting, issue 24). The store records what each deal drew and with what
probability (``deal_items.inclusion_probability``); this module turns those records into one
probability per labelled item, the column the final-labels export and the estimation frame
carry.

The rule (:func:`sample_probabilities`):

* with a **triage deal drawn by chance** (:class:`qaeval_core.store.
  TriageByChance`), the latest one is the design: the items it held as known (labelled
  before it drew) get 1; the items it drew and that are labelled get their probability times
  the share of its drawn items labelled so far (it serves them in random order, so the labelled
  part is a uniform part of the draw: a drawn item is labelled with that share's chance);
  every other labelled item (labelled afterwards for another reason, or imported later) gets
  none and estimates leave it out;
* without one, the items of an audit's uniform random sample get 1, "a random sample", which
  estimates treat as before (a uniform sample); other labels get none.

Deterministic triage (the most doubtful items) never gives a probability: those labels stay
out of estimates, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.store import SELECTION_BY_CHANCE

__all__ = ["latest_by_chance_deal", "sample_probabilities"]


def _params(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def latest_by_chance_deal(deals: pd.DataFrame) -> pd.Series | None:
    """The newest triage deal drawn by chance (a row of ``store.list_deals``), or None."""
    if deals.empty:
        return None
    chosen = deals[
        (deals["kind"] == "triage")
        & deals["params"].map(lambda p: _params(p).get("selection") == SELECTION_BY_CHANCE)
    ]
    return None if chosen.empty else chosen.sort_values("deal_id").iloc[-1]


def sample_probabilities(
    deals: pd.DataFrame, deal_items: pd.DataFrame, labelled: Iterable[int]
) -> dict[int, float]:
    """``{item_id: probability}`` for the labelled items with a known one (module docstring).

    ``deals``: ``store.list_deals`` of the dataset; ``deal_items``: ``store.deal_item_rows``;
    ``labelled``: the items with a human verdict now.
    """
    labelled = {int(i) for i in labelled}
    design = latest_by_chance_deal(deals)
    if design is None:
        audit = deal_items.loc[deal_items["kind"] == "audit", "item_id"].astype(int)
        return {i: 1.0 for i in audit if i in labelled}
    rows = deal_items[deal_items["deal_id"] == design["deal_id"]]
    ids = rows["item_id"].astype(int).to_numpy()
    p = rows["inclusion_probability"].astype(float).to_numpy()
    for_sure = {int(i) for i in _params(design["params"]).get("drawn_for_sure", [])}
    known = (p >= 1.0) & ~np.isin(ids, list(for_sure))
    drawn = ~known
    done = np.isin(ids, list(labelled))
    share = float(done[drawn].mean()) if drawn.any() else 1.0
    out = {int(i): 1.0 for i in ids[known & done]}
    pairs = zip(ids[drawn & done], p[drawn & done], strict=True)
    out.update({int(i): float(q) * share for i, q in pairs})
    return out
