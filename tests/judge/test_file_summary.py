"""The typed reader of the judge file (:mod:`qaeval_core.judge.file_summary`): what the pages
and ``qaeval check`` show, read from what :meth:`Judge.to_config` writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from qaeval_core.calibrate import fit_judge
from qaeval_core.calibrate.options import CrossValidation, TriagePolicy
from qaeval_core.judge import FeatureSpec
from qaeval_core.judge.file_summary import (
    CostSummary,
    GuaranteeSummary,
    LLMTierSummary,
    cost_summary,
    judge_summary,
)
from qaeval_core.metrics.base import get_metric


@pytest.fixture(scope="module")
def config() -> dict:
    rng = np.random.default_rng(0)
    n = 200
    X = pd.DataFrame({"f1": rng.random(n), "recall": rng.random(n)})
    y = rng.random(n) < 1 / (1 + np.exp(-6 * (X["f1"] - 0.45)))
    features = [FeatureSpec.from_metric(get_metric(m)) for m in ("f1", "recall")]
    judge, _ = fit_judge(
        X,
        y,
        features,
        groups=np.repeat(np.arange(n // 2), 2),
        cv=CrossValidation(n_boot=50),
        triage=TriagePolicy(human_share=0.2),
    )
    judge.name = "toy"
    return judge.to_config()


def test_a_fitted_judge_reads_back(config: dict) -> None:
    s = judge_summary(config)
    quality = config["quality"]
    assert s.name == "toy" and s.combiner == quality["winner"]
    assert s.n_labels == config["fitted_on"]["n_labels"] == 200
    assert s.cv_accuracy == pytest.approx(quality["cv_accuracy"])
    assert s.cv_accuracy_ci == pytest.approx(tuple(quality["cv_accuracy_ci"]))
    assert s.band_share == pytest.approx(config["triage"]["share"])
    assert s.guarantee is None and not s.guarantee_unreadable
    assert s.llm_tier is None and s.cost is None


def test_the_optional_parts_read_typed(config: dict) -> None:
    cfg = dict(config)
    cfg["guarantee"] = {"target": 0.95, "risk": 0.1, "n_labels": 300, "share": 0.2}
    cfg["cascade"] = {
        "feature": {"metric": {"params": {"model": "qwen"}}},
        "llm_share": 0.25,
        "llm_seconds_per_item": 0.4,
    }
    cfg["cost"] = {
        "judge_s_per_1000": 1.5,
        "judge_load_s": 2.0,
        "inputs_rule": "cheap",
        "rows": 300,
        "method": "timed",
        "machine": {"cpu": "x86", "cpus": 8},
        "measured_at": "today",
        "cached": {"lexical": {}},
        "source": "cache",
        "inputs": [{"column": "f1", "family": "lexical", "s_per_1000": 0.5, "load_s": 0.0}],
        "selection": {
            "evaluated": [
                {
                    "families": ["lexical"],
                    "cost": 0.5,
                    "cv_accuracy": 0.8,
                    "frontier": True,
                    "chosen": True,
                }
            ]
        },
    }
    s = judge_summary(cfg)
    assert s.guarantee == GuaranteeSummary(0.95, 0.1, 300)
    assert s.llm_tier == LLMTierSummary("qwen", 0.25, 0.4)
    assert isinstance(s.cost, CostSummary) and s.cost.cpus == 8
    assert s.cost.cached_families == ("lexical",) and s.cost.inputs[0].family == "lexical"
    assert s.cost.evaluated[0].chosen and s.cost.evaluated[0].families == ("lexical",)


def test_missing_or_damaged_parts_never_raise() -> None:
    s = judge_summary(
        {
            "quality": "nonsense",
            "triage": {"share": "x"},
            "cascade": {},
            "guarantee": {"target": "high"},
        }
    )
    assert s.combiner is None and s.cv_accuracy_ci is None and s.band_share is None
    assert s.guarantee is None and s.guarantee_unreadable
    assert s.llm_tier == LLMTierSummary(None, 0.0, 0.0)
    assert judge_summary({}).band_share is None and cost_summary({}) is None
    assert cost_summary({"rows": 3}).judge_s_per_1000 is None  # type: ignore[union-attr]
