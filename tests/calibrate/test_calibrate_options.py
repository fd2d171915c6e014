"""The calibration's option objects (issue 25): defaults, checks that name the parameter, and
one home for each rule (the CLI and the page build these objects instead of re-checking).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys
import warnings

import pytest

from qaeval_core.calibrate import fit_judge, select_inputs
from qaeval_core.calibrate.cascade import add_llm_tier
from qaeval_core.calibrate.options import (
    DEFAULT_CANDIDATES,
    DEFAULT_COST_TOLERANCE,
    DEFAULT_MAX_ACCURACY_LOSS,
    DEFAULT_RISK,
    HUMAN_SHARES,
    LLM_SHARES,
    CostPolicy,
    CrossValidation,
    InputRule,
    LLMTierPolicy,
    TriagePolicy,
)
from qaeval_core.calibrate.select import choose_inputs
from qaeval_core.errors import ConfigError, InputError, OptionError
from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM
from qaeval_core.workflows import calibrate_dataset
from qaeval_core.workflows.cascade import fit_llm_tier


def test_defaults_are_the_plain_calibration() -> None:
    assert dataclasses.astuple(CrossValidation()) == (5, 0, 2000, 0.01)
    assert dataclasses.astuple(TriagePolicy()) == (None, None, None, None)
    assert TriagePolicy().share == 0.0
    loss = DEFAULT_MAX_ACCURACY_LOSS
    assert dataclasses.astuple(CostPolicy()) == ("cheap", None, loss, 300, False)
    assert dataclasses.astuple(InputRule()) == (loss, None, 1, None, False)
    assert loss == DEFAULT_COST_TOLERANCE == 0.003 and DEFAULT_RISK == 0.1
    assert DEFAULT_CANDIDATES == ("stacker", "threshold", "fusion")
    assert dataclasses.astuple(LLMTierPolicy()) == (DEFAULT_JUDGE_LLM, None, "naqt", None, None)


@pytest.mark.parametrize(
    ("function", "defaults"),
    [
        (
            calibrate_dataset,
            {"cv": CrossValidation(), "triage": TriagePolicy(), "cost_policy": CostPolicy()},
        ),
        (
            fit_judge,
            {"cv": CrossValidation(), "triage": TriagePolicy(), "cost_policy": CostPolicy()},
        ),
        (select_inputs, {"rule": InputRule(), "cv": CrossValidation()}),
        (choose_inputs, {"cost_policy": CostPolicy(), "cv": CrossValidation()}),
        (fit_llm_tier, {"llm_tier": LLMTierPolicy()}),
        (add_llm_tier, {"llm_tier": LLMTierPolicy()}),
    ],
)
def test_the_functions_take_the_objects_with_their_defaults(function, defaults) -> None:
    params = inspect.signature(function).parameters
    assert {name: params[name].default for name in defaults} == defaults
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in defaults)
    if function is not choose_inputs:  # what they grouped is no longer a parameter of its own
        assert not {
            "n_splits",
            "n_boot",
            "human_share",
            "risk",
            "max_cost",
            "repeats",
            "seed",
            "model",
            "url",
            "prompt",
            "llm_share",
        } & set(params)


@pytest.mark.parametrize(
    ("make", "param", "message"),
    [
        (lambda: CrossValidation(n_splits=1), "n_splits", r"^n_splits must be >= 2"),
        (lambda: CrossValidation(n_splits=2.5), "n_splits", r"^n_splits must be >= 2"),
        (lambda: CrossValidation(seed=-1), "seed", r"^seed must be >= 0"),
        (lambda: CrossValidation(n_boot=0), "n_boot", r"^n_boot must be >= 1"),
        (
            lambda: CrossValidation(win_margin=-0.1),
            "win_margin",
            r"^win_margin must be in \[0, 1\]",
        ),
        (lambda: TriagePolicy(guarantee=1.0), "guarantee", r"^guarantee must be in \(0, 1\)"),
        (lambda: TriagePolicy(guarantee=True), "guarantee", r"^guarantee must be in \(0, 1\)"),
        (lambda: TriagePolicy(guarantee=0.9, risk=0), "risk", r"^risk must be in \(0, 1\)"),
        (lambda: TriagePolicy(risk=0.2), "risk", r"^risk goes with guarantee"),
        (lambda: TriagePolicy(human_share=1), "human_share", r"^human_share must be a number"),
        (lambda: TriagePolicy(target_accuracy=0), "target_accuracy", r"^target_accuracy must be"),
        (lambda: CostPolicy(inputs="some"), "inputs", r"^inputs must be one of cheap, all"),
        (lambda: CostPolicy(max_cost=0), "max_cost", r"^max_cost must be > 0"),
        (lambda: CostPolicy(max_cost=float("inf")), "max_cost", r"^max_cost must be > 0"),
        (
            lambda: CostPolicy(max_accuracy_loss=1.5),
            "max_accuracy_loss",
            r"^max_accuracy_loss must be in \[0, 1\)",
        ),
        (lambda: CostPolicy(sample=0), "sample", r"^sample must be >= 1"),
        (lambda: CostPolicy(remeasure="yes"), "remeasure", r"^remeasure must be True or False"),
        (lambda: InputRule(max_accuracy_loss=-0.1), "max_accuracy_loss", r"-10 points"),
        (lambda: InputRule(repeats=0), "repeats", r"^repeats must be >= 1"),
        (lambda: InputRule(confidence=0.4), "confidence", r"^confidence must be in \[0.5, 1\)"),
        (lambda: InputRule(tune_once=1), "tune_once", r"^tune_once must be True or False"),
        (lambda: LLMTierPolicy(llm=" "), "llm", r"^llm must name a model"),
        (lambda: LLMTierPolicy(llm=None), "llm", r"^llm must name a model"),
        (lambda: LLMTierPolicy(llm_url="localhost:8080/v1"), "llm_url", r"^llm_url must be"),
        (
            lambda: LLMTierPolicy(llm_prompt="chatty"),
            "llm_prompt",
            r"^llm_prompt must be one "
            r"of naqt, lave, got 'chatty'",
        ),
        (
            lambda: LLMTierPolicy(llm_share=0.25),
            "llm_share",
            r"^llm_share must be one of 0, "
            r"0\.1, 0\.2, 0\.3, 0\.4, 0\.5, 0\.6, 0\.8, 1 \(.*\), got 0\.25",
        ),
        (lambda: LLMTierPolicy(llm_share=True), "llm_share", r"^llm_share must be one of"),
        (
            lambda: LLMTierPolicy(human_share=0.12),
            "human_share",
            r"^human_share must be one of "
            r"0, 0\.05, 0\.1, 0\.15, 0\.2, 0\.3 ",
        ),
    ],
)
def test_a_bad_field_is_refused_in_words_that_name_it(make, param: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        make()
    assert caught.value.param == param
    assert "--" not in str(caught.value)  # the CLI shows the flag; the library never does


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"human_share": 0.2, "target_accuracy": 0.9}, "not both"),
        ({"human_share": 0.0, "target_accuracy": 0.9}, "not both"),  # given is given
        ({"guarantee": 0.9, "human_share": 0.2}, "one of them"),
        ({"guarantee": 0.9, "target_accuracy": 0.9}, "one of them"),
    ],
)
def test_the_triage_band_is_chosen_one_way(fields: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        TriagePolicy(**fields)


def test_a_guarantee_has_a_risk_and_the_policy_its_share() -> None:
    assert TriagePolicy(guarantee=0.95).risk == DEFAULT_RISK
    assert TriagePolicy(guarantee=0.95) == TriagePolicy(guarantee=0.95, risk=DEFAULT_RISK)
    assert TriagePolicy(guarantee=0.95, risk=0.2).risk == 0.2
    assert TriagePolicy(human_share=0.2).share == 0.2
    assert TriagePolicy(target_accuracy=0.9).share == 0.0


def test_an_option_error_is_both_a_config_and_an_input_error() -> None:
    """Before the objects, a bad ``inputs`` was a ConfigError from calibrate_dataset and an
    InputError (a ValueError) from fit_judge; code catching either still catches it."""
    with pytest.raises(OptionError) as caught:
        CostPolicy(inputs="some")
    assert isinstance(caught.value, ConfigError)
    assert isinstance(caught.value, InputError) and isinstance(caught.value, ValueError)


def test_objects_are_frozen_and_checked_again_when_replaced() -> None:
    cv = CrossValidation(n_splits=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cv.n_splits = 1  # type: ignore[misc]
    assert dataclasses.replace(cv, seed=4) == CrossValidation(n_splits=3, seed=4)
    with pytest.raises(OptionError, match="n_splits"):
        dataclasses.replace(cv, n_splits=1)
    assert hash(cv) == hash(CrossValidation(n_splits=3))


def test_whole_numbers_from_numpy_are_plain_ints() -> None:
    import numpy as np

    cv = CrossValidation(n_splits=np.int64(4), seed=np.int32(7))
    assert (cv.n_splits, cv.seed) == (4, 7)
    assert type(cv.n_splits) is int and type(cv.seed) is int
    assert json.dumps(dataclasses.asdict(cv))  # a seed recorded in a judge file stays JSON


def test_the_cost_policy_says_when_it_measures_and_gives_its_rule() -> None:
    assert CostPolicy().measures_costs
    assert not CostPolicy(inputs="all").measures_costs
    assert CostPolicy(inputs="all", max_cost=5).measures_costs
    assert CostPolicy(max_accuracy_loss=0.01, max_cost=5).rule() == InputRule(
        max_accuracy_loss=0.01, max_cost=5
    )


@pytest.mark.parametrize(
    ("cls", "new", "value"),
    [
        (CrossValidation, "win_margin", 0.02),
        (CostPolicy, "max_accuracy_loss", 0.01),
        (InputRule, "max_accuracy_loss", 0.01),
    ],
)
def test_tolerance_is_a_deprecated_name_of_what_it_meant(cls, new: str, value: float) -> None:
    """Issue 34: ``tolerance`` meant 0.01 (a margin to beat the first combiner by) on one
    object and 0.003 (the accuracy a cheaper input set may lose) on two others. Each now has a
    name that says which; the old keyword and attribute still work, with a warning."""
    with pytest.warns(DeprecationWarning, match=f"renamed {cls.__name__}\\({new}="):
        old = cls(tolerance=value)
    assert old == cls(**{new: value}) and getattr(old, new) == value
    with pytest.warns(DeprecationWarning, match=f"renamed {cls.__name__}.{new}"):
        assert old.tolerance == value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a copy neither warns nor takes the value twice
        assert getattr(dataclasses.replace(old, **{new: value / 2}), new) == value / 2
        assert "tolerance" not in repr(cls())
    with pytest.warns(DeprecationWarning), pytest.raises(OptionError, match=f"Give {new} only"):
        cls(**{"tolerance": value, new: value * 2})  # (a new name at its default: unseen)


def test_the_options_module_loads_no_heavy_library() -> None:
    """``qaeval calibrate --help`` reads its defaults from these objects."""
    probe = (
        "import json, sys\n"
        "from qaeval_core.calibrate.options import CostPolicy, CrossValidation, TriagePolicy\n"
        "from qaeval_core.calibrate.options import LLMTierPolicy\n"
        "CrossValidation(); CostPolicy(); TriagePolicy(guarantee=0.9)\n"
        "LLMTierPolicy(llm_share=0.2, human_share=0.1).check_triage(TriagePolicy())\n"
        "heavy = ('pandas', 'numpy', 'sklearn', 'scipy', 'sqlalchemy', 'torch')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_the_cli_defaults_are_the_objects_defaults() -> None:
    import typer

    from qaeval_core.cli.main import app

    command = typer.main.get_command(app).commands["calibrate"]  # type: ignore[attr-defined]
    defaults = {p.name: p.default for p in command.params}
    cv, costs = CrossValidation(), CostPolicy()
    assert (defaults["folds"], defaults["seed"]) == (cv.n_splits, cv.seed)
    assert defaults["candidates"] == ",".join(DEFAULT_CANDIDATES)
    assert defaults["inputs"] == costs.inputs and defaults["remeasure_costs"] == costs.remeasure
    assert defaults["cost_tolerance"] / 100 == costs.max_accuracy_loss
    assert defaults["human_share"] is defaults["risk"] is None
    assert defaults["llm_prompt"] == LLMTierPolicy().llm_prompt
    assert defaults["llm"] is defaults["llm_share"] is None  # no LLM tier unless asked


# ----------------------------------------------------------------------------- the LLM tier


def test_llm_tier_shares_are_points_of_the_grid_its_curve_is_fitted_at() -> None:
    assert LLM_SHARES == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
    assert HUMAN_SHARES == (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
    near = LLMTierPolicy(llm_share=0.1 + 0.2, human_share=0.05 + 1e-12)
    assert (near.llm_share, near.human_share) == (0.3, 0.05)  # the grid's own values
    assert LLMTierPolicy(llm_share=1, human_share=0).llm_share == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        near.llm_share = 0.5  # type: ignore[misc]
    with pytest.raises(OptionError, match="llm_share"):
        dataclasses.replace(near, llm_share=0.7)


def test_llm_tier_endpoint_blank_is_none_and_kept_otherwise() -> None:
    assert LLMTierPolicy(llm_url="").llm_url is None
    assert LLMTierPolicy(llm_url="  ").llm_url is None  # a blank form field
    url = "http://127.0.0.1:8000/v1"
    assert LLMTierPolicy(llm="served", llm_url=f" {url} ").llm_url == url
    assert LLMTierPolicy(llm_url="HTTPS://example.org/v1").llm_url == "HTTPS://example.org/v1"


def test_llm_tier_starts_people_at_its_share_or_nearest_the_band() -> None:
    assert LLMTierPolicy().human_share_for(None) == 0.0
    assert LLMTierPolicy().human_share_for(0.0) == 0.0
    assert LLMTierPolicy().human_share_for(0.12) == 0.1
    assert LLMTierPolicy().human_share_for(0.125) == 0.1  # a tie goes to the smaller share
    assert LLMTierPolicy().human_share_for(0.45) == 0.3  # beyond the grid: its last point
    assert LLMTierPolicy(human_share=0.2).human_share_for(0.05) == 0.2


@pytest.mark.parametrize(
    ("triage", "param"),
    [
        (TriagePolicy(guarantee=0.95), "guarantee"),
        (TriagePolicy(target_accuracy=0.9), "target_accuracy"),
    ],
)
def test_llm_tier_refuses_a_band_it_cannot_honour_yet(triage: TriagePolicy, param: str) -> None:
    with pytest.raises(OptionError, match=rf"^{param} is not available with an LLM tier") as err:
        LLMTierPolicy().check_triage(triage)
    assert err.value.param == param
    assert "human_share=S" in str(err.value) and "--" not in str(err.value)


def test_llm_tier_takes_a_human_share_or_no_band() -> None:
    LLMTierPolicy().check_triage(TriagePolicy())
    LLMTierPolicy(human_share=0.1).check_triage(TriagePolicy(human_share=0.1))
    LLMTierPolicy().check_triage(TriagePolicy(human_share=0.42))  # starts at the nearest, 0.3
