"""The cascade (cheap judge -> LLM -> people): the cross-validated fit, the judge file round
trip with its LLM tier, refusing a hand-edited tier, and ``qaeval score --dry-run``.

The LLM's probabilities are simulated here (a column named ``llm_judge`` that the judge reads
instead of asking the model); the real model is exercised in ``test_llm_judge.py``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from qaeval_core.calibrate import fit_judge
from qaeval_core.calibrate.cascade import ChanceWarning, fit_cascade
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.cli.main import app
from qaeval_core.errors import ConfigError
from qaeval_core.judge import FeatureSpec, Judge
from qaeval_core.judge.config_file import config_checksum
from qaeval_core.metrics.base import get_metric


def _world(n: int = 400, seed: int = 0):
    """Cheap inputs that see surface matches, and an LLM that knows the answers the cheap
    inputs miss (correct answers with no reference string) most of the time."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.55
    surface = y & (rng.random(n) < 0.7)  # correct and containing the reference
    f1 = np.clip(np.where(surface, 0.8, 0.15) + rng.normal(0, 0.12, n), 0, 1)
    recall = np.clip(np.where(surface, 0.9, 0.2) + rng.normal(0, 0.15, n), 0, 1)
    knows = rng.random(n) < 0.85
    p_llm = np.clip(np.where(y == knows, 0.85, 0.15) + rng.normal(0, 0.08, n), 0.01, 0.99)
    groups = np.arange(n) // 2
    scores = pd.DataFrame({"f1": f1, "recall": recall})
    return scores, y, p_llm, groups


def _cheap_judge(scores, y, groups):
    specs = [FeatureSpec.from_metric(get_metric(c), c) for c in scores.columns]
    return fit_judge(
        scores, y, specs, groups=groups, cv=CrossValidation(n_boot=50), candidates=("stacker",)
    )


def test_the_llm_tier_helps_where_the_cheap_judge_doubts_and_picks_a_share():
    scores, y, p_llm, groups = _world()
    judge, report = _cheap_judge(scores, y, groups)
    p_cheap = judge.probability.predict(report.oof_proba[report.winner])
    feature = FeatureSpec.from_metric(get_metric("llm_judge"))
    tier = fit_cascade(p_cheap, p_llm, y, feature, groups=groups)
    alone = {r["llm_share"]: r["cv_accuracy"] for r in tier.curve if r["human_share"] == 0}
    assert tier.llm_share > 0 and tier.coef_llm > 0
    assert alone[tier.llm_share] > alone[0.0] + 0.03
    # People on top: more human share never lowers the cross-validated accuracy.
    at = [r["cv_accuracy"] for r in tier.curve if r["llm_share"] == tier.llm_share]
    assert at == sorted(at)
    assert tier.llm_auc > 0.8


def test_an_llm_at_chance_gets_a_visible_warning():
    scores, y, _, groups = _world()
    judge, report = _cheap_judge(scores, y, groups)
    p_cheap = judge.probability.predict(report.oof_proba[report.winner])
    noise = np.random.default_rng(3).random(len(y))
    with pytest.warns(ChanceWarning, match="at chance"):
        fit_cascade(p_cheap, noise, y, FeatureSpec.from_metric(get_metric("llm_judge")))


@pytest.fixture(scope="module")
def cascade_judge(tmp_path_factory: pytest.TempPathFactory):
    scores, y, p_llm, groups = _world()
    judge, report = _cheap_judge(scores, y, groups)
    p_cheap = judge.probability.predict(report.oof_proba[report.winner])
    feature = FeatureSpec.from_metric(get_metric("llm_judge"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChanceWarning)
        judge.cascade = fit_cascade(
            p_cheap,
            p_llm,
            y,
            feature,
            groups=groups,
            human_share=0.1,
            llm_seconds_per_item=1.5,
            cheap_s_per_1000=2.0,
        )
    path = judge.save(tmp_path_factory.mktemp("cascade") / "judge.json")
    frame = scores.copy()
    frame["llm_judge"] = p_llm
    return judge, path, frame


def test_a_judge_with_an_llm_tier_round_trips_and_scores_the_same(cascade_judge):
    judge, path, frame = cascade_judge
    loaded = Judge.from_config(path)
    assert loaded.to_config() == judge.to_config()
    before = judge.judge_scores(frame)
    after = loaded.judge_scores(frame)
    pd.testing.assert_frame_equal(before, after)
    tiers = after["judge_tier"].value_counts()
    assert set(tiers.index) == {"cheap", "llm", "people"}
    assert tiers["people"] == pytest.approx(0.1 * len(frame), abs=0.05 * len(frame))
    llm_rows = after["judge_tier"] != "cheap"
    assert after.loc[llm_rows, "judge_llm_probability"].notna().all()
    assert after.loc[~llm_rows, "judge_llm_probability"].isna().all()
    assert (after.loc[after["judge_tier"] == "people", "judge_outcome"] == "uncertain").all()


def test_without_the_llm_column_or_the_items_the_judge_says_what_it_needs(cascade_judge):
    judge, _, frame = cascade_judge
    with pytest.raises(ConfigError, match="pass the items"):
        judge.judge_scores(frame.drop(columns="llm_judge"))


def test_another_operating_point_is_read_off_the_curve(cascade_judge):
    judge, _, frame = cascade_judge
    none = judge.with_llm_share(0.0).with_share(0.0).judge_scores(frame)
    assert (none["judge_tier"] == "cheap").all()
    with pytest.raises(ConfigError, match="no point at LLM share 0.33"):
        judge.with_llm_share(0.33)


def _resign(path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text())
    edit(data)
    data["checksum"] = config_checksum(data)
    out = path.with_name("edited.json")
    out.write_text(json.dumps(data))
    return out


def test_a_re_signed_tier_that_contradicts_its_curve_is_refused(cascade_judge):
    _, path, _ = cascade_judge
    edited = _resign(path, lambda d: d["cascade"].update(llm_threshold=0.0))
    with pytest.raises(ConfigError, match="disagrees with its own curve"):
        Judge.from_config(edited)
    huge = _resign(path, lambda d: d["cascade"].update(coef_llm=10**400))
    with pytest.raises(ConfigError, match="finite number"):
        Judge.from_config(huge)
    other = _resign(path, lambda d: d["cascade"]["feature"]["metric"].update(id="f1"))
    with pytest.raises(ConfigError, match="llm_judge"):
        Judge.from_config(other)


def _rows_at(data, *, llm: bool, chosen: bool):  # type: ignore[no-untyped-def]
    """Curve rows at (``llm``) or off the chosen LLM share, with or without the chosen point."""
    tier = data["cascade"]
    point = (tier["llm_share"], tier["human_share"])
    return [
        r
        for r in tier["curve"]
        if (r["llm_share"] == tier["llm_share"]) == llm
        and ((r["llm_share"], r["human_share"]) == point) == chosen
    ]


def _edit_rows(pick, **values):  # type: ignore[no-untyped-def]
    return lambda d: [r.update(values) for r in pick(d)]


def _lowered_at_chosen_share(data):  # type: ignore[no-untyped-def]
    """The LLM reads more: its threshold lowered at the chosen share, on every row and the
    tier itself alike (consistent at that share, but above what larger shares use)."""
    data["cascade"]["llm_threshold"] = 0.0
    for r in _rows_at(data, llm=True, chosen=True) + _rows_at(data, llm=True, chosen=False):
        r["llm_threshold"] = 0.0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["cascade"].update(curve=[]), r"cascade.curve is empty"),
        (  # issue 31: emptied and the threshold lowered, so the LLM reads most items
            lambda d: d["cascade"].update(curve=[], llm_threshold=0.01),
            r"cascade.curve is empty",
        ),
        (lambda d: d["cascade"]["curve"].pop(0), r"cascade.curve lacks the point at LLM share 0 "),
        (
            lambda d: d["cascade"]["curve"].append(dict(d["cascade"]["curve"][3])),
            r"cascade.curve\[\d+\] repeats the point",
        ),
        (
            lambda d: d["cascade"].update(curve=d["cascade"]["curve"][6:]),
            r"no row with llm_share 0",
        ),
        (
            lambda d: d["cascade"].update(
                curve=[r for r in d["cascade"]["curve"] if r["human_share"]]
            ),
            r"no row with human_share 0",
        ),
        (_lowered_at_chosen_share, r"cascade.curve\[\d+\].llm_threshold is above a smaller"),
        (
            lambda d: _rows_at(d, llm=True, chosen=False)[-1].update(coef_llm=3.0),
            r"cascade.curve\[\d+\].coef_llm is 3 but .* \(one refit per LLM share\)",
        ),
        (
            _edit_rows(
                lambda d: [r for r in d["cascade"]["curve"] if r["llm_share"] == 0],
                llm_threshold=0.3,
            ),
            r"llm_threshold must be 1 \(never\) at LLM share 0",
        ),
        (
            _edit_rows(
                lambda d: [r for r in d["cascade"]["curve"] if r["llm_share"] == 0], s_per_1000=99.0
            ),
            r"s_per_1000 is 99 but the tier's costs give 2",
        ),
        (
            lambda d: [r for r in _rows_at(d, llm=False, chosen=False) if r["human_share"] == 0][
                0
            ].update(people_threshold=0.2),
            r"people_threshold must be 1 \(never\) at human share 0",
        ),
        (
            lambda d: [r for r in _rows_at(d, llm=False, chosen=False) if r["human_share"] == 0.3][
                0
            ].update(cv_accuracy=0.0),
            r"cv_accuracy is below a smaller human share's",
        ),
        (
            lambda d: [r for r in _rows_at(d, llm=False, chosen=False) if r["human_share"] == 0.3][
                0
            ].update(people_threshold=1.0),
            r"people_threshold is above a smaller human share's",
        ),
        (lambda d: d["cascade"].update(llm_auc=1.5), r"cascade.llm_auc must be in \[0, 1\]"),
        (lambda d: d["cascade"].pop("llm_threshold"), r"cascade lacks the field 'llm_threshold'"),
        (lambda d: d["cascade"].update(curve={}), r"cascade.curve must be a list"),
        (lambda d: d["cascade"]["curve"][2].update(intercept="0"), r"curve\[2\].intercept must be"),
    ],
)
def test_an_emptied_or_inconsistent_re_signed_curve_is_refused(cascade_judge, edit, message):
    """Issue 31, item 6: with its curve emptied the tier could not be checked, and a lowered
    threshold made the LLM read most items; every rule of the curve is now checked on load,
    with a one-line error naming the field, though the checksum was recomputed."""
    _, path, _ = cascade_judge
    with pytest.raises(ConfigError, match=message) as caught:
        Judge.from_config(_resign(path, edit))
    assert "\n" not in str(caught.value)


def test_dry_run_predicts_the_time_and_scores_nothing(cascade_judge, tmp_path):
    _, path, _ = cascade_judge
    rows = tmp_path / "answers.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"question": f"q{i}", "references": ["a"], "candidate": "a"})
            for i in range(500)
        )
        + "\n"
    )
    result = CliRunner().invoke(app, ["score", "--config", str(path), str(rows), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "500 rows" in result.output and "LLM tier" in result.output
    assert "~1.0 s" in result.output  # cheap inputs: 2 s per 1,000 rows
    assert not list(tmp_path.glob("answers.scored*"))


def test_the_trace_says_which_tier_decided_and_what_the_llm_said(cascade_judge):
    from qaeval_core.schema import Item

    judge, _, frame = cascade_judge
    items = [Item(question=f"q{i}", references=("a",), candidate="b") for i in range(len(frame))]
    out = judge.judge_scores(frame, items, trace=True)
    traces = [json.loads(t) for t in out["judge_trace"]]
    assert [t["tier"] for t in traces] == out["judge_tier"].tolist()
    for t, llm in zip(traces, out["judge_llm_probability"], strict=True):
        assert (t["llm_probability"] is None) == bool(np.isnan(llm))
        assert 0.0 <= t["cheap_probability"] <= 1.0
