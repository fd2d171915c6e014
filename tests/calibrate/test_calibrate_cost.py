"""Cost-aware calibration: measured input costs, the cost cache, the cheapest set within a
tolerance, and a judge restricted by cost that round-trips through its config (issue 15). No test
asserts a speed. Every test keeps the cost cache in its own folder, never the user's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _calibration_data import fake_cost_measuring, write_labelled_dataset

from qaeval_core.calibrate import cost as cost_module
from qaeval_core.calibrate import fit_judge
from qaeval_core.calibrate.cost import CostTable, InputCost, input_family, measure_costs
from qaeval_core.calibrate.inputs import metric_specs
from qaeval_core.calibrate.options import CostPolicy, CrossValidation, InputRule
from qaeval_core.calibrate.select import select_inputs
from qaeval_core.cli.main import main
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge import FeatureSpec, Judge, config_checksum
from qaeval_core.judge.combiners import StackerClassifier
from qaeval_core.schema import Item

#: Inputs of three families: lexical (em, f1, recall), ngram (rouge1, bleu), shape (brevity).
COLUMNS = ["em", "f1", "recall", "rouge1", "bleu", "brevity"]


@pytest.fixture(autouse=True)
def _own_cost_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "qaeval-cache" / cost_module.COST_CACHE_FILE
    path.parent.mkdir()
    monkeypatch.setattr(cost_module, "cost_cache_path", lambda: path)
    return path


def _costs(ngram: float = 40.0) -> CostTable:
    per = {"em": 0.01, "f1": 0.02, "recall": 0.02, "rouge1": ngram / 2, "bleu": ngram / 2}
    per["brevity"] = 0.01
    specs = dict(metric_specs(COLUMNS))
    return CostTable(
        tuple(InputCost(c, input_family(specs[c]), per[c], 0.5) for c in COLUMNS),
        rows=300,
        machine={"cpus": 2},
        method="by hand, for the test",
    )


def _data(n: int = 210, seed: int = 0, ngram_signal: float = 0.0):
    """Labels driven by a recall-like score; rouge1 adds ``ngram_signal`` of independent
    information, the rest is noise. Three rows per question."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    lexical = np.clip(y * 0.6 + rng.normal(0.2, 0.25, n), 0, 1)
    extra = rng.random(n) < ngram_signal  # rows only rouge1 gets right
    lexical[extra] = rng.random(int(extra.sum()))
    rouge = np.where(extra, y.astype(float), rng.random(n))
    X = pd.DataFrame(
        {
            "em": (lexical > 0.9).astype(float),
            "f1": np.clip(lexical + rng.normal(0, 0.05, n), 0, 1),
            "recall": lexical,
            "rouge1": rouge,
            "bleu": rng.random(n),
            "brevity": rng.random(n),
        }
    )
    groups = np.repeat(np.arange(n // 3 + 1), 3)[:n]
    return X, y, groups


def _features() -> list[FeatureSpec]:
    return [FeatureSpec.from_metric(m, c) for c, m in metric_specs(COLUMNS)]


def test_a_judge_restricted_by_cost_round_trips_through_its_config(tmp_path: Path) -> None:
    X, y, groups = _data()
    judge, report = fit_judge(
        X, y, _features(), groups=groups, costs=_costs(), cv=CrossValidation(n_boot=50)
    )
    assert report.inputs is not None
    assert "ngram" not in report.inputs.families  # costly and uninformative: dropped
    assert not {"rouge1", "bleu"} & set(judge.columns)
    assert judge.cost["inputs_rule"] == "cheap"
    assert judge.cost["judge_s_per_1000"] < 1.0
    assert {c["column"] for c in judge.cost["inputs"]} == set(COLUMNS)
    chosen = [s for s in judge.cost["selection"]["evaluated"] if s["chosen"]]
    assert len(chosen) == 1 and chosen[0]["frontier"]

    path = judge.save(tmp_path / "judge.json")
    loaded = Judge.from_config(path)
    assert loaded.columns == judge.columns
    assert loaded.cost == json.loads(path.read_text())["cost"] == judge.to_config()["cost"]
    assert loaded.to_config() == judge.to_config()
    pd.testing.assert_frame_equal(
        loaded.judge_scores(X[loaded.columns]), judge.judge_scores(X[judge.columns])
    )


def test_every_input_with_inputs_all_and_no_cost_record_without_costs() -> None:
    X, y, groups = _data()
    judge, report = fit_judge(
        X,
        y,
        _features(),
        groups=groups,
        costs=_costs(),
        cost_policy=CostPolicy(inputs="all"),
        cv=CrossValidation(n_boot=50),
    )
    assert report.inputs is None
    assert judge.cost["inputs_rule"] == "all" and judge.cost["selection"] is None
    assert judge.cost["judge_s_per_1000"] == pytest.approx(_costs().cost_of(judge.columns))
    plain, plain_report = fit_judge(X, y, _features(), groups=groups, cv=CrossValidation(n_boot=50))
    # Without a cost rule the fit is the one before issue 15: same candidates, same model.
    assert plain_report.candidates.equals(report.candidates)
    assert plain.to_config()["model"] == judge.to_config()["model"]
    assert plain.cost is None and "cost" not in plain.to_config()  # older files unchanged


def test_a_costly_family_that_adds_accuracy_is_kept_unless_the_cap_forbids_it() -> None:
    X, y, groups = _data(ngram_signal=0.25)
    fams = {"lexical": ["em", "f1", "recall"], "ngram": ["rouge1", "bleu"], "shape": ["brevity"]}
    costs = {"lexical": 0.05, "ngram": 40.0, "shape": 0.01}
    kept = select_inputs(X, y, fams, costs, StackerClassifier, groups=groups)
    assert "ngram" in kept.families
    assert kept.cv_accuracy >= kept.best_cv_accuracy - kept.max_accuracy_loss
    capped = select_inputs(
        X, y, fams, costs, StackerClassifier, groups=groups, rule=InputRule(max_cost=1.0)
    )
    assert "ngram" not in capped.families and capped.cost <= 1.0
    assert capped.cv_accuracy < kept.cv_accuracy
    loose = select_inputs(
        X, y, fams, costs, StackerClassifier, groups=groups, rule=InputRule(max_accuracy_loss=0.5)
    )
    assert loose.cost == min(costs.values())  # everything is within 50 points: the cheapest
    with pytest.raises(InputError, match="below the cheapest input family"):
        select_inputs(
            X, y, fams, costs, StackerClassifier, groups=groups, rule=InputRule(max_cost=0.001)
        )


def test_tuning_the_penalty_once_per_fold_matches_nested_cv_on_all_inputs() -> None:
    from threadpoolctl import threadpool_limits

    from qaeval_core.calibrate.protocol import assign_folds, cross_val_predict_proba
    from qaeval_core.calibrate.select import _oof_predictor

    X, y, groups = _data(n=150)
    g = np.asarray(groups, dtype=object)
    folds = assign_folds(len(y), 5, groups=g, y=y, seed=0)
    with threadpool_limits(limits=1, user_api="blas"):  # as in fit_judge: tiny fits
        predict = _oof_predictor(StackerClassifier, X, y, folds, g, tune_once=True)
        nested = cross_val_predict_proba(StackerClassifier(), X, y, folds, groups=g)
        full = predict(list(X.columns))
        subset = predict(["em", "f1", "recall"])  # a subset: same folds, the folds' penalties
    np.testing.assert_allclose(full, nested, rtol=1e-9, atol=1e-12)
    assert subset.shape == (150,) and np.isfinite(subset).all()


def test_repeated_folds_and_a_confidence_keep_an_informative_costly_family() -> None:
    X, y, groups = _data(ngram_signal=0.25)
    fams = {"lexical": ["em", "f1", "recall"], "ngram": ["rouge1", "bleu"], "shape": ["brevity"]}
    costs = {"lexical": 0.05, "ngram": 40.0, "shape": 0.01}
    strict = select_inputs(
        X,
        y,
        fams,
        costs,
        StackerClassifier,
        groups=groups,
        rule=InputRule(repeats=3, confidence=0.95),
    )
    assert "ngram" in strict.families  # the informative costly family stays
    record = strict.to_dict()
    assert record["repeats"] == 3 and record["confidence"] == 0.95
    assert "3 fold assignment(s)" in record["rule"]
    with pytest.raises(InputError, match="repeats must be >= 1"):
        select_inputs(
            X, y, fams, costs, StackerClassifier, groups=groups, rule=InputRule(repeats=0)
        )


def test_max_cost_needs_measured_costs() -> None:
    X, y, groups = _data()
    with pytest.raises(InputError, match="needs measured input costs"):
        fit_judge(
            X,
            y,
            _features(),
            groups=groups,
            cost_policy=CostPolicy(max_cost=5.0),
            cv=CrossValidation(n_boot=50),
        )
    with pytest.raises(InputError, match="inputs must be one of"):
        fit_judge(
            X,
            y,
            _features(),
            groups=groups,
            costs=_costs(),
            cost_policy=CostPolicy(inputs="some"),
            cv=CrossValidation(n_boot=50),
        )


def test_a_malformed_cost_record_is_refused_even_with_a_valid_checksum() -> None:
    X, y, groups = _data()
    judge, _ = fit_judge(
        X, y, _features(), groups=groups, costs=_costs(), cv=CrossValidation(n_boot=50)
    )
    config = judge.to_config()
    config["cost"]["inputs"][0]["s_per_1000"] = -1.0
    with pytest.raises(ConfigError, match="fails its checksum"):
        Judge.from_config(config)
    config["checksum"] = config_checksum(config)
    with pytest.raises(ConfigError, match=r"cost.inputs\[0\].s_per_1000 must be a number >= 0"):
        Judge.from_config(config)


def _items(n: int = 40, dataset: str | None = None) -> list[Item]:
    return [
        Item(f"question {i}?", (f"answer {i % 7}",), f"it is answer {i % 5}", dataset=dataset)
        for i in range(n)
    ]


def test_measure_costs_times_inputs_in_fresh_processes_then_reads_them_from_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launched: list[list[str]] = []
    real = cost_module._measure_isolated

    def counting(specs, items, timeout):  # type: ignore[no-untyped-def]
        launched.append([column for column, _ in specs])
        return real(specs, items, timeout)

    monkeypatch.setattr(cost_module, "_measure_isolated", counting)
    specs = metric_specs(["em", "f1", "brevity"])
    table = measure_costs(specs, _items(), sample=25)
    assert launched == [["em", "f1"], ["brevity"]]  # one fresh process per family
    assert table.columns == ["em", "f1", "brevity"]
    assert [c.family for c in table.inputs] == ["lexical", "lexical", "shape"]
    assert all(c.s_per_1000 >= 0 and c.load_s >= 0 for c in table.inputs)
    assert table.rows == 25
    assert table.machine["cpus"] >= 1 and "platform" in table.machine
    assert "fresh process" in table.method and "in-process" not in table.method
    assert table.source == "measured" and table.cached == {}
    assert CostTable.from_dict(json.loads(json.dumps(table.to_dict()))) == table

    again = measure_costs(specs, _items(), sample=25)
    assert len(launched) == 2  # nothing spawned: both families came from the cache
    assert again.source == "cache" and set(again.cached) == {"lexical", "shape"}
    assert {v["measured_at"] for v in again.cached.values()} == {table.measured_at}
    assert again.measured_at == table.measured_at
    assert [c.s_per_1000 for c in again.inputs] == [c.s_per_1000 for c in table.inputs]
    assert CostTable.from_dict(json.loads(json.dumps(again.to_dict()))) == again


def test_the_cache_key_follows_metric_configs_datasets_and_remeasure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _own_cost_cache: Path
) -> None:
    launches = fake_cost_measuring(monkeypatch, _own_cost_cache.parent)
    specs = metric_specs(["em", "f1", "brevity"])
    measure_costs(specs, _items(dataset="nq"))
    assert launches == [["em", "f1"], ["brevity"]]
    measure_costs(specs, _items(dataset="nq"), remeasure=True)
    assert len(launches) == 4  # measured again ...
    assert measure_costs(specs, _items(dataset="nq")).source == "cache"  # ... and cached again
    assert len(launches) == 4
    # A changed parameter is another metric configuration: only its family is measured again.
    from qaeval_core.metrics.base import get_metric

    strict = [(c, get_metric("f1", threshold=0.9) if c == "f1" else m) for c, m in specs]
    mixed = measure_costs(strict, _items(dataset="nq"))
    assert launches[4:] == [["em", "f1"]]
    assert mixed.source == "cache and measured" and set(mixed.cached) == {"shape"}
    # Costs follow the rows' text: another dataset is measured on its own.
    measure_costs(specs, _items(dataset="mmlu"))
    assert len(launches) == 7
    # In-process measurements are biased by this process's warm caches: never cached.
    measure_costs(specs, _items(dataset="other"), isolate=False)
    assert len(launches) == 7
    assert measure_costs(specs, _items(dataset="other")).source == "measured"
    # A damaged cache file is only a cache: measured again and rewritten.
    _own_cost_cache.write_text("{not json", "utf-8")
    assert measure_costs(specs, _items(dataset="nq")).source == "measured"
    assert json.loads(_own_cost_cache.read_text("utf-8"))["format"] == cost_module._CACHE_FORMAT


def test_calibrate_cli_measures_costs_by_default_caches_them_and_inputs_all_restores_the_old_judge(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, _own_cost_cache: Path
) -> None:
    launches = fake_cost_measuring(monkeypatch, _own_cost_cache.parent)
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    base = ["calibrate", "-d", "toy", "-m", "em,f1,recall,brevity", "--db", db]
    base += ["--candidates", "threshold,fusion", "--folds", "3"]  # costs are what is tested
    assert main([*base, "-o", str(tmp_path / "cheap.json")]) == 0
    out = capsys.readouterr().out
    assert "Input cost, seconds per 1,000 rows" in out and "chosen" in out
    flat = " ".join(out.split())  # the console wraps long lines
    assert "Predicted judge speed here" in flat and "PEDANTS-class lexical inputs" in flat
    assert launches == [["em", "f1", "recall"], ["brevity"]]
    cheap = Judge.from_config(tmp_path / "cheap.json")
    assert cheap.cost["inputs_rule"] == "cheap"
    assert cheap.cost["selection"]["families"]
    assert cheap.cost["source"] == "measured" and cheap.cost["cached"] == {}

    # A second calibration on this machine spawns no measuring process and says so.
    assert main([*base, "-o", str(tmp_path / "again.json")]) == 0
    assert len(launches) == 2
    printed = capsys.readouterr()
    assert "cached families measured" in " ".join(printed.out.split())  # the table's title
    assert "lexical: cost from the cache (measured" in printed.err
    again = Judge.from_config(tmp_path / "again.json")
    assert again.cost["source"] == "cache"
    assert {v["measured_at"] for v in again.cost["cached"].values()} == {cheap.cost["measured_at"]}
    assert again.cost["inputs"] == cheap.cost["inputs"]
    assert again.to_config()["model"] == cheap.to_config()["model"]

    assert main([*base, "--remeasure-costs", "-o", str(tmp_path / "fresh.json")]) == 0
    assert len(launches) == 4
    assert Judge.from_config(tmp_path / "fresh.json").cost["source"] == "measured"

    assert main([*base, "--inputs", "all", "-o", str(tmp_path / "all.json")]) == 0
    assert len(launches) == 4
    assert Judge.from_config(tmp_path / "all.json").cost is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--inputs", "some"], "--inputs must be cheap or all"),
        (["--max-cost", "0"], "--max-cost must be > 0"),
        (["--cost-tolerance", "-1"], "--cost-tolerance is in accuracy points"),
    ],
)
def test_bad_cost_flags_fail_in_one_line_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    from qaeval_core import analysis, workflows

    db = str(tmp_path / "store.sqlite")
    data = write_labelled_dataset(tmp_path / "d.jsonl", n=40)
    assert main(["import", str(data), "-d", "t", "--db", db]) == 0

    def no_work(*_args, **_kwargs):
        raise AssertionError("labels or scores were read before the flags were checked")

    monkeypatch.setattr(workflows, "calibrate_dataset", no_work)
    monkeypatch.setattr(analysis, "load_frames", no_work)
    capsys.readouterr()
    code = main(["calibrate", "-d", "t", "-o", str(tmp_path / "j.json"), *flags, "--db", db])
    err = capsys.readouterr().err
    assert code != 0 and message in err
    assert len(err.strip().splitlines()) == 1
