"""Calibration reads answers with the robust profile by default (issue 33, item 1).

The judge a user gets without options flipped its verdict on 6.6% of meaning-preserving
reformattings (bold, a citation marker, lost spaces) because robust reading was opt-in; the
experiments (experiments/results/default_profile.md, invariance.md) show the robust judge at
99.9-100% invariance (accuracy: NQ301 +0.07 points, MMLU-Pro -1.12), so it is the default
now. The other readings stay one option away, and judge files record each input's profile in
its parameters: a file written before (no ``normalize`` field) reads ``spaced``, as it did.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
from _paths import TEST_DATA

from qaeval_core.calibrate import CrossValidation, fit_judge
from qaeval_core.calibrate.inputs import DEFAULT_PROFILE, metric_specs
from qaeval_core.judge import FeatureSpec, Judge
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
        X, y.to_numpy(), [FeatureSpec.from_metric(m, c) for c, m in specs],
        candidates=("threshold",), cv=CrossValidation(n_boot=20, seed=0),
    )  # fmt: skip
    path = judge.save(tmp_path / "judge.json")
    saved = json.loads(path.read_text())
    recorded = [f["metric"]["params"]["normalize"] for f in saved["features"]]
    assert recorded and set(recorded) == {"robust"}  # the inputs the threshold kept
    assert {m.normalize for m in Judge.from_config(path).metrics().values()} == {"robust"}
