"""A calibration reports its steps and its progress through a callback (issue 21, item 8).

The default fit takes minutes; the page and the CLI showed nothing while it ran. The workflow
prints nothing itself: it calls ``progress`` with a :class:`CalibrationProgress` per step and per
unit of work, which the page draws as a status box with a bar and the CLI as a bar on stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _calibration_data import fake_cost_measuring, write_labelled_dataset

from qaeval_core import workflows
from qaeval_core.calibrate.options import CostPolicy, CrossValidation
from qaeval_core.calibrate.progress import CalibrationProgress, Steps
from qaeval_core.cli.main import main
from qaeval_core.workflows.calibration import calibration_steps

METRICS = ["em", "f1", "contains", "rougeL"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    return db


def test_a_cost_aware_fit_reports_every_step_in_order(store: str) -> None:
    heard: list[CalibrationProgress] = []
    workflows.calibrate_dataset(
        store,
        "toy",
        metrics=METRICS,
        candidates=["stacker", "threshold"],
        cv=CrossValidation(n_boot=50),
        progress=heard.append,
    )
    expected = calibration_steps(measures_costs=True)
    assert expected == [
        "Reading labels",
        "Scoring inputs",
        "Measuring input costs",
        "Choosing inputs",
        "Comparing combiners",
        "Refitting the winner, baselines and triage band",
    ]
    steps = list(dict.fromkeys(p.step for p in heard))
    assert steps == expected  # each step reported, in this order
    assert all(p.steps == len(expected) and p.index == expected.index(p.step) + 1 for p in heard)
    fractions = [p.fraction for p in heard]
    assert fractions == sorted(fractions) and 0 <= fractions[0] < fractions[-1] < 1
    scoring = [p for p in heard if p.step == "Scoring inputs"]
    assert scoring[-1].done == scoring[-1].total == len(METRICS)
    named = {m for m in METRICS if any(p.message.startswith(f"{m}: scoring ") for p in scoring)}
    assert named == set(METRICS)  # the input being scored is named while it is scored
    comparing = [p for p in heard if p.step == "Comparing combiners"]
    assert comparing[-1].done == comparing[-1].total == 2
    choosing = [p for p in heard if p.step == "Choosing inputs"]
    assert choosing[-1].done >= 1 and "input set(s) evaluated" in choosing[-1].message


def test_without_cost_measuring_the_fit_has_fewer_steps_and_scores_are_reused(store: str) -> None:
    workflows.calibrate_dataset(
        store,
        "toy",
        metrics=METRICS,
        cv=CrossValidation(n_boot=50),
        cost_policy=CostPolicy(inputs="all"),
    )
    heard: list[CalibrationProgress] = []
    workflows.calibrate_dataset(
        store,
        "toy",
        metrics=METRICS,
        cv=CrossValidation(n_boot=50),
        cost_policy=CostPolicy(inputs="all"),
        progress=heard.append,
    )
    assert list(dict.fromkeys(p.step for p in heard)) == calibration_steps(measures_costs=False)
    reused = [p.message for p in heard if p.message.endswith("reusing stored scores.")]
    assert reused == [f"{m}: reusing stored scores." for m in METRICS]


def test_steps_number_a_nested_run_under_the_outer_one() -> None:
    heard: list[CalibrationProgress] = []
    outer = Steps(heard.append, ["a", "b", "c"])
    outer.start("a", "first", total=2)
    outer.advance("half", done=1)
    inner = Steps(outer.relay, ["c"])
    inner.start("c", "nested", total=4)
    inner.advance("most", done=3)
    assert [(p.step, p.index, p.steps, p.done, p.total) for p in heard] == [
        ("a", 1, 3, 0, 2),
        ("a", 1, 3, 1, 2),
        ("c", 3, 3, 0, 4),
        ("c", 3, 3, 3, 4),
    ]
    assert heard[1].fraction == pytest.approx(0.5 / 3)
    assert heard[-1].fraction == pytest.approx((2 + 0.75) / 3)
    assert str(heard[-1]) == "most"
    Steps(None, ["x"]).start("x", "nobody listens")  # no callback: silent, no error


def test_the_cli_numbers_the_steps_on_stderr_and_keeps_stdout_for_tables(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "judge.json"
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-m",
            "em,f1",
            "--inputs",
            "all",
            "--folds",
            "3",
            "-o",
            str(out),
            "--db",
            store,
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    steps = calibration_steps(measures_costs=False)
    for k, name in enumerate(steps, start=1):
        assert f"Step {k} of {len(steps)}: {name}" in printed.err
    assert "em: scoring 160 items ..." in printed.err
    assert "Step " not in printed.out and "Cross-validated quality on" in printed.out


def test_the_page_writes_each_step_and_ends_with_a_full_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Calibrate page's status box: a line per step (the workflow's, then the page's own),
    and a bar that ends full; the box ends collapsed and says how many labels were used."""
    from _apptest import build_demo_store, copy_store, finish_store
    from _calibrate_page import fit, logged_in, open_page

    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    path, url = build_demo_store(tmp_path / "built")
    finish_store(url)
    copy_store(path, tmp_path, monkeypatch)
    at = fit(open_page(logged_in("res")))
    expected = [*calibration_steps(measures_costs=True), "Bootstrapping quality", "Learning curves"]
    written = [str(m.value).replace("\\", "") for m in at.markdown]  # escaped as plain text
    lines = [line for line in written if line.startswith("Step ")]
    assert lines == [f"Step {k} of {len(expected)}: {n}" for k, n in enumerate(expected, 1)]
    bar = at.get("progress")[-1]
    assert bar.proto.value == 100 and bar.proto.text == "Done."
