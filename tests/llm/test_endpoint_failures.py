"""The OpenAI-compatible client and the endpoint backend against a misbehaving server: a
deadline per whole response (a hanging or trickling server), a bounded body (an endless one),
one-line errors for every malformed body, and a dead endpoint given up after a few failures
in a row (issue 31)."""

from __future__ import annotations

import pytest
from _fake_llm import MALFORMED, fake_llm

from qaeval_core.llm.chat_clients import LLMEndpointError, OpenAIChatClient
from qaeval_core.llm.next_token import EndpointBackend

ASK = [{"role": "user", "content": "Question: q\nCandidate answer: Shakespeare"}]


def _client(url: str, **kw: object) -> OpenAIChatClient:
    settings = {"timeout": 0.5, "max_retries": 2, "backoff": 0.01, **kw}
    return OpenAIChatClient(url, "m", **settings)  # type: ignore[arg-type]


def test_a_hanging_server_fails_at_the_deadline_without_retries():
    with fake_llm(mode="hang") as server:
        with pytest.raises(LLMEndpointError, match=r"did not finish answering within 0.5 s"):
            _client(server.url).request(ASK, max_tokens=1)
        assert server.requests == 1  # a try past its deadline is not retried


def test_a_trickling_server_is_cut_off_at_the_deadline_for_the_whole_response():
    """One byte every 50 ms never lets a single read wait 0.5 s: only a deadline over the whole
    response stops it (the server would finish a valid answer after 8 s otherwise)."""
    with (
        fake_llm(mode="trickle") as server,
        pytest.raises(LLMEndpointError, match=r"within 0.5 s \(the deadline for a whole"),
    ):
        _client(server.url).request(ASK, max_tokens=1)


def test_an_endless_body_is_cut_off_at_the_size_limit():
    with fake_llm(mode="endless") as server:
        client = _client(server.url, timeout=30.0, max_response_bytes=1 << 20)
        with pytest.raises(LLMEndpointError, match=r"more than 1,048,576 bytes"):
            client.request(ASK, max_tokens=1)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_every_malformed_body_is_one_line_of_no_verdict(name):
    with fake_llm(mode="body", body=MALFORMED[name]) as server:
        backend = EndpointBackend(server.url, "m", timeout=5.0, max_retries=0, concurrency=1)
        (out,) = backend.next_tokens([ASK])
    assert out.top is None and out.error
    assert "\n" not in out.error and len(out.error) < 400
    assert "Traceback" not in out.error


def test_a_dead_endpoint_is_given_up_after_a_few_failures_in_a_row():
    with fake_llm(mode="dead") as server:
        backend = EndpointBackend(
            server.url, "m", timeout=5.0, max_retries=1, backoff=0.01, concurrency=1
        )
        out = backend.next_tokens([ASK] * 20)
        assert server.requests == 3 * 2  # three items, each tried twice; the rest not sent
    assert all(o.error for o in out)
    assert "could not reach" in out[0].error
    assert out[-1].error.startswith("not sent: the endpoint failed 3 times in a row")


def test_a_success_resets_the_count_of_failures_in_a_row():
    with fake_llm(mode="ok") as server:
        backend = EndpointBackend(server.url, "m", timeout=5.0, max_retries=0, concurrency=1)
        server.mode = "dead"
        backend.next_tokens([ASK] * 2)
        server.mode = "ok"
        assert backend.next_tokens([ASK])[0].error is None
        server.mode = "dead"
        backend.next_tokens([ASK] * 2)  # two more in a row: still under three
        server.mode = "ok"
        assert backend.next_tokens([ASK])[0].top is not None
