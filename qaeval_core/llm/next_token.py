"""Backends that give the top log-probabilities of an LLM's first answer token.

Each backend takes chat conversations and returns, per conversation, a :class:`NextToken`:
the top-k (token, log-probability) pairs of the first answer token, or only the answer text
where an endpoint gives no log-probabilities. Nothing is sampled (temperature 0, one token).

* :class:`LlamaCppBackend`: a GGUF file through llama.cpp (``xllamacpp``, CPU wheel, no
  torch). The server keeps its key/value cache, so the instruction every item shares is
  evaluated once, the question and references once per question, and only each candidate's
  own tokens cost time (:mod:`qaeval_core.llm.llama_server`).
* :class:`TransformersBackend`: any causal LM by folder, ``.gguf`` file or hub name (CUDA in
  bfloat16 when there is one). The default batch is 1, which makes the value independent of
  which other items share a batch; a larger batch is length-sorted and left-padded, faster on a
  GPU, and moved P(correct) by up to 0.05 in bfloat16 on an H200 (measured, 512 items).
* :class:`EndpointBackend`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM,
  llama.cpp server, hosted APIs) asked for ``logprobs``/``top_logprobs``; an endpoint that
  ignores them is read from its text.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from qaeval_core.llm.chat_clients import OpenAIChatClient
from qaeval_core.llm.endpoint_http import LLMEndpointError
from qaeval_core.llm.llama_server import LlamaSlot, llama_slot
from qaeval_core.llm.prompts import Message, question_prefix

__all__ = [
    "EndpointBackend",
    "LlamaCppBackend",
    "NextToken",
    "NextTokenBackend",
    "TransformersBackend",
    "TOP_K",
]

#: How many alternatives of the first token are read: enough that "yes"/"no" (and their case
#: variants) are always among them for an instruction-following model.
TOP_K = 20
Progress = Callable[[int], None]


@dataclass(frozen=True)
class NextToken:
    """The first answer token's alternatives (``top``) or, failing those, the answer ``text``;
    or, where the model gave no usable answer (an endpoint failed, timed out or answered a
    malformed body), the one-line ``error`` and nothing else: that item has no verdict."""

    top: tuple[tuple[str, float], ...] | None
    text: str = ""
    #: wall seconds the model spent on this item (a batch's time is shared out evenly)
    seconds: float = 0.0
    error: str | None = None


class NextTokenBackend(Protocol):
    name: str

    def next_tokens(
        self, conversations: Sequence[Sequence[Message]], progress: Progress | None = None
    ) -> list[NextToken]: ...


def _threads() -> int:
    """llama.cpp's threads: ``QAEVAL_LLM_THREADS``, else every CPU the process may use, or one
    when the machine is already oversubscribed (1-minute load average >= CPUs). llama.cpp's
    threads spin-wait for each other at every step, so on a loaded machine two threads wait
    for one another's time slices: 12 NQ301 items took 56 s with one thread and 171-217 s with
    two on the 2-core machine at load 15-24, to the same bits (each output element is computed
    by one thread, whatever their number). Decided once, when the model is loaded."""
    env = os.environ.get("QAEVAL_LLM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    cpus = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    try:
        loaded = os.getloadavg()[0] >= cpus
    except OSError:  # no load average on this platform
        loaded = False
    return 1 if loaded else cpus


def _first_choice(payload: Any) -> dict[str, Any]:
    """``choices[0]`` of an OpenAI-style answer, or one line saying what is missing."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LLMEndpointError(
            "the answer has no choices[0] object (an OpenAI-compatible chat answer has "
            f"choices: [{{message, logprobs}}]); it began {_start(payload)}"
        )
    return choices[0]


def _start(payload: Any) -> str:
    text = " ".join(str(payload).split())
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


def _logprob(entry: Any, where: str) -> tuple[str, float]:
    """One (token, log-probability) pair; a log-probability that is not a number is an
    error, never a guess."""
    if not isinstance(entry, dict):
        raise LLMEndpointError(f"{where} is not an object: {_start(entry)}")
    value = entry.get("logprob")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise LLMEndpointError(f"{where}.logprob is not a number: {_start(value)}")
    if value > 0:
        raise LLMEndpointError(f"{where}.logprob is {value}, above 0 (not a log-probability)")
    return str(entry.get("token", "")), float(value)


def _top_from_openai(payload: Any) -> tuple[tuple[str, float], ...] | None:
    """``choices[0].logprobs.content[0].top_logprobs`` (chat) or ``...top_logprobs[0]`` (legacy
    completions) as (token, logprob) pairs; None when the answer carries none. A malformed
    answer (no ``choices[0]``, a log-probability that is not a number) raises
    :class:`LLMEndpointError` in one line: it is no verdict, not a probability."""
    logprobs = _first_choice(payload).get("logprobs")
    if logprobs is None:
        return None
    if not isinstance(logprobs, dict):
        raise LLMEndpointError(f"choices[0].logprobs is not an object: {_start(logprobs)}")
    content = logprobs.get("content")
    if content:
        if not isinstance(content, list) or not isinstance(content[0], dict):
            raise LLMEndpointError(f"choices[0].logprobs.content is malformed: {_start(content)}")
        first = content[0]
        top = first.get("top_logprobs") or [first]
        if not isinstance(top, list):
            raise LLMEndpointError(f"top_logprobs is not a list: {_start(top)}")
        where = "choices[0].logprobs.content[0].top_logprobs"
        return tuple(_logprob(t, f"{where}[{i}]") for i, t in enumerate(top))
    legacy = logprobs.get("top_logprobs")
    if legacy and isinstance(legacy, list) and isinstance(legacy[0], dict):
        where = "choices[0].logprobs.top_logprobs[0]"
        return tuple(
            _logprob({"token": k, "logprob": v}, f"{where}[{k!r}]") for k, v in legacy[0].items()
        )
    return None


def _text_from_openai(payload: Any) -> str:
    choice = _first_choice(payload)
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    text = content if isinstance(content, str) and content else choice.get("text")
    return text if isinstance(text, str) else ""


# -- llama.cpp --------------------------------------------------------------------------------
class LlamaCppBackend:
    """A GGUF model through llama.cpp, reading each question once for all its candidates.

    The conversations are grouped by question (their instruction and
    :func:`~qaeval_core.llm.prompts.question_prefix`) and each is computed as cached
    instruction + cached question + its own tokens (:class:`~qaeval_core.llm.llama_server
    .LlamaSlot` says how), so its value does not depend on the items before it or beside it,
    while the question and references cost once per question. Within a question, candidates
    that start alike are kept apart (fewer question resets). Several slots batched together
    were no faster on a 2-core CPU and mix items into one batch, so there is one slot.
    """

    def __init__(self, path: str, *, ctx: int = 4096, reuse: bool = True) -> None:
        self.path = path
        self.ctx = ctx
        #: False: every prompt computed whole from an empty cache, as a llama.cpp server
        #: without prompt caching does (to compare like with like; slower)
        self.reuse = reuse

    @property
    def name(self) -> str:
        return f"llama.cpp:{os.path.basename(self.path)}"

    def slot(self) -> LlamaSlot:
        return llama_slot(self.path, self.ctx, _threads)

    def load(self) -> tuple[Any, threading.Lock]:
        slot = self.slot()
        return slot.server, slot.lock

    def next_tokens(
        self, conversations: Sequence[Sequence[Message]], progress: Progress | None = None
    ) -> list[NextToken]:
        if not conversations:
            return []
        slot = self.slot()
        heads = [
            question_prefix(c[-1]["content"]) if c and c[-1]["role"] == "user" else None
            for c in conversations
        ]
        out: list[NextToken | None] = [None] * len(conversations)
        for i in _by_question(conversations, heads):
            started = time.perf_counter()
            with slot.lock:
                payload = slot.complete(
                    conversations[i],
                    heads[i],
                    whole=not self.reuse,
                    max_tokens=1,
                    logprobs=True,
                    top_logprobs=TOP_K,
                )
            seconds = time.perf_counter() - started
            out[i] = NextToken(_top_from_openai(payload), _text_from_openai(payload), seconds)
            if progress is not None:
                progress(1)
        return [o for o in out if o is not None]


def _by_question(
    conversations: Sequence[Sequence[Message]], heads: Sequence[str | None]
) -> list[int]:
    """The order to compute in: each question's conversations together (questions in their
    first appearance), and within one, candidates starting with another character than the one
    before first where there is one (two that start alike may share a first token, which costs
    a question reset; the values are the same in any order)."""
    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, conv in enumerate(conversations):
        key = (json.dumps(list(conv[:-1])), heads[i])
        groups.setdefault(key, []).append(i)
    order: list[int] = []
    for (_, head), members in groups.items():
        if head is None:
            order.extend(members)
            continue
        left = list(members)
        last = ""
        while left:
            starts = [conversations[i][-1]["content"][len(head) :].lstrip()[:1] for i in left]
            pick = next((k for k, s in enumerate(starts) if s != last), 0)
            last = starts[pick]
            order.append(left.pop(pick))
    return order


# -- transformers -----------------------------------------------------------------------------
@cache
def _causal_lm(location: str, device: str) -> tuple[Any, Any]:
    from qaeval_core.llm.chat_clients import load_causal_lm

    return load_causal_lm(location, device)


class TransformersBackend:
    """Any causal LM that transformers loads, by folder, ``.gguf`` file or hub name."""

    def __init__(self, location: str, *, device: str | None = None, batch_size: int = 0) -> None:
        self.location = location
        self.device = device
        self.batch_size = batch_size

    @property
    def name(self) -> str:
        return f"transformers:{self.location}"

    def next_tokens(
        self, conversations: Sequence[Sequence[Message]], progress: Progress | None = None
    ) -> list[NextToken]:
        if not conversations:
            return []
        import torch

        from qaeval_core.models.loading import choose_device

        device = choose_device(self.device)
        model, tok = _causal_lm(self.location, device)
        size = self.batch_size or 1
        prompts = [
            tok.apply_chat_template(list(c), tokenize=False, add_generation_prompt=True)
            if getattr(tok, "chat_template", None)
            else "\n\n".join(m["content"] for m in c)
            for c in conversations
        ]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[NextToken | None] = [None] * len(prompts)
        for start in range(0, len(order), size):
            idx = order[start : start + size]
            started = time.perf_counter()
            enc = tok(
                [prompts[i] for i in idx],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            ).to(model.device)
            with torch.inference_mode():
                logits = model(**enc).logits[:, -1, :].float()
            logp = torch.log_softmax(logits, dim=-1)
            values, ids = torch.topk(logp, TOP_K, dim=-1)
            seconds = (time.perf_counter() - started) / len(idx)
            for row, i in enumerate(idx):
                top = tuple(
                    (tok.decode([int(t)]), float(v))
                    for t, v in zip(ids[row].tolist(), values[row].tolist(), strict=True)
                )
                out[i] = NextToken(top, "", seconds)
            if progress is not None:
                progress(len(idx))
        return [o for o in out if o is not None]


# -- OpenAI-compatible endpoints --------------------------------------------------------------
class EndpointBackend:
    """An OpenAI-compatible chat endpoint, asked for the first token's log-probabilities.

    An item the endpoint fails on (unreachable after retries, past its deadline, a malformed
    answer) comes back with ``error`` set instead of raising, so one bad answer costs one item,
    not the batch. After ``max_failures_in_a_row`` failures in a row the endpoint is taken for
    dead: the items not yet asked are not sent, each with an error saying why, so a dead
    server costs a few deadlines, not one per item.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        max_failures_in_a_row: int = 3,
        backoff: float = 1.0,
        max_response_bytes: int | None = None,
    ) -> None:
        extra = {} if max_response_bytes is None else {"max_response_bytes": max_response_bytes}
        self.client = OpenAIChatClient(
            url,
            model,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
            backoff=backoff,
            **extra,
        )
        self.concurrency = concurrency
        self.max_failures_in_a_row = max(1, int(max_failures_in_a_row))
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._dead: str | None = None

    @property
    def name(self) -> str:
        return self.client.name

    def _one(self, conversation: Sequence[Message]) -> NextToken:
        with self._lock:
            dead = self._dead
        if dead is not None:
            return NextToken(None, error=f"not sent: {dead}")
        started = time.perf_counter()
        try:
            payload = self.client.request(
                conversation, max_tokens=1, logprobs=True, top_logprobs=TOP_K
            )
            out = NextToken(_top_from_openai(payload), _text_from_openai(payload))
        except LLMEndpointError as exc:
            message = " ".join(str(exc).split())
            with self._lock:
                self._in_a_row += 1
                if self._in_a_row >= self.max_failures_in_a_row and self._dead is None:
                    self._dead = (
                        f"the endpoint failed {self._in_a_row} times in a row, the last: "
                        f"{message[:300]}"
                    )
            return NextToken(None, error=message)
        with self._lock:
            self._in_a_row = 0
        return NextToken(out.top, out.text, time.perf_counter() - started)

    def next_tokens(
        self, conversations: Sequence[Sequence[Message]], progress: Progress | None = None
    ) -> list[NextToken]:
        self.client.chat_url  # noqa: B018  (a malformed URL is the caller's error, not an item's)

        def run(conv: Sequence[Message]) -> NextToken:
            out = self._one(conv)
            if progress is not None:
                progress(1)
            return out

        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(run, conversations))
