"""The LLM judge (``llm_judge``): prompts, reading probabilities, the packaged model's hash
check, the endpoint backend against a loopback fake, the verdict cache, and the real packaged
Qwen2.5-Coder-1.5B giving the same probability in any batch and order."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.errors import ModelLoadError
from qaeval_core.llm import packaged
from qaeval_core.llm.prompts import (
    MAX_CANDIDATE_CHARS,
    get_prompt,
    probability_from_logprobs,
    probability_from_text,
)
from qaeval_core.llm.verdict_cache import VerdictCache
from qaeval_core.metrics import llm_judge as llm_judge_module
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

ITEMS = [
    Item(
        question="Who wrote Hamlet?", references=("William Shakespeare",), candidate="Shakespeare"
    ),
    Item(question="Who wrote Hamlet?", references=("William Shakespeare",), candidate="Marlowe"),
    Item(question="What is the capital of France?", references=("Paris",), candidate="Lyon"),
    Item(
        question="What is the capital of France?",
        references=("Paris",),
        candidate="The capital of France is Paris, on the Seine.",
    ),
]

HAS_MODEL = all(
    importlib.util.find_spec(m) is not None
    for m in packaged.PACKAGED_LLMS["qwen-coder-1.5b"].modules + ("xllamacpp",)
)
needs_model = pytest.mark.skipif(
    not HAS_MODEL,
    reason="the packaged LLM judge is not installed (pip install 'qaeval[llm]'; "
    "scripts/test.sh installs it)",
)


# -- prompts and reading ----------------------------------------------------------------------
def test_yes_no_probability_sums_case_and_spacing_variants_and_ignores_other_tokens():
    prompt = get_prompt("naqt")
    top = [("Yes", math.log(0.5)), (" yes", math.log(0.1)), ("No", math.log(0.2)), ("The", -1.0)]
    assert probability_from_logprobs(prompt, top) == pytest.approx(0.6 / 0.8)
    assert probability_from_logprobs(prompt, [("The", -0.1), ("Answer", -2.0)]) is None


def test_lave_prompt_reads_the_expected_rating_score():
    prompt = get_prompt("lave")
    top = [("3", math.log(0.5)), ("2", math.log(0.3)), ("1", math.log(0.2))]
    assert probability_from_logprobs(prompt, top) == pytest.approx(0.5 + 0.3 * 0.5)
    assert probability_from_text(prompt, "Rating: 2") == 0.5


def test_a_long_candidate_is_cut_around_its_middle_and_flagged():
    long = "start " + "filler " * 1000 + "final answer Paris"
    messages, cut = get_prompt("naqt").messages(
        Item(question="q", references=("Paris",), candidate=long)
    )
    user = messages[1]["content"]
    assert cut and "start" in user and "final answer Paris" in user
    assert len(user) < MAX_CANDIDATE_CHARS + 300


def test_unknown_prompt_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid: lave, naqt"):
        get_prompt("chatty")


# -- the packaged model's file ----------------------------------------------------------------
def _fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> list[str]:
    names = []
    for i, chunk in enumerate(chunks):
        name = f"fake_llm_part{i}_{tmp_path.name.replace('-', '_')}"
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "part.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(__file__), 'part.bin')\n"
        )
        names.append(name)
    monkeypatch.syspath_prepend(str(tmp_path))
    return names


def test_packaged_model_is_joined_in_order_and_its_hash_checked(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    chunks = [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]
    names = _fake_parts(tmp_path, monkeypatch, chunks)
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    spec = packaged.PackagedGGUF("fake", "fake.gguf", tuple(names), good, sum(map(len, chunks)))
    monkeypatch.setitem(packaged.PACKAGED_LLMS, "fake", spec)
    path = packaged.assemble_packaged("fake")
    assert path.read_bytes() == b"".join(chunks)
    assert packaged.resolve_llm("fake").fingerprint == f"sha256:{good}"

    bad = packaged.PackagedGGUF("bad", "bad.gguf", tuple(names), "0" * 64, spec.size)
    monkeypatch.setitem(packaged.PACKAGED_LLMS, "bad", bad)
    with pytest.raises(ModelLoadError, match="SHA-256 .* not the upstream"):
        packaged.assemble_packaged("bad")
    assert not (tmp_path / "cache" / "models" / "bad.gguf").exists()


def test_missing_model_packages_name_the_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    spec = packaged.PackagedGGUF("gone", "gone.gguf", ("no_such_llm_part_module",), "0" * 64, 1)
    monkeypatch.setitem(packaged.PACKAGED_LLMS, "gone", spec)
    with pytest.raises(ModelLoadError, match=r"qaeval\[llm\]"):
        get_metric("llm_judge", model="gone", cache=False).score_batch(ITEMS[:1])


def test_llama_cpp_runtime_missing_names_the_extra(tmp_path, monkeypatch):
    from qaeval_core.llm import next_token

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ModelLoadError, match=r"qaeval\[llm\]"):
        next_token.LlamaCppBackend(str(gguf), ctx=512).load()


# -- an OpenAI-compatible endpoint on loopback -------------------------------------------------
class _FakeEndpoint(BaseHTTPRequestHandler):
    with_logprobs = True
    seen: list[dict] = []

    def do_POST(self) -> None:  # http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        user = body["messages"][-1]["content"]
        yes = 0.9 if "Shakespeare" in user.split("Candidate answer:")[1] else 0.2
        choice: dict = {"index": 0, "message": {"role": "assistant", "content": "yes"}}
        if self.with_logprobs:
            choice["logprobs"] = {
                "content": [
                    {
                        "token": "yes",
                        "logprob": math.log(yes),
                        "top_logprobs": [
                            {"token": "yes", "logprob": math.log(yes)},
                            {"token": "no", "logprob": math.log(1 - yes)},
                        ],
                    }
                ]
            }
        else:
            choice["message"]["content"] = "Yes." if yes > 0.5 else "No."
        payload = json.dumps({"choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    server = HTTPServer(("127.0.0.1", 0), _FakeEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeEndpoint.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_endpoint_logprobs_give_the_probability_and_the_request_asks_for_them(endpoint):
    _FakeEndpoint.with_logprobs = True
    metric = get_metric("llm_judge", model="judge-model", url=endpoint, cache=False)
    result = metric.score_batch(ITEMS[:2])
    assert result.scores == pytest.approx([0.9, 0.2])
    assert result.decisions.tolist() == [True, False]
    sent = _FakeEndpoint.seen[0]
    assert sent["logprobs"] is True and sent["top_logprobs"] >= 5 and sent["max_tokens"] == 1
    assert sent["temperature"] == 0 and sent["model"] == "judge-model"
    assert sent["messages"][0]["role"] == "system" and "Rules:" in sent["messages"][0]["content"]


def test_endpoint_without_logprobs_is_read_from_its_text(endpoint):
    _FakeEndpoint.with_logprobs = False
    try:
        result = get_metric("llm_judge", model="m", url=endpoint, cache=False).score_batch(
            ITEMS[:2]
        )
    finally:
        _FakeEndpoint.with_logprobs = True
    assert result.scores.tolist() == [1.0, 0.0]


def test_verdicts_are_cached_by_model_prompt_and_item(endpoint, tmp_path, monkeypatch):
    store = VerdictCache(tmp_path / "verdicts.sqlite")
    monkeypatch.setattr(llm_judge_module, "VerdictCache", lambda: store)
    metric = get_metric("llm_judge", model="m", url=endpoint)
    first = metric.score_batch(ITEMS[:2])
    assert len(_FakeEndpoint.seen) == 2
    again = metric.score_batch(ITEMS[:2][::-1])  # hits, in another order: no request
    assert len(_FakeEndpoint.seen) == 2
    assert again.scores[::-1].tolist() == first.scores.tolist()
    get_metric("llm_judge", model="m", url=endpoint, prompt="lave").score_batch(ITEMS[:1])
    assert len(_FakeEndpoint.seen) == 3  # another prompt version is another key
    assert all(d["seconds"] >= 0 for d in first.details)


def test_an_empty_answer_scores_zero_without_a_call(endpoint):
    result = get_metric("llm_judge", model="m", url=endpoint, cache=False).score_batch(
        [Item(question="q", references=("a",), candidate="  ")]
    )
    assert result.scores.tolist() == [0.0] and not _FakeEndpoint.seen


def test_the_config_hash_changes_with_the_prompt_and_the_weights(tmp_path):
    a = get_metric("llm_judge")
    assert a.config_hash() != get_metric("llm_judge", prompt="lave").config_hash()
    one, two = tmp_path / "a.gguf", tmp_path / "b.gguf"
    one.write_bytes(b"GGUF" + b"1" * 100)
    two.write_bytes(b"GGUF" + b"2" * 100)
    h1 = get_metric("llm_judge", model=str(one)).config_hash()
    assert h1 != get_metric("llm_judge", model=str(two)).config_hash()


def test_a_gguf_read_by_transformers_is_cached_under_its_own_key(tmp_path):
    """Dequantised arithmetic on another device gives other bits than llama.cpp's: the runtime
    and device class join the fingerprint, and the default's config hash is unchanged."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"1" * 100)
    auto = get_metric("llm_judge", model=str(gguf))
    cpu = get_metric("llm_judge", model=str(gguf), runtime="transformers", device="cpu")
    cuda = get_metric("llm_judge", model=str(gguf), runtime="transformers", device="cuda:0")
    assert cpu.fingerprint() == auto.fingerprint() + "|transformers@cpu"
    assert cuda.fingerprint().endswith("|transformers@cuda")
    assert len({auto.config_hash(), cpu.config_hash(), cuda.config_hash()}) == 3
    assert "runtime" not in auto.config()["params"]
    assert type(cpu.backend()).__name__ == "TransformersBackend"
    assert type(auto.backend()).__name__ == "LlamaCppBackend"
    with pytest.raises(ValueError, match="runtime"):
        get_metric("llm_judge", runtime="vllm")


# -- the real packaged model ------------------------------------------------------------------
@needs_model
@pytest.mark.slow
def test_the_packaged_model_gives_the_same_probability_in_any_batch_and_order():
    metric = get_metric("llm_judge", cache=False)
    together = metric.score_batch(ITEMS).scores
    reverse = metric.score_batch(ITEMS[::-1]).scores[::-1]
    alone = np.array([metric.score_batch([it]).scores[0] for it in ITEMS[::-1]])[::-1]
    # The same computation for each item (instruction cached once, the item's tokens from the
    # same point): equal to float rounding, whatever came before.
    np.testing.assert_allclose(reverse, together, rtol=0, atol=1e-9)
    np.testing.assert_allclose(alone, together, rtol=0, atol=1e-9)
    # And it knows something: the right answers score above the wrong ones.
    assert together[0] > together[1] and together[3] > together[2]


@needs_model
@pytest.mark.slow
def test_the_packaged_model_s_verdicts_are_cached_and_read_back(tmp_path, monkeypatch):
    store = VerdictCache(tmp_path / "verdicts.sqlite")
    monkeypatch.setattr(llm_judge_module, "VerdictCache", lambda: store)
    metric = get_metric("llm_judge")
    first = metric.score_batch(ITEMS[:2])

    def no_model(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the model was asked again")

    monkeypatch.setattr(type(metric), "backend", no_model)
    again = get_metric("llm_judge").score_batch(ITEMS[:2])
    assert again.scores.tolist() == first.scores.tolist()
    assert all(d["seconds"] > 0 for d in again.details)  # the measured time is kept
