"""Triage deals drawn by chance with known probabilities, and the ``sample_probability`` the
final labels and the estimation frame carry (issue 24, item 1).

Store tests run on SQLite and (with ``QAEVAL_TEST_POSTGRES_URL``) PostgreSQL.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from _triage_store import (
    assignment_rows,
    at_once,
    counts,
    fake_judgments,
    import_label,
    make_store,
    save_judge,
)

from qaeval_core import store, workflows
from qaeval_core.analysis.estimates import estimate_accuracy
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.store.queues.by_chance import uniform_of
from qaeval_core.workflows.sample_probability import sample_probabilities


def _probabilities(ids: list[int], skip: set[int]) -> dict[int, float]:
    """0.3 / 0.6 / 1.0 in turn for the items not in ``skip``."""
    cycle = (0.3, 0.6, 1.0)
    return {i: cycle[k % 3] for k, i in enumerate(ids) if i not in skip}


def test_deal_draws_by_chance_and_records_every_probability(db_url: str) -> None:
    ids = make_store(db_url, n_items=30)
    import_label(db_url, ids[0], 2)  # labelled before the deal: known for sure
    store.deal(db_url, "ds", ["ann3"], store.TriageItems([ids[1]]))  # already queued
    probs = _probabilities(ids, {ids[0]})
    result = store.deal(
        db_url,
        "ds",
        ["ann1", "ann2"],
        store.TriageByChance(probs),
        store.DealOptions(seed=7, created_by="boss"),
    )
    drawn = [i for i in ids[1:] if uniform_of(7, i) < probs[i]]
    assert result.kind == "triage" and result.items == len(drawn)
    assert sorted(result.item_ids) == sorted(i for i in drawn if i != ids[1])
    assert result.skipped_labelled == (ids[0],)
    assert result.skipped_queued == ((ids[1],) if ids[1] in drawn else ())
    rows = store.deal_item_rows(db_url, "ds", kind="triage")
    rows = rows[rows["deal_id"] == result.deal_id].set_index("item_id")["inclusion_probability"]
    assert rows.to_dict() == {ids[0]: 1.0, **{i: probs[i] for i in drawn}}
    params = store.list_deals(db_url, "ds").iloc[-1]["params"]
    assert params["selection"] == store.SELECTION_BY_CHANCE
    assert params["drawn_for_sure"] == [i for i in drawn if probs[i] == 1.0]
    assert params["expected"] == pytest.approx(sum(probs.values()))
    per_item = Counter(i for i, _, d in assignment_rows(db_url) if d == result.deal_id)
    assert set(per_item) == set(result.item_ids) and set(per_item.values()) == {1}
    # Served in a seeded random order, not the doubt's or the import's.
    first = store.next_item(db_url, "ann1", "ds")
    assert first is not None and first.id in result.item_ids


def test_deal_by_chance_refuses_items_without_a_probability_and_changes_nothing(
    db_url: str,
) -> None:
    ids = make_store(db_url, n_items=6)
    before = counts(db_url)
    probs = _probabilities(ids, set())
    without = {i: p for i, p in probs.items() if i != ids[2]}
    with pytest.raises(ConfigError, match=r"1 unlabelled item\(s\) of 'ds' have no inclusion"):
        store.deal(db_url, "ds", ["ann1"], store.TriageByChance(without), store.DealOptions(seed=1))
    with pytest.raises(InputError, match=r"inclusion probability in \(0, 1\]"):
        store.deal(
            db_url,
            "ds",
            ["ann1"],
            store.TriageByChance({**probs, ids[0]: 0.0}),
            store.DealOptions(seed=1),
        )
    with pytest.raises(ConfigError, match="not in dataset 'ds'"):
        store.deal(
            db_url,
            "ds",
            ["ann1"],
            store.TriageByChance({**probs, 10**6: 0.5}),
            store.DealOptions(seed=1),
        )
    assert counts(db_url) == before


def test_route_by_chance_gives_labels_a_sample_probability(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = make_store(db_url, n_items=40)
    save_judge(db_url, band=False)
    probs = {i: 0.5 + 0.5 * math.sin(k) ** 3 for k, i in enumerate(ids)}
    fake_judgments(monkeypatch, probs, set())
    import_label(db_url, ids[0], 2)
    result = workflows.route_uncertain(
        db_url, "ds", "cal", ["ann1"], n_most_uncertain=10, floor=0.05, seed=3
    )
    assert "drawn by chance" in result.selection
    pi = result.items.set_index("item_id")["inclusion_probability"]
    assert (pi >= 0.05).all() and (pi <= 1).all() and len(pi) == result.deal.items
    dealt = result.dealt
    assert len(dealt) >= 4
    done = dealt[: len(dealt) // 2]  # half the draw labelled so far
    for item_id in done:
        store.save_label(db_url, "ann1", item_id, 2)
    late = next(i for i in ids if i not in pi.index and i != ids[0])
    store.deal(db_url, "ds", ["ann2"], store.TriageItems([late]))  # labelled for another reason
    store.save_label(db_url, "ann2", late, 0)
    final = workflows.final_labels(db_url, "ds").set_index("item_id")
    share = len(done) / len(pi)
    assert final.loc[ids[0], "sample_probability"] == 1.0
    for item_id in done:
        assert final.loc[item_id, "sample_probability"] == pytest.approx(pi[item_id] * share)
    assert np.isnan(final.loc[late, "sample_probability"])
    assert final["sample_probability"].notna().sum() == len(done) + 1
    frame = workflows.estimation_frame(db_url, "ds", "cal").set_index("item_id")
    pd.testing.assert_series_equal(
        frame["sample_probability"], final["sample_probability"], check_names=False
    )
    table = estimate_accuracy(frame.reset_index(), min_labels=2).set_index("model")
    assert table.loc["(all)", "n_not_random"] == 1  # the late label: no known probability


def test_route_by_chance_refuses_a_bad_floor(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_store(db_url, n_items=20)
    save_judge(db_url, band=False)
    fake_judgments(monkeypatch, {i: 0.5 for i in ids}, set())
    before = counts(db_url)
    with pytest.raises(InputError, match=r"floor must be a probability in \(0, 1\]"):
        workflows.route_uncertain(db_url, "ds", "cal", ["ann1"], n_most_uncertain=5, floor=0)
    with pytest.raises(InputError, match="floor=0.5 on 20 item"):
        workflows.route_uncertain(db_url, "ds", "cal", ["ann1"], n_most_uncertain=5, floor=0.5)
    assert counts(db_url) == before


def test_sample_probabilities_without_a_draw_by_chance_mark_the_audit_as_uniform() -> None:
    deals = pd.DataFrame(
        {"deal_id": [1, 2], "kind": ["audit", "triage"], "params": [{}, {"selection": "band"}]}
    )
    items = pd.DataFrame(
        {
            "deal_id": [1, 1, 2],
            "kind": ["audit", "audit", "triage"],
            "item_id": [10, 11, 12],
            "inclusion_probability": [0.1, 0.1, None],
        }
    )
    assert sample_probabilities(deals, items, {10, 12}) == {10: 1.0}


def test_concurrent_deals_by_chance_over_assign_nothing(db_url: str) -> None:
    ids = make_store(db_url, n_items=200)
    probs = {i: 0.5 for i in ids}
    a, b = at_once(
        lambda: store.deal(
            db_url, "ds", ["ann1"], store.TriageByChance(probs), store.DealOptions(seed=1)
        ),
        lambda: store.deal(
            db_url, "ds", ["ann2", "ann3"], store.TriageByChance(probs), store.DealOptions(seed=2)
        ),
    )
    per_item = Counter(i for i, _, _ in assignment_rows(db_url))
    assert max(per_item.values()) == 1
    assert set(a.item_ids) | set(b.item_ids) == set(per_item)
    # The later deal saw the earlier one's items as queued, drawn but not dealt again.
    assert not set(a.item_ids) & set(b.item_ids)
    assert len(a.skipped_queued) + len(b.skipped_queued) == len(
        {i for i in ids if uniform_of(1, i) < 0.5} & {i for i in ids if uniform_of(2, i) < 0.5}
    )


def test_audit_and_deterministic_triage_record_their_probability_or_none(db_url: str) -> None:
    ids = make_store(db_url, n_items=20)
    audit = store.deal(db_url, "ds", ["ann1"], store.AuditSample(n=5), store.DealOptions(seed=2))
    rest = [i for i in ids if i not in audit.item_ids][:3]
    triage = store.deal(db_url, "ds", ["ann2"], store.TriageItems(rest))
    rows = store.deal_item_rows(db_url, "ds")
    audit_p = rows.loc[rows["deal_id"] == audit.deal_id, "inclusion_probability"]
    assert audit_p.tolist() == pytest.approx([5 / 20] * 5)
    assert rows.loc[rows["deal_id"] == triage.deal_id, "inclusion_probability"].isna().all()


def test_report_counts_labels_drawn_by_chance_weighted(sqlite_url: str, tmp_path) -> None:
    import json

    from qaeval_core.cli.main import main

    make_store(sqlite_url, n_items=60)
    save_judge(sqlite_url, band=False)
    result = workflows.route_uncertain(
        sqlite_url, "ds", "cal", ["ann1"], n_most_uncertain=30, floor=0.1, seed=4
    )
    while (item := store.next_item(sqlite_url, "ann1", "ds")) is not None:
        store.save_label(sqlite_url, "ann1", item.id, 2 if item.id % 3 else 0)
    html, numbers = tmp_path / "r.html", tmp_path / "r.json"
    args = ["report", "-d", "ds", "-o", str(html), "--json", str(numbers), "--n-boot", "50"]
    assert main([*args, "--calibration", "cal", "--db", sqlite_url]) == 0
    overall = json.loads(numbers.read_text())["model_accuracies"]["estimates"]["(all)"]
    assert overall["n_labelled"] == overall["n_weighted"] == len(result.dealt)
    assert overall["ppi"]["ci_low"] < overall["ppi"]["ci_high"]
    page = html.read_text()
    assert "Model accuracies (judge + weighted human labels)" in page
    assert "n_weighted" in page
