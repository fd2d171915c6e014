"""Backends that give the top log-probabilities of an LLM's first answer token.

Each backend takes chat conversations and returns, per conversation, a :class:`NextToken`:
the top-k (token, log-probability) pairs of the first answer token, or only the answer text
where an endpoint gives no log-probabilities. Nothing is sampled (temperature 0, one token).

* :class:`LlamaCppBackend`: a GGUF file through llama.cpp (``xllamacpp``, CPU wheel, no
  torch). The server keeps each slot's key/value cache, so the instruction every item shares is
  evaluated once per slot and only the item's own tokens cost time; ``parallel`` slots are
  filled at once and the server batches them (continuous batching).
* :class:`TransformersBackend`: any causal LM by folder, ``.gguf`` file or hub name (CUDA in
  bfloat16 when there is one). The default batch is 1, which makes the value independent of
  which other items share a batch; a larger batch is length-sorted and left-padded, faster on a
  GPU, and moved P(correct) by up to 0.05 in bfloat16 on an H200 (measured, 512 items).
* :class:`EndpointBackend`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM,
  llama.cpp server, hosted APIs) asked for ``logprobs``/``top_logprobs``; an endpoint that
  ignores them is read from its text.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from qaeval_core.errors import ModelLoadError
from qaeval_core.llm.chat_clients import OpenAIChatClient
from qaeval_core.llm.endpoint_http import LLMEndpointError
from qaeval_core.llm.prompts import Message

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
    env = os.environ.get("QAEVAL_LLM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


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
_SERVERS: dict[tuple[str, int, int], Any] = {}
_SERVER_LOCK = threading.Lock()


def _llama_server(path: str, ctx: int, threads: int) -> tuple[Any, threading.Lock]:
    """One llama.cpp server (one slot) per (file, context, threads) in a process, with the lock
    that keeps its requests in sequence."""
    key = (path, ctx, threads)
    with _SERVER_LOCK:
        if key in _SERVERS:
            return _SERVERS[key]
        try:
            import xllamacpp as xlc
        except ImportError:
            raise ModelLoadError(
                "A GGUF LLM judge needs llama.cpp's Python bindings: pip install 'qaeval[llm]' "
                "(xllamacpp, a CPU wheel)."
            ) from None
        params = xlc.CommonParams()
        params.model.path = path
        params.n_parallel = 1
        params.n_ctx = ctx
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.cache_prompt = True
        params.cache_ram_mib = 0  # no host-memory state cache: it would restore other items
        params.warmup = False
        params.verbosity = -1
        try:
            server = xlc.Server(params)
        except Exception as exc:  # one clear message for any loader failure
            raise ModelLoadError(f"llama.cpp could not load {path!r}: {exc}") from exc
        _SERVERS[key] = (server, threading.Lock())
        return _SERVERS[key]


class LlamaCppBackend:
    """A GGUF model through llama.cpp, with the shared instruction evaluated once.

    Why one sequence at a time, with a reset between items: llama.cpp reuses the longest
    common prefix of a new prompt and the slot's cached tokens. Two items of the same question
    share more than the instruction, so a plain cache would start item B's computation wherever
    item A left off, and the kernels chosen for a different number of new tokens round
    differently (up to 0.03 in P(correct) seen here). Before each item a "reset" prompt, the
    instruction with an empty user turn, leaves exactly the instruction's tokens in the cache;
    every item then computes its own tokens from the same point on the same cached state, so its
    value does not depend on the items before it. Several slots batched together were no faster
    on a 2-core CPU and mix items into one batch, so there is one slot.
    """

    def __init__(self, path: str, *, ctx: int = 4096) -> None:
        self.path = path
        self.ctx = ctx

    @property
    def name(self) -> str:
        return f"llama.cpp:{os.path.basename(self.path)}"

    def load(self) -> tuple[Any, threading.Lock]:
        return _llama_server(self.path, self.ctx, _threads())

    @staticmethod
    def _request(messages: Sequence[Message]) -> dict[str, Any]:
        return {
            "messages": list(messages),
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP_K,
            "cache_prompt": True,
        }

    def next_tokens(
        self, conversations: Sequence[Sequence[Message]], progress: Progress | None = None
    ) -> list[NextToken]:
        if not conversations:
            return []
        server, lock = self.load()
        out: list[NextToken] = []
        for conv in conversations:
            reset = [m if m["role"] == "system" else {**m, "content": ""} for m in conv]
            started = time.perf_counter()
            with lock:
                server.handle_chat_completions(self._request(reset))
                payload = server.handle_chat_completions(self._request(conv))
            if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
                raise ModelLoadError(f"llama.cpp refused a request: {str(payload['error'])[:300]}")
            seconds = time.perf_counter() - started
            out.append(NextToken(_top_from_openai(payload), _text_from_openai(payload), seconds))
            if progress is not None:
                progress(1)
        return out


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
