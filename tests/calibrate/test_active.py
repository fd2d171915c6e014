"""Active selection: disagreement ranking, queue re-ordering (unlabelled positions only) and the
label budget for a target CI width, checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from qaeval_core import store, workflows
from qaeval_core.calibrate import active
from qaeval_core.errors import ConfigError
from qaeval_core.store.orm import Assignment, User
from qaeval_core.store.session import session_scope

Z95 = 1.959963984540054


def long_frame(rows: dict[int, dict[str, float]], threshold: float = 0.5) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"item_id": i, "metric_id": m, "value": v, "decision": v >= threshold}
            for i, per in rows.items()
            for m, v in per.items()
        ]
    )


def test_split_votes_rank_before_unanimous_ones() -> None:
    scores = long_frame(
        {
            1: {"em": 1.0, "f1": 1.0, "contains": 1.0},  # unanimous, far from the cut
            2: {"em": 0.0, "f1": 0.9, "contains": 1.0},  # 2 of 3 say correct
            3: {"em": 0.0, "f1": 0.0, "contains": 0.0},  # unanimous
            4: {"em": 0.0, "f1": 0.55, "contains": 0.0},  # 1 of 3, f1 near its cut
            5: {"em": 0.0, "f1": 0.45, "contains": 0.0},  # unanimous but f1 near its cut
        }
    )
    ranked = active.disagreement_order(scores)
    assert ranked["item_id"].tolist()[:2] in ([2, 4], [4, 2])
    assert ranked["item_id"].tolist()[2] == 5  # closeness orders the unanimous items
    assert set(ranked["item_id"].tolist()[3:]) == {1, 3}
    by_id = ranked.set_index("item_id")
    h = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    assert by_id.loc[2, "vote_entropy"] == pytest.approx(h)
    assert by_id.loc[1, "vote_entropy"] == 0 and by_id.loc[2, "votes_correct"] == 2
    # item 4 (same entropy as 2) has f1 closer to its implied threshold: ranked first
    assert ranked["item_id"].iloc[0] == 4


def test_wide_input_with_thresholds_equals_long_input() -> None:
    rows = {1: {"a": 0.2, "b": 0.8}, 2: {"a": 0.9, "b": 0.95}, 3: {"a": 0.1, "b": 0.05}}
    wide = pd.DataFrame(rows).T
    from_wide = active.disagreement_order(wide, thresholds={"a": 0.5, "b": 0.5})
    assert from_wide["item_id"].iloc[0] == 1
    assert from_wide.set_index("item_id").loc[1, "vote_entropy"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="No scores for metric"):
        active.disagreement_order(wide, metrics=["a", "zzz"])


def test_implied_thresholds_midway_between_decisions() -> None:
    scores = pd.DataFrame({"m": [0.1, 0.3, 0.7, 0.9], "one_way": [0.1, 0.2, 0.3, 0.4]})
    decisions = pd.DataFrame({"m": [False, False, True, True], "one_way": [True] * 4})
    assert active.implied_thresholds(scores, decisions) == {"m": pytest.approx(0.5)}


def test_labels_needed_matches_hand_computation() -> None:
    # normal approximation: n = 4 z^2 p (1 - p) / w^2 = 4 * 3.8415 * 0.16 / 0.01 = 245.9 -> 246
    assert active.labels_needed_for_ci(0.8, 100, 0.1, method="normal") == 246 - 100
    assert active.labels_needed_for_ci(0.8, 300, 0.1, method="normal") == 0
    # Wilson: the smallest n whose interval is no wider than the target, found by hand
    n = next(k for k in range(1, 2000) if active.ci_width(0.8, k) <= 0.1)
    assert active.labels_needed_for_ci(0.8, 0, 0.1) == n
    assert active.ci_width(0.8, n - 1) > 0.1 >= active.ci_width(0.8, n)
    wilson = (
        2 * Z95 / (1 + Z95**2 / n) * math.sqrt(0.8 * 0.2 / n + Z95**2 / (4 * n * n))
    )  # the Wilson score interval's width
    assert active.ci_width(0.8, n) == pytest.approx(wilson)
    assert abs(n - 246) <= 3  # close to the normal approximation away from 0 and 1
    # a design effect of 2 doubles the total
    assert active.labels_needed_for_ci(0.8, 0, 0.1, method="normal", design_effect=2) == 492
    # p = 1: the Wald width is 0 (no labels needed), Wilson still asks for some
    assert active.labels_needed_for_ci(1.0, 10, 0.1, method="normal") == 0
    assert active.labels_needed_for_ci(1.0, 10, 0.1) == math.ceil(Z95**2 / 0.1 - Z95**2) - 10
    with pytest.raises(ValueError, match="target_ci_width"):
        active.labels_needed_for_ci(0.8, 10, 0.0)


ROWS = [
    {"id": f"q{i}", "question": f"Question {i}?", "references": [ref], "candidate": cand}
    for i, (ref, cand) in enumerate(
        [
            ("Paris", "Paris"),  # all metrics agree: correct
            ("William Shakespeare", "Shakespeare wrote it"),  # split votes
            ("Jupiter", "Saturn"),  # all agree: incorrect
            ("100 degrees", "about 100"),  # split
            ("Mount Everest", "Everest"),  # split
            ("Tokyo", "Tokyo"),
        ]
    )
]


def _positions(url: str, user: str) -> dict[int, float]:
    with session_scope(url) as s:
        rows = s.execute(
            select(Assignment.item_id, Assignment.position)
            .join(User, User.id == Assignment.user_id)
            .where(User.name == user)
        ).all()
    return {int(i): float(p) for i, p in rows}


def test_reorder_queue_moves_only_unlabelled_assignments(sqlite_url: str) -> None:
    from qaeval_core.workflows import score_dataset

    url = sqlite_url
    store.import_items(url, "toy", ROWS)
    for name in ("a1", "a2"):
        store.add_user(url, name, "annotator", "pw")
    store.deal(url, "toy", ["a1", "a2"], options=store.DealOptions(base=2))
    with pytest.raises(ConfigError, match="Score it first with two or more metrics"):
        workflows.reorder_queue(url, "toy")
    score_dataset(url, "toy", ["em", "f1", "contains"])
    ids = {it.id: int(it.meta["item_id"]) for it in store.load_items(url, "toy")}
    # a1 labels the first item of the dataset order and a split one
    first = store.next_item(url, "a1", "toy")
    assert first is not None and first.id == ids["q0"]
    store.save_label(url, "a1", ids["q0"], 2)
    store.save_label(url, "a1", ids["q3"], 0)
    before = _positions(url, "a1")
    before_a2 = _positions(url, "a2")

    result = workflows.reorder_queue(url, "toy", "a1", labelled_last=False)
    assert result.per_user == {"a1": 4} and result.metrics == ["contains", "em", "f1"]
    after = _positions(url, "a1")
    labelled = {ids["q0"], ids["q3"]}
    assert {i: after[i] for i in labelled} == {i: before[i] for i in labelled}
    assert _positions(url, "a2") == before_a2  # other queues untouched
    # the unlabelled items now come in disagreement order
    ranked = active.disagreement_order(store.scores(url, "toy"))
    expected = [i for i in ranked["item_id"] if i not in labelled]
    assert sorted(after, key=lambda i: (after[i], i) if i not in labelled else (1e9, i))[:4] == (
        expected
    )
    served = store.next_item(url, "a1", "toy")
    assert served is not None and served.id == expected[0]
    assert store.current_label(url, "a1", ids["q0"]).value == 2  # labels untouched

    # everybody at once; items somebody labelled go after never-labelled ones
    result = workflows.reorder_queue(url, "toy")
    assert result.per_user == {"a1": 4, "a2": 6}
    a2 = _positions(url, "a2")
    order = sorted(a2, key=lambda i: (a2[i], i))
    assert set(order[-2:]) == labelled
    assert np.all(np.diff(sorted(a2.values())) > 0)  # distinct positions: a strict order


def test_reorder_queue_errors(sqlite_url: str) -> None:
    store.import_items(sqlite_url, "toy", ROWS)
    with pytest.raises(ConfigError, match="Unknown strategy"):
        workflows.reorder_queue(sqlite_url, "toy", strategy="random")  # type: ignore[arg-type]


def test_design_effect_is_the_squared_width_ratio_never_below_one():
    """A grouped bootstrap interval r times wider than the Wilson one of as many labels means
    r ** 2 times the labels (the Calibrate page's label budget reads it)."""
    p, n = 0.8, 300
    wilson = active.ci_width(p, n)
    assert active.design_effect_from_width(p, n, 1.5 * wilson) == pytest.approx(2.25)
    assert active.design_effect_from_width(p, n, 0.7 * wilson) == 1.0  # narrower: noise
    assert active.design_effect_from_width(p, n, 0.0) == 1.0  # nothing measured
    assert active.design_effect_from_width(p, 0, 0.2) == 1.0  # no labels yet
    independent = active.labels_needed_for_ci(p, 0, 0.05)  # the total, from no labels
    wider = active.labels_needed_for_ci(p, n, 0.05, design_effect=2.25)
    assert wider == math.ceil(independent * 2.25 - 1e-9) - n
