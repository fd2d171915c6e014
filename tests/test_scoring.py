"""scoring: metric specs, frames -> items, frame scoring, and store scoring with skip-by-hash."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import qaeval_core
from qaeval_core import store
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item
from qaeval_core.scoring import (
    items_from_frame,
    metric_label,
    parse_metric_list,
    parse_metric_spec,
    resolve_metrics,
    score,
    score_items,
)
from qaeval_core.workflows import score_dataset

# -- specs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("em", ("em", {})),
        (" f1 ", ("f1", {})),
        ("smile:w=0.5", ("smile", {"w": 0.5})),
        ("smile:w=0.5,variant=code", ("smile", {"w": 0.5, "variant": "code"})),
        ("meteor:synonyms=false", ("meteor", {"synonyms": False})),
        ("x:flag=True,none=None,n=3", ("x", {"flag": True, "none": None, "n": 3})),
        ("lave:url=http://127.0.0.1:8000/v1", ("lave", {"url": "http://127.0.0.1:8000/v1"})),
        ('m:text="a,b",k=1', ("m", {"text": "a,b", "k": 1})),
        ("m:xs=[1, 2],k=v", ("m", {"xs": [1, 2], "k": "v"})),
        ("m:path=/tmp/model", ("m", {"path": "/tmp/model"})),
    ],
)
def test_parse_metric_spec(spec: str, expected: tuple) -> None:
    assert parse_metric_spec(spec) == expected


@pytest.mark.parametrize("bad", ["", "f1:threshold", "f1:=3"])
def test_parse_metric_spec_errors_say_what_is_expected(bad: str) -> None:
    with pytest.raises(ConfigError, match="expected"):
        parse_metric_spec(bad)


def test_parse_metric_list_continues_parameters_after_commas() -> None:
    assert parse_metric_list("em,f1,smile:w=0.5,variant=code,bleu") == [
        "em",
        "f1",
        "smile:w=0.5,variant=code",
        "bleu",
    ]
    assert parse_metric_list("lave:url=http://h:1/v1,model=x, em") == [
        "lave:url=http://h:1/v1,model=x",
        "em",
    ]
    with pytest.raises(ConfigError, match="No metrics"):
        parse_metric_list(" , ")


def test_labels_show_non_default_parameters_and_must_be_unique() -> None:
    assert metric_label(get_metric("f1")) == "f1"
    assert metric_label(get_metric("f1", threshold=0.4)) == "f1:threshold=0.4"
    assert metric_label(get_metric("meteor", synonyms=False)) == "meteor:synonyms=false"
    pairs = resolve_metrics(["f1", "f1:threshold=0.4", get_metric("em")])
    assert [label for label, _ in pairs] == ["f1", "f1:threshold=0.4", "em"]
    with pytest.raises(ConfigError, match="given twice"):
        resolve_metrics(["f1", get_metric("f1")])
    with pytest.raises(ConfigError, match="Unknown metric 'nope'"):
        resolve_metrics(["nope"])
    with pytest.raises(ConfigError, match="no parameter"):
        resolve_metrics(["f1:thresh=1"])


# -- frames -----------------------------------------------------------------------------------


def test_items_from_frame_reads_aliases_lists_json_and_missing_values() -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "question": ["Capital of France?", "Who?", None],
            "answers": [["Paris"], '["Barack Obama", "Obama"]', "JFK / John F. Kennedy"],
            "prediction": ["It is Paris.", 42, np.nan],
            "options": [None, np.array(["x", "y"]), None],
            "dataset": ["d1", "d1", None],
            "model": ["m1", ["m2", "m3"], None],
        }
    )
    items = items_from_frame(frame)
    assert items[0] == Item(
        "Capital of France?", ("Paris",), "It is Paris.", id="a", dataset="d1", qa_model="m1"
    )
    assert items[1].references == ("Barack Obama", "Obama")
    assert items[1].candidate == "42" and items[1].choices == ("x", "y")
    assert items[1].qa_model == "m2 | m3"
    assert items[2].references == ("JFK", "John F. Kennedy")
    assert items[2].question == "" and items[2].candidate == "" and items[2].dataset is None


def test_items_from_frame_names_missing_columns() -> None:
    with pytest.raises(ConfigError, match="lacks column.*references.*Columns found"):
        items_from_frame(pd.DataFrame({"question": ["q"], "candidate": ["c"]}))


FRAME = pd.DataFrame(
    {
        "question": ["Capital of France?", "Who wrote Hamlet?", "Year WW2 ended?"],
        "references": [["Paris"], ["William Shakespeare", "Shakespeare"], ["1945"]],
        "candidate": ["It is Paris.", "Christopher Marlowe", "1945"],
    }
)


def test_score_adds_score_decision_and_json_details_columns() -> None:
    out = score(FRAME, ["em", "contains", "f1:threshold=0.4"])
    assert list(FRAME.columns) == ["question", "references", "candidate"]  # input untouched
    assert out["em"].tolist() == [0.0, 0.0, 1.0]
    assert out["contains_correct"].tolist() == [True, False, True]
    assert out["f1:threshold=0.4"].tolist() == pytest.approx([0.5, 0.0, 1.0])
    details = json.loads(out.loc[0, "contains_details"])
    assert details == {"best_reference": "Paris"}
    assert out["em_correct"].dtype == bool


def test_public_api_is_lazy_and_works() -> None:
    assert set(qaeval_core.__all__) >= {"score", "score_items", "get_metric", "metric_ids", "Item"}
    out = qaeval_core.score(FRAME, metrics="em,contains")
    assert out["contains"].tolist() == [1.0, 0.0, 1.0]
    assert "f1" in qaeval_core.metric_ids()
    assert qaeval_core.Judge.__name__ == "Judge"


def test_chunked_scoring_equals_one_call_and_shows_progress(capsys) -> None:
    items = items_from_frame(pd.concat([FRAME] * 7, ignore_index=True))
    whole = score_items(items, ["f1", "rougeL"])
    chunked = score_items(items, ["f1", "rougeL"], batch_size=4, progress=True)
    for label in whole:
        np.testing.assert_allclose(whole[label].scores, chunked[label].scores)
        assert whole[label].details == chunked[label].details
    assert "42/42" in capsys.readouterr().err


def test_a_metric_returning_the_wrong_length_is_an_error() -> None:
    class Broken(type(get_metric("em"))):
        def score_batch(self, items):
            return super().score_batch(items[:1])

    with pytest.raises(RuntimeError, match="returned 1 results for a batch of 3"):
        score_items(items_from_frame(FRAME), [Broken()])


# -- store ------------------------------------------------------------------------------------


def _import(url: str) -> None:
    rows = [
        {"id": f"r{i}", "question": q, "references": refs, "candidate": c}
        for i, (q, refs, c) in enumerate(
            zip(FRAME["question"], FRAME["references"], FRAME["candidate"], strict=True)
        )
    ]
    store.import_items(url, "toy", rows)


def test_score_dataset_saves_scores_and_skips_what_is_stored(sqlite_url: str) -> None:
    _import(sqlite_url)
    summary = score_dataset(sqlite_url, "toy", ["em", "contains"])
    assert summary["em"]["scored"] == 3 and summary["em"]["skipped"] == 0
    stored = store.scores(sqlite_url, "toy", metric_id="contains")
    assert sorted(stored["value"].tolist()) == [0.0, 1.0, 1.0]
    assert stored["config_hash"].unique().tolist() == [get_metric("contains").config_hash()]
    row = stored[stored["external_id"] == "r0"].iloc[0]
    assert bool(row["decision"]) is True
    assert row["details"]["best_reference"] == "Paris" and row["details"]["label"] == "contains"

    again = score_dataset(sqlite_url, "toy", ["em", "contains", "f1"])
    assert again["em"] == {**summary["em"], "scored": 0, "skipped": 3}
    assert again["f1"]["scored"] == 3

    # A new configuration is a new hash: stored next to the old one, not over it.
    changed = score_dataset(sqlite_url, "toy", ["f1:threshold=0.9"])
    assert changed["f1:threshold=0.9"]["scored"] == 3
    assert len(store.scores(sqlite_url, "toy", metric_id="f1")) == 6

    redo = score_dataset(sqlite_url, "toy", ["em"], rescore=True)
    assert redo["em"]["scored"] == 3
    assert len(store.scores(sqlite_url, "toy", metric_id="em")) == 3


def test_score_dataset_only_scores_new_items(sqlite_url: str) -> None:
    _import(sqlite_url)
    score_dataset(sqlite_url, "toy", ["f1"])
    store.import_items(
        sqlite_url,
        "toy",
        [{"id": "new", "question": "q", "references": ["x"], "candidate": "x"}],
    )
    summary = score_dataset(sqlite_url, "toy", ["f1"])
    assert summary["f1"]["scored"] == 1 and summary["f1"]["skipped"] == 3


def test_non_finite_scores_are_stored_as_zero_with_the_reason(sqlite_url: str) -> None:
    _import(sqlite_url)
    base = type(get_metric("em"))

    class NaNMetric(base):
        def score_batch(self, items):
            res = super().score_batch(items)
            res.scores[:] = np.nan
            return res

    score_dataset(sqlite_url, "toy", [NaNMetric()])
    stored = store.scores(sqlite_url, "toy", metric_id="em")
    assert stored["value"].tolist() == [0.0, 0.0, 0.0]
    assert "non-finite" in stored["details"].iloc[0]["error"]


# -- one NaN policy on every path -------------------------------------------------------------


class _NaNOnOddRows(type(get_metric("f1"))):
    """F1, except that odd rows score NaN (a metric bug on some items)."""

    def score_batch(self, items):
        res = super().score_batch(items)
        res.scores[1::2] = np.nan
        return res


def _nan_items() -> list[Item]:
    return [
        Item(question=f"q{i}", references=("Paris",), candidate="Paris" if i % 4 < 2 else "Rome")
        for i in range(40)
    ]


def _policy_holds(scores: np.ndarray, decisions: np.ndarray | None = None) -> None:
    from qaeval_core.scoring import NAN_SCORE

    assert np.isfinite(scores).all()
    assert (scores[1::2] == NAN_SCORE).all()
    assert scores[0::2].tolist() == [1.0 if i % 4 < 2 else 0.0 for i in range(0, 40, 2)]
    if decisions is not None:
        assert not decisions[1::2].any()


def test_the_nan_policy_is_the_same_from_score_calibrate_and_a_judge(sqlite_url: str) -> None:
    """``score`` (frames), ``score_dataset`` (the store), calibration's inputs and a judge all
    replace a non-finite score by 0.0, decided not correct, with the reason in the details."""
    from qaeval_core.calibrate import feature_scores, fit_judge
    from qaeval_core.judge import FeatureSpec, Judge
    from qaeval_core.metrics import base

    metric = _NaNOnOddRows()
    items = _nan_items()
    frame = pd.DataFrame(
        {
            "question": [it.question for it in items],
            "references": [["Paris"]] * len(items),
            "candidate": [it.candidate for it in items],
        }
    )

    scored = score(frame, [metric])
    _policy_holds(scored["f1"].to_numpy(), scored["f1_correct"].to_numpy())
    assert "non-finite score nan stored as 0.0" in scored["f1_details"].iloc[1]

    res = score_items(items, [metric])["f1"]
    _policy_holds(res.scores, res.decisions)
    assert res.details[1]["error"] == "non-finite score nan stored as 0.0"

    scores, decisions, specs = feature_scores(items, [metric])
    _policy_holds(scores["f1"].to_numpy(), decisions["f1"].to_numpy())

    y = np.array([i % 4 < 2 for i in range(len(items))])
    fitted, _ = fit_judge(scores, y, specs, candidates=["threshold"], cv=CrossValidation(n_boot=20))
    judge = Judge([FeatureSpec.from_metric(metric, "f1")], fitted.model, fitted_on=fitted.fitted_on)
    judge._metrics = {"f1": metric}  # the NaN metric is not in the registry
    _policy_holds(judge.input_scores(items)[0]["f1"].to_numpy())
    assert base.get_metric("f1").score_batch(items).scores[1] == 1.0  # the real F1 is untouched

    _import(sqlite_url)
    score_dataset(sqlite_url, "toy", [metric])
    stored = store.scores(sqlite_url, "toy", metric_id="f1").sort_values("item_id")
    assert np.isfinite(stored["value"]).all()
    assert stored["details"].iloc[1]["error"] == "non-finite score nan stored as 0.0"
