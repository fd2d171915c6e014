"""Judge config: write -> read -> apply gives identical scores; broken files fail clearly."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qaeval_core.calibrate import feature_scores, fit_judge
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.errors import ConfigError
from qaeval_core.judge import JUDGE_SCHEMA_VERSION, FeatureSpec, Judge, config_checksum
from qaeval_core.judge.combiners.fusion import FusionClassifier
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.combiners.threshold import ThresholdClassifier
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@register
class _RecallMetric(Metric):
    """Share of reference tokens found in the candidate (max over references)."""

    id = "_test_recall"
    version = "1"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        scores = []
        for it in items:
            cand = set(_tokens(it.candidate))
            best = 0.0
            for ref in it.references:
                toks = _tokens(ref)
                if toks:
                    best = max(best, sum(t in cand for t in toks) / len(toks))
            scores.append(best)
        return MetricResult(np.array(scores), np.array(scores) >= self.threshold)


@register
class _BrevityMetric(Metric):
    """1 for one-word answers, falling with length (a weak, different signal)."""

    id = "_test_brevity"
    version = "1"

    def __init__(self, *, threshold: float = 0.5, scale: float = 10.0) -> None:
        self.threshold = threshold
        self.scale = scale

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        s = np.array([1.0 / (1.0 + len(_tokens(it.candidate)) / self.scale) for it in items])
        return MetricResult(s, s >= self.threshold)


def _items(n: int = 240, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    answers = ["paris", "blue whale", "1945", "marie curie", "mount everest", "jupiter"]
    wrong = ["london", "shark", "1939", "ada lovelace", "k2", "saturn"]
    rows, labels = [], []
    for i in range(n):
        q = i // 3  # three answers per question, like several QA systems on one question
        k = q % len(answers)
        correct = rng.random() < 0.55
        core = answers[k] if correct else wrong[k]
        filler = " ".join(["indeed"] * int(rng.integers(0, 12)))
        cand = f"I think it is {core} {filler}".strip() if rng.random() < 0.5 else core
        if correct and rng.random() < 0.1:  # a correct answer with no overlap (alias)
            cand = "the answer you want"
        rows.append(
            {
                "id": f"q{i}",
                "question": f"question {q} about {answers[k]}?",
                "references": [answers[k]],
                "candidate": cand,
                "extra": i * 2,
            }
        )
        labels.append(correct)
    return pd.DataFrame(rows), np.array(labels)


@pytest.fixture(scope="module")
def fitted() -> tuple[Judge, pd.DataFrame, np.ndarray]:
    from qaeval_core.judge import frame_to_items

    frame, y = _items()
    metrics = [_RecallMetric(), _BrevityMetric(scale=5.0)]
    scores, decisions, specs = feature_scores(frame_to_items(frame), metrics)
    judge, _ = fit_judge(
        scores,
        y,
        specs,
        groups=frame["question"],
        default_decisions=decisions,
        cv=CrossValidation(n_boot=200),
        name="test-judge",
        fitted_on={"dataset": "synthetic"},
    )
    return judge, frame, y


@pytest.mark.parametrize(
    "model_factory",
    [
        lambda: ThresholdClassifier(column="best"),
        lambda: FusionClassifier(min_filter_support=3),
        lambda: StackerClassifier(),
    ],
    ids=["threshold", "fusion", "stacker"],
)
def test_written_read_back_and_applied_gives_identical_scores(
    tmp_path: Path, model_factory
) -> None:
    from qaeval_core.judge import frame_to_items

    frame, y = _items(seed=1)
    metrics = [_RecallMetric(), _BrevityMetric()]
    scores, _, specs = feature_scores(frame_to_items(frame), metrics)
    model = model_factory().fit(scores, y)
    judge = Judge(specs, model, name="rt", fitted_on={"dataset": "synthetic", "n_labels": len(y)})
    before = judge.judge(frame)
    path = judge.save(tmp_path / "judge.json")
    loaded = Judge.from_config(path)
    after = loaded.judge(frame)
    pd.testing.assert_frame_equal(before, after)
    np.testing.assert_array_equal(
        after["judge_score"].to_numpy(), model.predict_proba(scores)[:, 1]
    )
    # Saving the loaded judge reproduces the same file byte for byte.
    again = loaded.save(tmp_path / "again.json")
    assert again.read_bytes() == path.read_bytes()


def test_judge_on_a_frame_keeps_input_columns_and_adds_judge_columns(fitted) -> None:
    judge, frame, _ = fitted
    out = judge.judge(frame)
    assert list(out.columns[: len(frame.columns)]) == list(frame.columns)
    pd.testing.assert_frame_equal(out[frame.columns], frame)
    assert out["judge_correct"].dtype == bool
    assert ((out["judge_score"] >= 0.5) == out["judge_correct"]).all()
    assert out["judge_score"].between(0, 1).all()
    for col in judge.columns:
        assert f"judge_{col}" in out.columns


def test_judge_on_items_matches_judge_on_a_frame(fitted) -> None:
    from qaeval_core.judge import frame_to_items

    judge, frame, _ = fitted
    a = judge.judge(frame_to_items(frame))
    b = judge.judge(frame)
    np.testing.assert_array_equal(a["judge_score"].to_numpy(), b["judge_score"].to_numpy())


def test_fit_judge_reports_cv_quality_and_baselines(fitted) -> None:
    judge, frame, y = fitted
    q = judge.quality
    assert q["winner"] in {"threshold", "fusion", "stacker"}
    assert {c["candidate"] for c in q["candidates"]} == {"threshold", "fusion", "stacker"}
    lo, hi = q["cv_accuracy_ci"]
    assert lo <= q["cv_accuracy"] <= hi
    assert {b["metric"] for b in q["baselines"]} == {"_test_recall", "_test_brevity"}
    assert judge.fitted_on["dataset"] == "synthetic"
    assert judge.fitted_on["n_labels"] == len(y)
    # The judge fitted on all labels does at least as well as chance on them.
    out = judge.judge(frame)
    assert (out["judge_correct"].to_numpy() == y).mean() > 0.7


def _write(path: Path, config: dict, *, fix_checksum: bool = True) -> Path:
    if fix_checksum:
        config["checksum"] = config_checksum(config)
    path.write_text(json.dumps(config), "utf-8")
    return path


def test_tampered_config_fails_with_a_clear_message(tmp_path: Path, fitted) -> None:
    judge, _, _ = fitted
    config = judge.to_config()
    model = config["model"]
    if "threshold" in model:  # nudge the fitted decision itself, as a hand edit would
        model["threshold"] += 0.05
    elif "intercept" in model:
        model["intercept"] += 0.05
    else:
        model["voters"][0]["model"]["threshold"] += 0.05
    path = _write(tmp_path / "tampered.json", config, fix_checksum=False)
    with pytest.raises(ConfigError, match="fails its checksum: the file was changed"):
        Judge.from_config(path)


def test_old_and_future_versions_fail_with_the_fix(tmp_path: Path, fitted) -> None:
    judge, _, _ = fitted
    old = {**judge.to_config(), "schema_version": 0}
    with pytest.raises(ConfigError, match=r"schema version 0.*Calibrate again on the same labels"):
        Judge.from_config(_write(tmp_path / "old.json", old))
    new = {**judge.to_config(), "schema_version": JUDGE_SCHEMA_VERSION + 1}
    with pytest.raises(ConfigError, match="Upgrade qaeval"):
        Judge.from_config(_write(tmp_path / "new.json", new))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update(kind="something-else"), "is not a qaeval judge config"),
        (lambda c: c.update(schema_version="1"), "schema_version must be an integer"),
        (lambda c: c.update(features=[]), "features must be a non-empty list"),
        (lambda c: c["features"][0].update(column=""), r"features\[0\]\.column"),
        (lambda c: c["features"][0]["metric"].update(id="nope"), "Unknown metric 'nope'"),
        (lambda c: c["features"][0].update(config_hash="0" * 16), "configuration changed"),
        (lambda c: c.update(model={"type": "magic"}), "model.type is 'magic'"),
        (lambda c: c["model"].pop("type"), "model.type is None"),
        (lambda c: c.pop("checksum"), "has no checksum"),
    ],
)
def test_hand_edited_structure_is_rejected(tmp_path: Path, fitted, edit, message) -> None:
    judge, _, _ = fitted
    config = json.loads(json.dumps(judge.to_config()))
    edit(config)
    path = tmp_path / "edited.json"
    if "checksum" in config:
        _write(path, config)  # a careful hand edit that even recomputes the checksum
    else:
        _write(path, config, fix_checksum=False)
    with pytest.raises(ConfigError, match=message):
        Judge.from_config(path)


def test_not_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "qaeval-judge", ', "utf-8")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        Judge.from_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        Judge.from_config(tmp_path / "missing.json")


def test_changed_metric_version_is_refused(tmp_path: Path, fitted, monkeypatch) -> None:
    judge, _, _ = fitted
    path = judge.save(tmp_path / "judge.json")
    monkeypatch.setattr(_RecallMetric, "version", "2")
    with pytest.raises(ConfigError, match="calibrated with version 1"):
        Judge.from_config(path)


def test_feature_spec_records_params_and_hash() -> None:
    metric = _BrevityMetric(scale=3.0)
    spec = FeatureSpec.from_metric(metric)
    assert spec.params["scale"] == 3.0
    assert spec.config_hash == metric.config_hash()
    assert spec.build().config_hash() == metric.config_hash()


def test_frame_needs_the_item_columns(fitted) -> None:
    judge, _, _ = fitted
    with pytest.raises(ConfigError, match="lacks column"):
        judge.judge(pd.DataFrame({"question": ["q"], "candidate": ["a"]}))
    # Aliases and '/'-separated references work.
    out = judge.judge(
        pd.DataFrame({"query": ["q?"], "answer": ["paris/Paris, France"], "prediction": ["paris"]})
    )
    assert out["judge_score"].notna().all()
    if "_test_recall" in judge.columns:
        assert out.loc[0, "judge__test_recall"] == 1.0


def test_text_reading_panda_judge_round_trips(tmp_path: Path) -> None:
    from qaeval_core.judge import frame_to_items, items_frame
    from qaeval_core.judge.combiners.panda_refit import PandaFitClassifier

    frame, y = _items(seed=2)
    items = frame_to_items(frame)
    scores, _, specs = feature_scores(items, [_RecallMetric()])
    judge, report = fit_judge(
        scores,
        y,
        specs,
        candidates={"panda": lambda: PandaFitClassifier(shipped=False, cv=3)},
        groups=frame["question"],
        texts=items_frame(items),
        cv=CrossValidation(n_boot=100),
    )
    assert report.winner == "panda" and judge.needs_text
    assert judge.columns == []  # PANDA reads text only: no metric to compute
    before = judge.judge(frame)
    loaded = Judge.from_config(judge.save(tmp_path / "panda.json"))
    pd.testing.assert_frame_equal(before, loaded.judge(frame))
    assert (before["judge_correct"].to_numpy() == y).mean() > 0.8


def test_stacker_fit_runs_its_many_small_fits_on_one_blas_thread(monkeypatch):
    """Outside ``fit_judge`` too: BLAS threads only add synchronisation to these tiny fits."""
    from threadpoolctl import threadpool_info

    from qaeval_core.judge.combiners import stacker as stacker_module

    seen: list[int] = []
    real_fit = stacker_module.LogisticRegression.fit

    def recording_fit(self, *args, **kwargs):
        seen.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(stacker_module.LogisticRegression, "fit", recording_fit)
    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    y = X[:, 0] + 0.3 * rng.random(60) > 0.6
    stacker_module.StackerClassifier(seed=0).fit(X, y)
    assert seen and set(seen) == {1}
