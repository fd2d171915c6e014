"""Closing the loop between the judge and people: recorded deals, the random audit sample,
routing the judge's uncertain items, final labels with their source, the estimation frame and
the ``final`` export.

Store tests run on SQLite and (with ``QAEVAL_TEST_POSTGRES_URL``) PostgreSQL. Routing tests
replace :func:`judge_dataset` with a fake whose outcomes the test chooses, except one that
runs the real judge (token F1, cheap) end to end.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _triage_store import (
    ANNOTATORS,
    assignment_rows,
    at_once,
    counts,
    fake_judgments,
    import_label,
    make_store,
    save_judge,
)
from sqlalchemy import func, select

from qaeval_core import io, store, workflows
from qaeval_core.cli.main import main
from qaeval_core.errors import ConfigError, InputError, NotFoundError, QAEvalError
from qaeval_core.store.orm import Assignment, Label
from qaeval_core.store.queues.sampled import audit_sample_ids
from qaeval_core.store.session import session_scope

# ------------------------------------------------------------------ fixtures and helpers


# ------------------------------------------------------------------ recorded deals


def test_every_deal_is_recorded_and_reassignment_keeps_the_deal(db_url: str) -> None:
    ids = make_store(db_url, n_items=6)
    result = store.deal(
        db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(seed=3, created_by="boss")
    )
    assert result.kind == "queue" and result.deal_id is not None
    deals = store.list_deals(db_url, "ds")
    assert deals[["kind", "seed", "n_items", "added", "created_by"]].values.tolist() == [
        ["queue", 3, 6, 6, "boss"]
    ]
    assert deals["params"][0]["annotators"] == ["ann1", "ann2"]
    assert {d for _, _, d in assignment_rows(db_url)} == {result.deal_id}
    assert store.deal_item_rows(db_url, "ds").empty  # a queue deal covers the whole dataset
    store.reassign(db_url, "ds", "ann1", ["ann3"])
    moved = [(i, d) for i, n, d in assignment_rows(db_url) if n == "ann3"]
    assert len(moved) == 3 and {d for _, d in moved} == {result.deal_id}
    # Re-dealing is still recorded (it adds nothing); an unknown author changes nothing.
    store.deal(db_url, "ds", ["ann1", "ann2"])
    assert store.list_deals(db_url, "ds")["added"].tolist() == [6, 0]
    before = counts(db_url)
    with pytest.raises(NotFoundError, match="No user named 'ghost'"):
        store.deal(db_url, "ds", ["ann1"], options=store.DealOptions(created_by="ghost"))
    assert counts(db_url) == before
    assert sorted(i for i, _, _ in assignment_rows(db_url)) == sorted(ids)


# ------------------------------------------------------------------ the random audit sample


def test_audit_sample_is_seeded_and_recorded_as_audit(db_url: str) -> None:
    ids = make_store(db_url, n_items=40)
    first = store.deal(
        db_url,
        "ds",
        ["ann1", "ann2"],
        store.AuditSample(n=10),
        store.DealOptions(seed=5, created_by="boss"),
    )
    assert first.kind == "audit" and first.items == 10 and first.added == 10
    assert list(first.item_ids) == audit_sample_ids(ids, 10, 5)
    assert set(first.item_ids) <= set(ids)
    # Same seed: same items, nothing added; another seed: another sample.
    again = store.deal(
        db_url, "ds", ["ann1", "ann2"], store.AuditSample(n=10), store.DealOptions(seed=5)
    )
    assert again.item_ids == first.item_ids and again.added == 0
    other = store.deal(
        db_url, "ds", ["ann1", "ann2"], store.AuditSample(fraction=0.25), store.DealOptions(seed=6)
    )
    assert len(other.item_ids) == 10 and set(other.item_ids) != set(first.item_ids)
    deals = store.list_deals(db_url, "ds")
    assert deals["kind"].tolist() == ["audit"] * 3
    assert deals["seed"].tolist() == [5, 5, 6]
    assert deals["params"][0]["n"] == 10 and deals["params"][2]["fraction"] == 0.25
    assert deals["created_by"].tolist()[0] == "boss"
    drawn = store.deal_item_rows(db_url, "ds", kind="audit")
    assert sorted(drawn.loc[drawn.deal_id == first.deal_id, "item_id"]) == sorted(first.item_ids)
    # Dealt with base=1 and served in the sample's random order (a labelled prefix is random).
    per_item = Counter(i for i, _, _ in assignment_rows(db_url))
    assert set(per_item.values()) == {1}
    served = store.next_item(db_url, "ann1", "ds")
    assert served is not None and served.id == first.item_ids[0]


def test_audit_sample_is_uniform() -> None:
    """Over many seeds every item is drawn about equally often (inclusion probability n/N)."""
    ids = list(range(100, 120))
    hits = Counter(i for seed in range(4000) for i in audit_sample_ids(ids, 5, seed))
    freq = np.array([hits[i] / 4000 for i in ids])
    assert np.allclose(freq, 0.25, atol=0.03), freq
    assert sorted(audit_sample_ids(ids, 5, 1)) == sorted(audit_sample_ids(ids[::-1], 5, 1))


def test_audit_sample_keeps_items_already_queued_and_counts_them(db_url: str) -> None:
    ids = make_store(db_url, n_items=10)
    store.deal(db_url, "ds", ["ann1"])  # every item queued already
    audit = store.deal(
        db_url, "ds", ["ann2", "ann3"], store.AuditSample(fraction=0.5), store.DealOptions(seed=1)
    )
    assert audit.items == 5 and audit.added == 0  # existing assignments count (base=1)
    drawn = store.deal_item_rows(db_url, "ds", kind="audit")
    assert sorted(drawn["item_id"]) == sorted(audit.item_ids)
    # ... and they are the random sample once labelled, whoever labelled them.
    for item_id in ids:
        store.save_label(db_url, "ann1", item_id, 2)
    final = workflows.final_labels(db_url, "ds")
    random_items = set(final.loc[final.label_sample == "random", "item_id"])
    assert random_items == set(audit.item_ids)
    assert set(final.loc[final.label_sample == "queue", "item_id"]) == set(ids) - random_items


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n": 0}, InputError, "n must be a whole number of items >= 1, got 0"),
        ({"n": -3}, InputError, "n must be a whole number"),
        ({"n": 2.5}, InputError, "n must be a whole number"),
        ({"n": 11}, InputError, "n=11 but dataset 'ds' has 10 item"),
        ({"fraction": 0.0}, InputError, r"fraction must be in \(0, 1\]"),
        ({"fraction": 1.5}, InputError, r"fraction must be in \(0, 1\]"),
        ({"fraction": -0.1}, InputError, r"fraction must be in \(0, 1\]"),
        ({}, InputError, "not neither"),
        ({"n": 2, "fraction": 0.5}, InputError, "not both"),
        ({"n": 2, "dataset": "nope"}, NotFoundError, "No dataset named 'nope'"),
        ({"n": 2, "users": ["ghost"]}, NotFoundError, "No user named 'ghost'"),
        ({"n": 2, "users": ["ext"]}, ConfigError, "role 'external'"),
        ({"n": 2, "base": 3}, ConfigError, "base must be between 1"),
        ({"n": 2, "created_by": "ghost"}, NotFoundError, "No user named 'ghost'"),
    ],
)
def test_audit_sample_refuses_bad_input_and_changes_nothing(
    db_url: str, kwargs: dict[str, Any], error: type[QAEvalError], match: str
) -> None:
    make_store(db_url, n_items=10)
    before = counts(db_url)
    kwargs = dict(kwargs)
    dataset = kwargs.pop("dataset", "ds")
    users = kwargs.pop("users", ["ann1", "ann2"])
    with pytest.raises(error, match=match) as info:
        sample = store.AuditSample(n=kwargs.pop("n", None), fraction=kwargs.pop("fraction", None))
        store.deal(db_url, dataset, users, sample, store.DealOptions(seed=0, **kwargs))
    assert "\n" not in str(info.value)
    assert counts(db_url) == before


# ------------------------------------------------------------------ routing uncertain items


def test_route_uncertain_deals_exactly_the_uncertain_items(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = make_store(db_url, n_items=12)
    save_judge(db_url)
    uncertain = {ids[1], ids[3], ids[4], ids[7], ids[9]}
    probs = {ids[1]: 0.45, ids[3]: 0.55, ids[4]: 0.5, ids[7]: 0.6, ids[9]: 0.4}
    fake_judgments(monkeypatch, probs, uncertain)
    import_label(db_url, ids[3], 2)  # already labelled (an imported rater)
    store.deal(db_url, "ds", ["ann3"], store.TriageItems([ids[9]]))  # already in a queue
    result = workflows.route_uncertain(
        db_url, "ds", "cal", ["ann1", "ann2"], seed=1, created_by="boss"
    )
    assert set(result.items["item_id"]) == uncertain
    # most doubtful first: 0.5 (doubt 0.5), 0.45/0.55 (0.45), 0.4/0.6 (0.4)
    assert result.items["item_id"].tolist()[:1] == [ids[4]]
    assert sorted(result.dealt) == sorted([ids[1], ids[4], ids[7]])
    assert result.skipped == {"labelled": [ids[3]], "queued": [ids[9]]}
    dealt_to = Counter(i for i, n, d in assignment_rows(db_url) if d == result.deal.deal_id)
    assert dealt_to == Counter({ids[1]: 1, ids[4]: 1, ids[7]: 1})
    deals = store.list_deals(db_url, "ds")
    last = deals.iloc[-1]
    assert last["kind"] == "triage" and last["created_by"] == "boss" and last["seed"] == 1
    assert last["params"]["calibration"] == "cal" and last["params"]["selection"] == "band"
    drawn = store.deal_item_rows(db_url, "ds", kind="triage")
    assert sorted(drawn.loc[drawn.deal_id == result.deal.deal_id, "item_id"]) == sorted(
        result.dealt
    )
    assert "3 dealt" in result.summary() and "1 already labelled" in result.summary()
    # Running it again routes nothing twice, and records no empty deal.
    again = workflows.route_uncertain(db_url, "ds", "cal", ["ann1", "ann2"])
    assert again.dealt == [] and again.deal.deal_id is None
    assert len(store.list_deals(db_url, "ds")) == len(deals)


def test_route_n_most_uncertain_and_overlap(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_store(db_url, n_items=10)
    save_judge(db_url, band=False)  # no band needed for n_most_uncertain
    probs = {ids[2]: 0.5, ids[5]: 0.35, ids[8]: 0.7, ids[0]: 0.2}
    fake_judgments(monkeypatch, probs, set())
    result = workflows.route_uncertain(
        db_url, "ds", "cal", list(ANNOTATORS), n_most_uncertain=3, base=2
    )
    assert result.items["item_id"].tolist() == [ids[2], ids[5], ids[8]]
    assert result.dealt == [ids[2], ids[5], ids[8]]
    per_item = Counter(i for i, _, _ in assignment_rows(db_url))
    assert per_item == Counter({ids[2]: 2, ids[5]: 2, ids[8]: 2})
    assert store.list_deals(db_url, "ds")["params"][0]["n_most_uncertain"] == 3


def test_route_uncertain_with_the_real_judge(db_url: str) -> None:
    """End to end: the calibration's own uncertain items are exactly the dealt ones."""
    make_store(db_url, n_items=16)
    judge = save_judge(db_url)
    judged, _ = workflows.judge_dataset(db_url, "ds", judge)
    uncertain = set(judged.loc[judged.judge_outcome == "uncertain", "item_id"])
    assert 0 < len(uncertain) < len(judged)
    result = workflows.route_uncertain(db_url, "ds", "cal", ["ann1", "ann2"])
    assert set(result.dealt) == uncertain
    assert {i for i, _, _ in assignment_rows(db_url)} == uncertain
    # human_share picks another band off the stored effort curve
    wider = workflows.route_uncertain(db_url, "ds", "cal", ["ann1", "ann2"], human_share=0.5)
    judged_wide, _ = workflows.judge_dataset(db_url, "ds", judge.with_share(0.5))
    wide = set(judged_wide.loc[judged_wide.judge_outcome == "uncertain", "item_id"])
    assert uncertain < wide
    assert set(wider.dealt) == wide - uncertain
    assert set(wider.skipped["queued"]) == uncertain


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("nope", "cal", ["ann1"]), {}, NotFoundError, "No dataset named 'nope'"),
        (("ds", "nocal", ["ann1"]), {}, NotFoundError, "No calibration named 'nocal'"),
        (("ds", "cal", ["ghost"]), {}, NotFoundError, "No user named 'ghost'"),
        (("ds", "cal", ["ext"]), {}, ConfigError, "role 'external'"),
        (("ds", "cal", ["ann1"]), {"base": 2}, ConfigError, "base must be between 1"),
        (("ds", "cal", ["ann1"]), {"created_by": "ghost"}, NotFoundError, "No user named"),
        (
            ("ds", "plain", ["ann1"]),
            {},
            ConfigError,
            r"no triage band.*human_share=S.*n_most_uncertain",
        ),
        (("ds", "plain", ["ann1"]), {"human_share": 0.2}, ConfigError, "no triage band"),
        (
            ("ds", "cal", ["ann1"]),
            {"n_most_uncertain": 0},
            InputError,
            "n_most_uncertain must be a whole number >= 1, got 0",
        ),
        (("ds", "cal", ["ann1"]), {"n_most_uncertain": -2}, InputError, "n_most_uncertain"),
        (
            ("ds", "cal", ["ann1"]),
            {"n_most_uncertain": 2, "human_share": 0.2},
            InputError,
            "not both",
        ),
        (("ds", "cal", ["ann1"]), {"human_share": 1.5}, InputError, r"in \[0, 1\)"),
    ],
)
def test_route_uncertain_refuses_bad_input_before_any_work(
    db_url: str, args: tuple, kwargs: dict[str, Any], error: type[QAEvalError], match: str
) -> None:
    make_store(db_url, n_items=8)
    save_judge(db_url)
    save_judge(db_url, "plain", band=False)
    before = counts(db_url)
    with pytest.raises(error, match=match) as info:
        workflows.route_uncertain(db_url, *args, **kwargs)
    assert "\n" not in str(info.value)
    assert counts(db_url) == before  # no deal, no assignment, not even a stored score


def test_a_band_routing_nothing_asks_for_a_share(db_url: str) -> None:
    make_store(db_url, n_items=4)
    save_judge(db_url, "zero", share=0.0)
    with pytest.raises(ConfigError, match="pass human_share=S"):
        workflows.route_uncertain(db_url, "ds", "zero", ["ann1"])


def test_route_uncertain_needs_a_url_not_a_session(sqlite_url: str) -> None:
    make_store(sqlite_url, n_items=2)
    with store.store_scope(sqlite_url) as s, pytest.raises(InputError, match="store URL"):
        workflows.route_uncertain(s, "ds", "cal", ["ann1"])


# ------------------------------------------------------------------ concurrency


def test_concurrent_audit_and_triage_deals_over_assign_nothing(db_url: str) -> None:
    ids = make_store(db_url, n_items=300)
    sample = store.AuditSample(fraction=0.3)
    for rnd in range(2):
        # Two audits with overlapping samples (30% each) at once: base=1 means one holder each.
        a, b = at_once(
            lambda r=rnd: store.deal(
                db_url, "ds", ["ann1", "ann2"], sample, store.DealOptions(seed=10 + r)
            ),
            lambda r=rnd: store.deal(
                db_url, "ds", ["ann2", "ann3"], sample, store.DealOptions(seed=20 + r)
            ),
        )
        per_item = Counter(i for i, _, _ in assignment_rows(db_url))
        assert max(per_item.values()) == 1
        assert set(a.item_ids) | set(b.item_ids) <= set(per_item)
    # Two triage deals of the same unqueued items at once: each item dealt exactly once.
    free = [i for i in ids if i not in {i for i, _, _ in assignment_rows(db_url)}]
    assert free
    x, y = at_once(
        lambda: store.deal(db_url, "ds", ["ann1", "ann2"], store.TriageItems(free)),
        lambda: store.deal(db_url, "ds", ["ann3"], store.TriageItems(free)),
    )
    per_item = Counter(i for i, _, _ in assignment_rows(db_url))
    assert max(per_item.values()) == 1 and set(free) <= set(per_item)
    assert sorted(x.item_ids + y.item_ids) == sorted(free)
    assert set(x.skipped_queued + y.skipped_queued) == set(free)
    # Every assignment names a recorded deal.
    with session_scope(db_url) as s:
        assert s.scalar(select(func.count()).where(Assignment.deal_id.is_(None))) == 0


# ------------------------------------------------------------------ final labels


def test_final_labels_follow_the_precedence(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_store(db_url, n_items=8)
    save_judge(db_url)
    fake_judgments(monkeypatch, {ids[4]: 0.8, ids[5]: 0.3, ids[6]: 0.45}, {ids[6]})
    store.deal(db_url, "ds", ["ann1", "ann2"], options=store.DealOptions(base=2))
    # 0: annotators disagree, adjudicated 0; 1: majority 2; 2: a tie (1); 3: one label of 1
    store.save_label(db_url, "ann1", ids[0], 2)
    store.save_label(db_url, "ann2", ids[0], 2)
    store.add_adjudication(db_url, ids[0], "boss", 0, "wrong year", roles=("researcher",))
    store.save_label(db_url, "ann1", ids[1], 2)
    store.save_label(db_url, "ann2", ids[1], 2)
    import_label(db_url, ids[1], 0)
    store.save_label(db_url, "ann1", ids[2], 2)
    store.save_label(db_url, "ann2", ids[2], 0)
    store.save_label(db_url, "ann1", ids[3], 1)
    # 7: adjudicated with no rater label
    store.add_adjudication(db_url, ids[7], "boss", 2, "checked", roles=("researcher",))

    final = workflows.final_labels(db_url, "ds", "cal").set_index("item_id")
    assert list(final.reset_index().columns) == workflows.triage.FINAL_COLUMNS
    expect = {
        ids[0]: (0, "adjudication"),
        ids[1]: (2, "annotators"),
        ids[2]: (1, "annotators"),
        ids[3]: (1, "annotators"),
        ids[4]: (2, "judge"),
        ids[5]: (0, "judge"),
        ids[6]: (0, "judge"),
        ids[7]: (2, "adjudication"),
    }
    got = {i: (int(r.final_label), r.source) for i, r in final.iterrows()}
    assert got == expect
    assert final.loc[ids[1], "final_correct"] and not final.loc[ids[3], "final_correct"]
    assert final.loc[ids[6], "judge_outcome"] == "uncertain"
    assert final.loc[ids[4], "judge_probability"] == pytest.approx(0.8)
    assert final.loc[ids[7], "label_sample"] == "adjudication"
    assert final.loc[ids[0], "label_sample"] == "queue" and final.loc[ids[4], "label_sample"] == ""
    assert final.loc[ids[0], "external_id"] == "ds-0" and final.loc[ids[1], "qa_model"] == "m1"

    # Without a calibration: unlabelled items have no label, source "none", no judge columns.
    plain = workflows.final_labels(db_url, "ds").set_index("item_id")
    assert plain.loc[ids[4], "source"] == "none" and pd.isna(plain.loc[ids[4], "final_label"])
    assert pd.isna(plain.loc[ids[4], "final_correct"])
    assert plain["judge_probability"].isna().all()
    assert plain.loc[ids[0], "source"] == "adjudication"


def test_label_sample_is_random_only_for_audit_items(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = make_store(db_url, n_items=12)
    save_judge(db_url)
    fake_judgments(monkeypatch, {}, {ids[0], ids[1]})
    triaged = workflows.route_uncertain(db_url, "ds", "cal", ["ann1"])
    assert sorted(triaged.dealt) == [ids[0], ids[1]]
    audit = store.deal(db_url, "ds", ["ann2"], store.AuditSample(n=3), store.DealOptions(seed=4))
    queued = store.deal(db_url, "ds", ["ann3"])
    assert queued.added == 12 - len({ids[0], ids[1]} | set(audit.item_ids))
    for user in ANNOTATORS:
        while (item := store.next_item(db_url, user, "ds")) is not None:
            store.save_label(db_url, user, item.id, 2)
    spare = next(i for i in ids if i not in audit.item_ids and i not in (ids[0], ids[1]))
    final = workflows.final_labels(db_url, "ds", "cal").set_index("item_id")
    samples = final["label_sample"].to_dict()
    for i in ids:
        if i in audit.item_ids:
            assert samples[i] == "random", i
        elif i in (ids[0], ids[1]):
            assert samples[i] == "triage", i
        else:
            assert samples[i] == "queue", i
    assert samples[spare] == "queue"
    # An imported label on an item of no deal says where it came from.
    make_store(db_url, n_items=2, dataset="other")
    other = store.list_items(db_url, "other")["item_id"].tolist()
    import_label(db_url, other[0], 2)
    samples = workflows.final_labels(db_url, "other")["label_sample"].tolist()
    assert samples == ["import", ""]


def test_estimation_frame_feeds_the_estimator(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_store(db_url, n_items=40)
    save_judge(db_url)
    fake_judgments(monkeypatch, {i: (0.8 if k % 3 else 0.3) for k, i in enumerate(ids)}, set())
    audit = store.deal(db_url, "ds", ["ann1"], store.AuditSample(n=24), store.DealOptions(seed=2))
    while (item := store.next_item(db_url, "ann1", "ds")) is not None:
        store.save_label(db_url, "ann1", item.id, 2 if item.id % 2 else 0)
    import_label(db_url, next(i for i in ids if i not in audit.item_ids), 1)
    frame = workflows.estimation_frame(db_url, "ds", "cal")
    assert list(frame.columns) == workflows.triage.ESTIMATION_COLUMNS
    assert len(frame) == 40
    labelled = frame[frame.gold_label.notna()]
    assert set(labelled.loc[labelled.label_sample == "random", "item_id"]) == set(audit.item_ids)
    assert (labelled.label_sample != "random").sum() == 1
    assert frame.loc[frame.gold_label.isna(), "label_sample"].eq("").all()
    estimates = pytest.importorskip("qaeval_core.analysis.estimates")
    table = estimates.estimate_accuracy(
        frame,
        prediction="judge_probability",
        label="gold_label",
        model="qa_model",
        sample="label_sample",
        min_labels=5,
    )
    overall = table.set_index("model").loc[estimates.ALL_MODELS]
    assert overall["n_items"] == 40 and overall["n_labelled"] == 24
    assert overall["n_not_random"] == 1 and np.isfinite(overall["ppi_estimate"])
    with pytest.raises(NotFoundError, match="No calibration named 'nocal'"):
        workflows.estimation_frame(db_url, "ds", "nocal")


# ------------------------------------------------------------------ export


@pytest.fixture
def _cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)


def test_export_final_writes_every_format(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], _cli_env: None
) -> None:
    ids = make_store(db_url, n_items=6)
    save_judge(db_url)
    store.deal(db_url, "ds", ["ann1"], store.AuditSample(n=2), store.DealOptions(seed=0))
    while (item := store.next_item(db_url, "ann1", "ds")) is not None:
        store.save_label(db_url, "ann1", item.id, 1)
    expected = workflows.final_labels(db_url, "ds", "cal")
    assert set(expected["source"]) == {"annotators", "judge"}
    for suffix in (".jsonl", ".json", ".csv", ".tsv", ".parquet"):
        target = tmp_path / f"final{suffix}"
        code = main(
            [
                "export",
                "-d",
                "ds",
                "--what",
                "final",
                "--calibration",
                "cal",
                "-o",
                str(target),
                "--db",
                db_url,
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"Wrote 6 final row(s) of 'ds' to {target}" in out
        rows, errors = io.read_records(target)
        assert errors == []
        back = pd.DataFrame([row for _, row in rows])
        assert back["item_id"].astype(int).tolist() == ids
        assert back["source"].tolist() == expected["source"].tolist()
        assert [int(v) for v in back["final_label"]] == expected["final_label"].tolist()
        samples = ["" if v is None else str(v) for v in back["label_sample"]]
        assert samples == expected["label_sample"].tolist()
    # Without --calibration unlabelled items have source "none".
    code = main(
        [
            "export",
            "-d",
            "ds",
            "--what",
            "final",
            "-o",
            str(tmp_path / "plain.jsonl"),
            "--db",
            db_url,
        ]
    )
    assert code == 0
    assert "none" in (tmp_path / "plain.jsonl").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--what", "final", "--calibration", "nocal"], "No calibration named 'nocal'"),
        (["--what", "labels", "--calibration", "cal"], "--calibration goes with --what final"),
        (
            ["--what", "finals"],
            "--what must be one of items, labels, labels-history, scores, final",
        ),
    ],
)
def test_export_final_errors_are_one_line(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    _cli_env: None,
    args: list[str],
    message: str,
) -> None:
    make_store(sqlite_url, n_items=2)
    save_judge(sqlite_url)
    target = tmp_path / "out.csv"
    code = main(["export", "-d", "ds", "-o", str(target), "--db", sqlite_url, *args])
    _, err = capsys.readouterr()
    assert code == 1 and message in err and not target.exists()
    assert len(err.strip().splitlines()) == 1


def test_export_records_offers_final_beside_the_store_exports(sqlite_url: str) -> None:
    make_store(sqlite_url, n_items=3)
    assert (*store.STORE_EXPORTS, "final") == workflows.EXPORTS
    assert len(workflows.export_records(sqlite_url, "ds", "final")) == 3
    assert len(workflows.export_records(sqlite_url, "ds", "items")) == 3
    with pytest.raises(ConfigError, match="only applies to the 'final' export"):
        workflows.export_records(sqlite_url, "ds", "labels", calibration="cal")
    with pytest.raises(ConfigError, match="Unknown export 'nope'"):
        workflows.export_records(sqlite_url, "ds", "nope")
    with pytest.raises(NotFoundError, match="No dataset named 'nope'"):
        workflows.final_labels(sqlite_url, "nope")


def test_store_readers_of_deals_name_unknown_datasets(sqlite_url: str) -> None:
    make_store(sqlite_url, n_items=1)
    for reader in (store.list_deals, store.deal_item_rows, store.label_origins):
        with pytest.raises(NotFoundError, match="No dataset named 'nope'"):
            reader(sqlite_url, "nope")
    with session_scope(sqlite_url) as s:
        assert s.scalar(select(func.count()).select_from(Label)) == 0


# ------------------------------------------------------------------ one deal function


def test_one_deal_function_takes_a_selection_and_frozen_options(db_url: str) -> None:
    """The five deal functions became ``deal(db, dataset, annotators, selection, options)``
    (issue 34): the old names are gone, the options are frozen, an order a selection cannot
    serve is refused by name, and a selection that needs a seed refuses none, all before
    anything is written."""
    ids = make_store(db_url, n_items=12)
    for old in ("deal_batch", "deal_audit_sample", "deal_triage", "deal_triage_by_chance"):
        assert not hasattr(store, old)
    options = store.DealOptions(base=1, seed=4)
    with pytest.raises(AttributeError):
        options.base = 2  # type: ignore[misc]
    before = counts(db_url)
    with pytest.raises(InputError, match="order does not apply to a triage deal") as info:
        store.deal(
            db_url, "ds", ["ann1"], store.TriageItems(ids[:2]), store.DealOptions(order="shuffled")
        )
    assert info.value.param == "order"
    with pytest.raises(InputError, match="order does not apply to a deal drawn by chance"):
        store.deal(
            db_url,
            "ds",
            ["ann1"],
            store.TriageByChance({}),
            store.DealOptions(seed=1, order="dataset"),
        )
    with pytest.raises(InputError, match="seed must be an integer, got None"):
        store.deal(db_url, "ds", ["ann1"], store.AuditSample(n=3))
    assert counts(db_url) == before
    # The default selection is every item, the default options today's defaults.
    every = store.deal(db_url, "ds", ["ann1"])
    assert every.kind == "queue" and every.items == 12 and every.added == 12
    audit = store.deal(db_url, "ds", ["ann2"], store.AuditSample(n=3), options)
    assert audit.kind == "audit" and list(audit.item_ids) == audit_sample_ids(ids, 3, 4)
    deals = store.list_deals(db_url, "ds")
    assert deals["seed"].tolist() == [0, 4]
