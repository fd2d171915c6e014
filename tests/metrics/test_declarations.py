"""A metric declares itself (issue 34, item 5): ``family``, ``calibrate_by_default``,
``feature_only`` and ``needs_models`` are class attributes, and the calibration's defaults, the
cost families and ``qaeval metrics`` are read from them. The values below are those of the
hand-written lists they replaced: a judge calibrated on the defaults keeps its columns (in
order), its config hashes and its cost-cache keys."""

from __future__ import annotations

import pytest

from qaeval_core.calibrate.cost import input_family
from qaeval_core.calibrate.inputs import DEFAULT_METRICS, FEATURE_ONLY, metric_specs
from qaeval_core.metrics.base import (
    _REGISTRY,
    BY_MODEL,
    Metric,
    MetricResult,
    default_inputs,
    get_metric,
    metric_class,
    metric_ids,
)

#: DEFAULT_METRICS as it was written by hand before the metrics declared it, with each
#: column's config hash at its default parameters (what judge files and stored scores key on).
BEFORE = (
    ("em", "em", {}, "61b90b6b48664fdc"),
    ("contains", "contains", {}, "3ca547acad3e0f78"),
    ("f1", "f1", {}, "abeb6e3693843f96"),
    ("precision", "precision", {}, "3115c10ea3a6c2d7"),
    ("recall", "recall", {}, "e9fd55f185e914db"),
    ("word_match", "word_match", {}, "f3d513e986bd2184"),
    ("rouge1", "rouge1", {}, "d9a570e78da5e809"),
    ("rouge2", "rouge2", {}, "f5288fc048ceaaf8"),
    ("rougeL", "rougeL", {}, "7ef0f03bdabf61a4"),
    ("bleu", "bleu", {}, "832dc59dda72732c"),
    ("meteor", "meteor", {}, "51ec6133e3bed7f9"),
    ("vqa_accuracy", "vqa_accuracy", {}, "bdee318ee9743047"),
    ("soft_vqa_accuracy", "soft_vqa_accuracy", {}, "e97bc198fc4c38f9"),
    ("panda", "panda", {}, "0210e4d531dc822d"),
    ("embed_cosine", "embed_cosine", {}, "c08c7954cd80478c"),
    ("bertscore", "bertscore", {}, "86a6b707259c06cd"),
    ("smile", "smile", {}, "603c495d4054ce2f"),
    ("smile_paper", "smile_paper", {}, "317683befe92fdc7"),
    ("avert", "avert", {}, "36f546d3585341b2"),
    ("extract_f1", "extract", {"metric": "f1"}, "eacf6c475d8b98a1"),
    ("static_cosine", "static_cosine", {}, "54072bd9c5342eaa"),
    ("static_keyword", "static_keyword", {}, "636724f534cf9e50"),
    ("number_match", "number_match", {}, "14494082c66c8b0a"),
    ("number_agree", "number_agree", {}, "b17da8be738388bc"),
    ("brevity", "brevity", {}, "7ad4a5d5bd49848b"),
    ("no_hedge", "no_hedge", {}, "987d7a062919495c"),  # version 2: not a refusal (issue 34)
    ("number_closeness", "number_closeness", {}, "86d40079a7f22394"),
    ("number_closeness_scaled", "number_closeness_scaled", {}, "a59d6f3be1d0614d"),
)
FEATURE_ONLY_BEFORE = (
    "number_match",
    "number_agree",
    "brevity",
    "no_hedge",
    "number_closeness",
    "number_closeness_scaled",
)
#: The cost family of every built-in metric at its default parameters, as it was when it was
#: derived from the module's file name (cost-cache keys contain it).
FAMILIES_BEFORE = {
    "avert": "encoder:minilm",
    "crossjudge": "crossjudge",
    "embed_cosine": "encoder:minilm",
    "bertscore": "encoder:minilm",
    "extract": "encoder:minilm",
    "lave": "encoder:qwen-coder-1.5b",
    "em": "lexical",
    "contains": "lexical",
    "precision": "lexical",
    "recall": "lexical",
    "f1": "lexical",
    "word_match": "lexical",
    "llm_judge": "encoder:qwen-coder-1.5b",
    "rouge1": "ngram",
    "rouge2": "ngram",
    "rougeL": "ngram",
    "bleu": "ngram",
    "meteor": "ngram",
    "panda": "panda",
    "number_match": "shape",
    "number_agree": "shape",
    "brevity": "shape",
    "no_hedge": "shape",
    "number_closeness": "shape",
    "number_closeness_scaled": "shape",
    "smile": "encoder:minilm",
    "smile_paper": "encoder:minilm",
    "static_cosine": "static",
    "static_keyword": "static",
    "vqa_accuracy": "vqa",
    "soft_vqa_accuracy": "vqa",
}


def _builtin_ids() -> list[str]:
    return [m for m in metric_ids() if _REGISTRY[m].__module__.startswith("qaeval_core.metrics.")]


def test_the_default_inputs_are_unchanged_columns_order_and_hashes() -> None:
    assert [(c, m, p) for c, m, p, _ in BEFORE] == list(DEFAULT_METRICS)
    assert [(c, m.config_hash()) for c, m in metric_specs()] == [(c, h) for c, _, _, h in BEFORE]
    assert FEATURE_ONLY == FEATURE_ONLY_BEFORE


def test_every_builtin_metric_declares_a_family_and_keeps_it() -> None:
    assert set(_builtin_ids()) == set(FAMILIES_BEFORE)
    for mid in _builtin_ids():
        cls = metric_class(mid)
        assert cls.family, f"{mid} declares no family"
        assert input_family(get_metric(mid)) == FAMILIES_BEFORE[mid], mid
        # A family shared by the model: only metrics that load one declare it.
        assert cls.family != BY_MODEL or cls.needs_models, mid


def test_the_family_follows_the_declaration_not_the_file_name() -> None:
    """Two classes in one module with different declared families get different families,
    and a metric that declares none is a family of its own (its id)."""

    class _Declared(Metric):
        id = "_declared_family"
        family = "my_family"
        threshold = 0.5

        def score_batch(self, items):  # pragma: no cover - never scored here
            return MetricResult([], [])

    class _Undeclared(_Declared):
        id = "_undeclared_family"
        family = ""

    class _ByModel(_Declared):
        id = "_by_model_family"
        family = BY_MODEL
        needs_models = True

        def __init__(self, *, model: str = "tiny") -> None:
            self.model = model

    assert input_family(_Declared()) == "my_family"
    assert input_family(_Undeclared()) == "_undeclared_family"
    assert input_family(_ByModel()) == "encoder:tiny"
    assert input_family(_ByModel(model="")) == "_by_model_family"


def test_a_metric_that_declares_calibrate_by_default_joins_the_defaults(monkeypatch) -> None:
    """The defaults are read from the classes: a newly registered metric that declares
    ``calibrate_by_default`` (and ``calibrated_as``) is one more default input, last."""

    class _Extra(Metric):
        id = "extra_default"
        family = "extra"
        calibrate_by_default = True
        calibrated_as = ("extra_strict", {"threshold": 0.9})

        def __init__(self, *, threshold: float = 0.5) -> None:
            self.threshold = threshold

        def score_batch(self, items):  # pragma: no cover - never scored here
            return MetricResult([], [])

    monkeypatch.setitem(_REGISTRY, "extra_default", _Extra)
    got = default_inputs()
    assert got[:-1] == DEFAULT_METRICS
    assert got[-1] == ("extra_strict", "extra_default", {"threshold": 0.9})
    monkeypatch.setitem(_REGISTRY, "_private_default", _Extra)
    assert default_inputs()[-1][1] == "extra_default"  # private ids never join


@pytest.mark.parametrize("mid", ["lave", "llm_judge", "crossjudge"])
def test_llm_and_learned_judges_are_not_calibrated_by_default(mid: str) -> None:
    cls = metric_class(mid)
    assert cls.needs_models and not cls.calibrate_by_default and not cls.feature_only
