"""Calibration reads answers with the robust profile by default (issue 33, item 1).

The judge a user gets without options flipped its verdict on 6.6% of meaning-preserving
reformattings (bold, a citation marker, lost spaces) because robust reading was opt-in; the
experiments (experiments/results/default_profile.md, invariance.md) show the robust judge at
99.9-100% invariance, so it is the default now. Every input reads robust; the answer-shape
ones (number_match, number_agree, number_closeness(_scaled), brevity, no_hedge) read its reader
text with LaTeX kept as written (numbers as written, math parsed by the number readers): with
numbers respelled (the canonical text) the judge lost 1.12 points on MMLU-Pro, on the reader
text with LaTeX flattened 0.79 (experiments/results/default_profile.md has the measured numbers
of the current reading). The other readings stay one option away, and
judge files record each input's profile in its parameters: a file written before (no
``normalize`` field) reads ``spaced``, as it did.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest
from _paths import TEST_DATA

from qaeval_core.calibrate import CrossValidation, fit_judge
from qaeval_core.calibrate.inputs import (
    DEFAULT_PROFILE,
    FEATURE_ONLY,
    SHAPE_ROBUST_TEXT,
    at_profile,
    metric_specs,
)
from qaeval_core.errors import ConfigError
from qaeval_core.judge import FeatureSpec, Judge
from qaeval_core.metrics.base import get_metric, with_profile
from qaeval_core.schema import Item
from qaeval_core.workflows import calibration
from qaeval_core.workflows.calibration import profile_specs


def test_the_default_profile_is_robust_at_every_door() -> None:
    assert DEFAULT_PROFILE == "robust"
    for fn in (calibration.calibrate_dataset, calibration.labelled_data, profile_specs):
        assert inspect.signature(fn).parameters["normalize"].default == "robust", fn.__name__
    specs = profile_specs(metric_specs())
    takes = [m for _, m in specs if "normalize" in m._param_names()]
    assert len(takes) >= 20  # every lexical, neural and answer-shape default input
    assert {m.normalize for m in takes} == {"robust"}


def test_each_default_input_reads_at_its_pinned_profile() -> None:
    """The per-input readings of the default judge: robust for every lexical and neural input;
    the answer-shape ones robust on the reader text with LaTeX as written (formatting removed,
    numbers as written), not the canonical text whose respelled numbers cost accuracy on
    MMLU-Pro."""
    specs = profile_specs(metric_specs())
    readings = {
        col: (m.normalize, getattr(m, "robust_text", None))
        for col, m in specs
        if "normalize" in m._param_names()
    }
    shape = {
        "number_match",
        "number_agree",
        "number_closeness",
        "number_closeness_scaled",
        "brevity",
        "no_hedge",
    }
    assert set(FEATURE_ONLY) == shape and SHAPE_ROBUST_TEXT == "reader_latex"
    assert {c for c, r in readings.items() if r == ("robust", "reader_latex")} == shape
    others = {c for c, r in readings.items() if r == ("robust", None)}
    for col in (
        "em",
        "f1",
        "contains",
        "rougeL",
        "meteor",
        "panda",
        "embed_cosine",
        "bertscore",
        "smile",
        "avert",
        "extract_f1",
    ):
        assert col in others, col
    assert others | shape == set(readings)
    # the other profiles read every input, answer-shape ones included, at that profile
    for profile in ("spaced", "squad"):
        shaped = [m for c, m in profile_specs(metric_specs(), profile) if c in shape]
        assert {(m.normalize, m.robust_text) for m in shaped} == {(profile, "canonical")}


def test_the_default_shape_inputs_ignore_formatting_but_keep_numbers_as_written() -> None:
    """On the reader text a citation marker is no number and no word, and "twenty-five"
    stays words (the canonical text would read it as 25)."""
    by_col = dict(profile_specs(metric_specs()))
    items = [
        Item(question="q", references=("Paris",), candidate="Paris"),
        Item(question="q", references=("Paris",), candidate="**Paris** [1][2]"),
        Item(question="q", references=("25",), candidate="twenty-five"),
    ]
    brevity = by_col["brevity"].score_batch(items).scores
    assert brevity[0] == pytest.approx(brevity[1])
    match = by_col["number_match"].score_batch(items).scores
    assert match[1] == 0.0  # "[1][2]" is no number
    assert match[2] == 0.0  # as written, not respelled
    canonical = at_profile(get_metric("number_match"), "spaced")
    assert with_profile(canonical, "robust").score_batch(items[2:]).scores[0] == 1.0


def test_the_default_shape_inputs_read_latex_as_the_number_readers_do() -> None:
    """MMLU-Pro's row "\\( \\frac{\\pi - 2}{\\pi} \\)" for 0.363 (labelled correct): the
    number readers parse the fraction (number_closeness 1, as at ``spaced``); flattened to
    "π - 2/ π" (the reader text before) it read as two numbers and scored 0. Bold and a
    citation marker around it still change no answer-shape input."""
    by_col = dict(profile_specs(metric_specs()))
    plain = r"\( \frac{\pi - 2}{\pi} \)"
    items = [
        Item(question="q", references=("0.363",), candidate=plain),
        Item(question="q", references=("0.363",), candidate=f"**{plain}** [1]"),
    ]
    for col in FEATURE_ONLY:
        scores = by_col[col].score_batch(items).scores
        assert scores[0] == pytest.approx(scores[1]), col
    assert by_col["number_closeness"].score_batch(items).scores[0] == 1.0
    flattened = get_metric("number_closeness", normalize="robust", robust_text="reader")
    assert flattened.score_batch(items).scores[0] == 0.0


def test_a_canonical_robust_shape_input_keeps_its_config_hash() -> None:
    """Judge files and stored scores with robust answer-shape inputs written before the reader
    option keep their hash (and so their reading); the reader one is a different config."""
    old = get_metric("number_match", normalize="robust")
    assert "robust_text" not in old.config()["params"]
    assert get_metric(
        "number_match", normalize="robust", robust_text="canonical"
    ).config_hash() == (old.config_hash())
    reader = get_metric("number_match", normalize="robust", robust_text="reader")
    assert reader.config_hash() != old.config_hash()
    latex = get_metric("number_match", normalize="robust", robust_text="reader_latex")
    assert latex.config_hash() not in (old.config_hash(), reader.config_hash())
    with pytest.raises(ConfigError, match="robust_text"):
        get_metric("brevity", robust_text="fancy")


def test_the_cli_flag_defaults_to_robust() -> None:
    import typer

    from qaeval_core.cli.main import app

    command = typer.main.get_command(app).commands["calibrate"]  # type: ignore[attr-defined]
    flag = next(p for p in command.params if p.name == "normalize")
    assert flag.default == "robust"


def test_other_readings_stay_one_option_away() -> None:
    for profile in ("spaced", "squad"):
        specs = profile_specs(metric_specs(), profile)
        assert {m.normalize for _, m in specs if "normalize" in m._param_names()} == {profile}


def test_a_judge_file_records_the_profile_and_an_old_one_reads_spaced(tmp_path) -> None:
    old = Judge.from_config(TEST_DATA / "judge_v1" / "judge.json")
    raw = json.loads((TEST_DATA / "judge_v1" / "judge.json").read_text())
    assert all("normalize" not in f["metric"]["params"] for f in raw["features"])
    assert {m.normalize for m in old.metrics().values()} == {"spaced"}

    rng = np.random.default_rng(0)
    specs = profile_specs([(c, m) for c, m in metric_specs(["f1", "recall"])])
    X = pd.DataFrame({"f1": rng.random(60), "recall": rng.random(60)})
    y = (X["f1"] + 0.2 * rng.standard_normal(60)) > 0.5
    judge, _ = fit_judge(
        X,
        y.to_numpy(),
        [FeatureSpec.from_metric(m, c) for c, m in specs],
        candidates=("threshold",),
        cv=CrossValidation(n_boot=20, seed=0),
    )
    path = judge.save(tmp_path / "judge.json")
    saved = json.loads(path.read_text())
    recorded = [f["metric"]["params"]["normalize"] for f in saved["features"]]
    assert recorded and set(recorded) == {"robust"}  # the inputs the threshold kept
    assert {m.normalize for m in Judge.from_config(path).metrics().values()} == {"robust"}
