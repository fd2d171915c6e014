"""The LLM tier when the LLM gives no verdict on an item it must read (its endpoint failed):
the tier-1 verdict stands, the item goes to people and is reported as ``judge_error``; the
items the LLM did answer are combined as usual (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest
from _fake_llm import fake_llm
from _triage_store import make_judge

from qaeval_core.judge import FeatureSpec
from qaeval_core.judge.cascade import LLMTier
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

ITEMS = [
    Item(
        question=f"Who wrote play number {i}?",
        references=("William Shakespeare",),
        candidate="Shakespeare" if i % 2 == 0 else f"Marlowe {i}",
    )
    for i in range(6)
]


def _tier(url: str = "http://127.0.0.1:9/v1") -> LLMTier:
    llm = get_metric("llm_judge", model="m", url=url, timeout=2, max_retries=0, concurrency=1)
    return LLMTier(
        feature=FeatureSpec.from_metric(llm),
        llm_share=1.0,
        human_share=0.0,
        llm_threshold=0.0,  # every item goes to the LLM
        people_threshold=1.0,
        coef_cheap=1.0,
        coef_llm=1.0,
        intercept=0.0,
        cv_accuracy=0.9,
        llm_seconds_per_item=0.1,
    )


def test_decide_sends_an_item_without_the_llm_s_verdict_to_people():
    tier = _tier()
    result = tier.decide([0.9, 0.2, 0.7], [0.8, np.nan, 0.1], [None, "endpoint down", None])
    assert result.tier.tolist() == ["llm", "people", "llm"]
    assert result.routed.tolist() == [False, True, False]
    assert result.probability[1] == pytest.approx(0.2)  # tier 1's, untouched
    assert result.llm_missing == (None, "endpoint down", None)


def test_a_judge_whose_llm_dies_mid_run_leaves_the_rest_to_people(tmp_path, monkeypatch):
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    judge = make_judge(band=False)
    with fake_llm(die_after=2) as server:
        judge.cascade = _tier(server.url)
        out = judge.judge(ITEMS)
        assert server.requests == 2 + 3  # two answers, three failures, the last item not sent
    assert out["judge_tier"].tolist() == ["llm"] * 2 + ["people"] * 4
    assert out["judge_reason"].iloc[2:].eq("judge_error").all()
    assert not out["judge_correct"].iloc[2:].any()
    assert out["judge_llm_probability"].iloc[:2].notna().all()
    assert out["judge_llm_probability"].iloc[2:].isna().all()
    assert out["judge_reason"].iloc[:2].isin(["matched", "not_matched"]).all()


def test_fitting_an_llm_tier_stops_on_rows_the_endpoint_failed_and_resumes_from_the_cache(
    tmp_path, monkeypatch
):
    """Calibration needs the LLM's verdict on every row: a tier fitted on whichever rows
    happened to work would be wrong without saying so. The run stops naming how many failed;
    the next run asks only for those."""
    from types import SimpleNamespace

    from qaeval_core.calibrate.cascade import add_llm_tier
    from qaeval_core.calibrate.options import LLMTierPolicy
    from qaeval_core.errors import IncompleteRunError

    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    items = [
        Item(
            question=f"Who wrote play number {i}?",
            references=("William Shakespeare",),
            candidate="Shakespeare" if i % 2 == 0 else f"Marlowe {i}",
        )
        for i in range(40)
    ]
    y = np.array([i % 2 == 0 for i in range(40)])
    oof = np.linspace(0.3, 0.7, 40)  # the cheap judge's out-of-fold P(correct)
    report = SimpleNamespace(oof_proba={"w": oof}, winner="w", n_splits=2, seed=0)
    with fake_llm(die_after=25) as server:
        policy = LLMTierPolicy(llm="m", llm_url=server.url, llm_share=0.5, human_share=0.0)
        with pytest.raises(IncompleteRunError, match=r"15 of 40 calibration rows have no verdict"):
            add_llm_tier(make_judge(band=False), report, items, y, llm_tier=policy)
        asked = server.requests
        server.die_after = None
        judge = add_llm_tier(make_judge(band=False), report, items, y, llm_tier=policy)
        assert server.requests == asked + 15
    assert judge.cascade is not None and judge.cascade.coef_llm > 0


def test_calibrating_with_an_llm_input_stops_on_items_without_a_verdict(tmp_path, monkeypatch):
    from _calibration_data import fake_cost_measuring, write_labelled_dataset

    from qaeval_core import workflows
    from qaeval_core.calibrate.options import CostPolicy, CrossValidation
    from qaeval_core.cli.main import main
    from qaeval_core.errors import IncompleteRunError

    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    db = str(tmp_path / "store.sqlite")
    data = write_labelled_dataset(tmp_path / "d.jsonl")
    assert main(["import", str(data), "-d", "toy", "--db", db]) == 0
    with fake_llm(mode="dead") as server:
        llm = get_metric(
            "llm_judge", model="m", url=server.url, timeout=2, max_retries=0, concurrency=1
        )
        with pytest.raises(IncompleteRunError, match=r"calibration items have no verdict"):
            workflows.calibrate_dataset(
                db,
                "toy",
                metrics=["f1", llm],
                cv=CrossValidation(n_boot=50),
                cost_policy=CostPolicy(inputs="all"),
            )
        assert server.requests == 3


def test_a_judge_reading_the_llm_as_an_input_reports_no_verdict_as_judge_error(
    tmp_path, monkeypatch
):
    """An input without a verdict is NaN in the judge's ``judge_<column>`` (not a 0.0 that
    reads as a score); the combiner gets the failed-row stand-in and the row is judge_error."""
    import pandas as pd

    from qaeval_core.judge import Judge, StackerClassifier

    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"f1": rng.random(60), "llm": rng.random(60)})
    clf = StackerClassifier().fit(train, (train["f1"] + train["llm"] > 1).astype(int))
    with fake_llm(die_after=2) as server:
        llm = get_metric(
            "llm_judge", model="m", url=server.url, timeout=2, max_retries=0, concurrency=1
        )
        judge = Judge(
            [FeatureSpec.from_metric(get_metric("f1")), FeatureSpec.from_metric(llm, "llm")],
            clf,
            name="llm-input",
        )
        out = judge.judge(ITEMS)
    assert out["judge_llm"].iloc[:2].notna().all() and out["judge_llm"].iloc[2:].isna().all()
    assert out["judge_reason"].iloc[2:].eq("judge_error").all()
    assert out["judge_outcome"].iloc[2:].eq("uncertain").all()
    assert not out["judge_correct"].iloc[2:].any()
    assert out["judge_reason"].iloc[:2].isin(["matched", "not_matched"]).all()
