"""crossjudge: the shipped MiniLM cross-encoder deltas (real model, a few small inputs).

Checks decisions on clear cases, determinism (and batched == one-by-one), the empty and
reference-less short cuts, that the shipped files are data only (safetensors + JSON, a pickle
in their place is refused without running it), and that the deltas refuse a different base.
"""

from __future__ import annotations

import json
import pickle
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.metrics.base import get_metric, metric_ids
from qaeval_core.metrics.crossjudge import (
    DELTA_FILE,
    META_FILE,
    CrossJudge,
    default_weights,
    sha256_file,
)
from qaeval_core.models.loading import resolve_model_path
from qaeval_core.schema import Item

pytestmark = pytest.mark.slow

CLEAR = [
    # (question, references, candidate, correct?)
    ("What is the capital of France?", ["Paris"], "Paris", True),
    ("What is the capital of France?", ["Paris"], "London", False),
    ("Who wrote Hamlet?", ["William Shakespeare"], "Shakespeare", True),
    ("Who wrote Hamlet?", ["William Shakespeare"], "Charles Dickens", False),
    ("In which year did World War II end?", ["1945"], "1939", False),
]


def _items(rows=CLEAR) -> list[Item]:
    return [Item(question=q, references=tuple(r), candidate=c) for q, r, c, _ in rows]


@pytest.fixture(scope="module")
def metric() -> CrossJudge:
    return get_metric("crossjudge", device="cpu")


def test_registered_and_described() -> None:
    assert "crossjudge" in metric_ids()
    m = get_metric("crossjudge")
    assert m.kind == "learned" and m.needs_models and m.threshold == 0.5
    # runtime parameters do not change the config hash; the threshold does
    assert m.config_hash() == CrossJudge(device="cpu", batch_size=8).config_hash()
    assert m.config_hash() != CrossJudge(threshold=0.6).config_hash()


def test_clear_cases(metric: CrossJudge) -> None:
    res = metric.score_batch(_items())
    assert np.all((res.scores >= 0) & (res.scores <= 1))
    assert res.decisions.tolist() == [ok for *_, ok in CLEAR]
    assert res.details[0]["best_reference"] == "Paris"
    # a sentence answer sits nearer the threshold (0.52 with the shipped weights): only its
    # order against a wrong year is checked
    q, ref = "In which year did World War II end?", ("1945",)
    pair = metric.score_batch(
        [Item(question=q, references=ref, candidate=c) for c in ("It ended in 1945.", "1939")]
    )
    assert pair.scores[0] > pair.scores[1] + 0.3


def test_deterministic_and_batch_independent(metric: CrossJudge) -> None:
    items = _items()
    a = metric.score_batch(items).scores
    b = metric.score_batch(items).scores
    assert np.array_equal(a, b)
    one_by_one = np.array([metric.score_batch([it]).scores[0] for it in items])
    np.testing.assert_allclose(a, one_by_one, atol=1e-5)
    small = CrossJudge(device="cpu", batch_size=2).score_batch(items).scores
    np.testing.assert_allclose(a, small, atol=1e-5)


def test_max_over_references(metric: CrossJudge) -> None:
    q = "What is the capital of France?"
    both = metric.score_batch([Item(question=q, references=("Lyon", "Paris"), candidate="Paris")])
    alone = metric.score_batch([Item(question=q, references=("Paris",), candidate="Paris")])
    assert both.scores[0] == pytest.approx(alone.scores[0], abs=1e-6)
    assert both.details[0]["best_reference"] == "Paris"


def test_empty_candidate_and_no_reference(metric: CrossJudge) -> None:
    items = [
        Item(question="Who wrote Hamlet?", references=("Shakespeare",), candidate=""),
        Item(question="Who wrote Hamlet?", references=("Shakespeare",), candidate="   "),
        Item(question="Who wrote Hamlet?", references=(), candidate="Shakespeare"),
    ]
    res = metric.score_batch(items)
    assert res.scores.tolist() == [0.0, 0.0, 0.0]
    assert not res.decisions.any()
    assert res.details[0]["reason"] == "empty candidate"
    assert res.details[2]["reason"] == "no reference"
    assert len(metric.score_batch([])) == 0


def test_long_candidate_keeps_its_start(metric: CrossJudge) -> None:
    long = "Paris. " + "It is a large city with many museums and a long history. " * 40
    res = metric.score_batch(
        [Item(question="What is the capital of France?", references=("Paris",), candidate=long)]
    )
    assert res.details[0]["truncated"] is True
    assert 0.0 <= res.scores[0] <= 1.0


def test_shipped_files_are_data_only() -> None:
    folder = default_weights()
    assert sorted(p.name for p in folder.iterdir() if p.name != "__pycache__") == [
        DELTA_FILE,
        META_FILE,
    ]
    raw = (folder / DELTA_FILE).read_bytes()
    assert len(raw) <= 10 * 2**20
    (n,) = struct.unpack("<Q", raw[:8])  # safetensors: 8-byte header length, JSON header
    header = json.loads(raw[8 : 8 + n])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16"}
    meta = json.loads((folder / META_FILE).read_text("utf-8"))
    base = Path(resolve_model_path("minilm")) / "model.safetensors"
    assert meta["base_sha256"] == sha256_file(base)
    assert {"seed", "data", "lr", "epochs", "batch_size"} <= set(meta["training"])


class _Boom:
    """Unpickling this would create a file: proof that the loader never unpickles."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_pickle_in_place_of_weights_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "weights"
    shutil.copytree(default_weights(), folder)
    marker = tmp_path / "executed"
    (folder / DELTA_FILE).write_bytes(pickle.dumps(_Boom(str(marker))))
    with pytest.raises(ConfigError, match="cannot read"):
        CrossJudge(weights=str(folder), device="cpu").model()
    assert not marker.exists()


def test_refuses_another_base_and_bad_meta(tmp_path: Path) -> None:
    folder = tmp_path / "weights"
    shutil.copytree(default_weights(), folder)
    meta = json.loads((folder / META_FILE).read_text("utf-8"))
    meta["base_sha256"] = "0" * 64
    (folder / META_FILE).write_text(json.dumps(meta), "utf-8")
    with pytest.raises(ModelLoadError, match="SHA-256"):
        CrossJudge(weights=str(folder), device="cpu").model()
    (folder / META_FILE).write_text(json.dumps({"format": "something else"}), "utf-8")
    with pytest.raises(ConfigError, match="not a 'qaeval-crossjudge'"):
        CrossJudge(weights=str(folder), device="cpu").model()


def test_encoding_caps_question_and_reference_and_keeps_candidate_start() -> None:
    from transformers import AutoTokenizer

    from qaeval_core.metrics.crossjudge import encode_triples

    tok = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    (ids,) = encode_triples(
        tok,
        ["why " * 100],
        ["paris " * 100],
        ["london is the answer " + "filler " * 600],
        max_length=64,
        max_question=10,
        max_reference=8,
    )
    assert len(ids) == 64 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    seps = [k for k, t in enumerate(ids) if t == tok.sep_token_id]
    assert seps[:2] == [11, 20]  # 10 question tokens, then 8 reference tokens
    assert tok.decode(ids[21:25]) == "london is the answer"
