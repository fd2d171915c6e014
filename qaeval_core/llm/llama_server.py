"""One in-process llama.cpp server per model file, and what its key/value cache holds.

llama.cpp's server keeps its slot's tokens and key/value cache between requests and computes a
new prompt from the longest common prefix of the two: only the tokens after it cost time. How
much it reuses decides the numbers, though: the tokens after the split are computed in one
batch, and the kernels chosen for another number of tokens round differently (up to 0.03 in
P(correct) seen here). A verdict that depended on the request before it would depend on the
order of the items. So :class:`LlamaSlot` keeps a record of what the cache holds and, before
each prompt, puts it in the one state that prompt is always computed from:

1. the **instruction** (the conversation with empty user turns: the system message and the
   template's opening of the user turn) computed from an empty cache, once per process and
   again only after another caller used the server;
2. the **question** (instruction + question + references, the prompt up to "Candidate answer:",
   :func:`qaeval_core.llm.prompts.question_prefix`) computed from the instruction's end, once
   per question: a "reset" request of the instruction, then one of the question with nothing
   after it;
3. each **candidate's** tokens computed from the question's end, in one batch.

Step 3 needs the cache to part from the prompt exactly where the question ends. After another
candidate of the same question it does when the two candidates' first tokens differ; the server
reports how many tokens it reused (``timings.cache_n``), so a prompt that reused more (or less)
is computed again after a question reset, and a candidate that starts like the one before it
gets the reset first. Every candidate is therefore computed as cached question + its own
tokens, whatever came before it: the same P(correct) in any order and any batch composition,
and the question and references are read once per question instead of once per candidate.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from qaeval_core.errors import ModelLoadError
from qaeval_core.llm.prompts import Message

__all__ = ["LlamaSlot", "llama_slot"]

_SLOTS: dict[tuple[str, int], LlamaSlot] = {}
_SLOTS_LOCK = threading.Lock()


@dataclass
class _Held:
    """What the slot's cache is known to hold; the defaults mean "unknown"."""

    #: the instruction conversation (JSON) whose state is at the cache's start
    instruction: str | None = None
    #: tokens of the instruction's reset prompt (instruction + the template's closing tail)
    instruction_tokens: int | None = None
    #: the last request was the instruction's reset: the cache parts right after it
    at_instruction: bool = False
    #: the question prefix (text) whose state follows the instruction
    question: str | None = None
    #: tokens of instruction + question: where every candidate of it starts computing
    split: int | None = None
    #: the last request was the question's reset
    fresh: bool = False
    #: the first character of the candidate computed last (same start: same first token?)
    last_start: str = ""


def _instruction_of(conversation: Sequence[Message]) -> list[Message]:
    return [m if m["role"] == "system" else {**m, "content": ""} for m in conversation]


def _with_last(conversation: Sequence[Message], content: str) -> list[Message]:
    return [*conversation[:-1], {**conversation[-1], "content": content}]


def _number(payload: Any, *path: str) -> int | None:
    for key in path:
        payload = payload.get(key) if isinstance(payload, dict) else None
    return payload if isinstance(payload, int) and not isinstance(payload, bool) else None


def _may_share_first_token(a: str, b: str) -> bool:
    """Whether two candidates may begin with the same token (then the second would reuse it):
    the same first character, or a start that is not a letter (a space and a digit, a quote:
    tokenisers split those apart from what follows)."""
    return a == b or not (a.isalpha() and b.isalpha())


class LlamaSlot:
    """A llama.cpp server with one slot, its lock, and the record of its cache.

    ``requests`` counts what was sent, by kind (``instruction``, ``question``, ``item``,
    ``redo``, ``whole``): how often a prompt had to be computed again is visible to tests and
    benchmarks.
    """

    def __init__(self, server: Any) -> None:
        self.server = server
        self.lock = threading.Lock()
        self.held = _Held()
        self.requests: Counter[str] = Counter()
        #: llama.cpp's thread count, decided when the model was loaded (0: not known)
        self.threads = 0

    def forget(self) -> None:
        """Another kind of request is about to use the server (LAVE's completions): nothing is
        known about the cache afterwards, so the next verdict starts from an empty one."""
        self.held = _Held()

    def _send(self, kind: str, messages: Sequence[Message], **options: Any) -> dict[str, Any]:
        request = {"messages": list(messages), "temperature": 0, "cache_prompt": True, **options}
        payload = self.server.handle_chat_completions(request)
        if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
            raise ModelLoadError(f"llama.cpp refused a request: {str(payload['error'])[:300]}")
        self.requests[kind] += 1
        return payload

    def _instruction(self, conversation: Sequence[Message]) -> None:
        """Leave exactly the instruction in the cache, computed from an empty cache the first
        time (``cache_prompt: false``) and reused after that."""
        reset = _instruction_of(conversation)
        key = json.dumps(reset)
        known = self.held.instruction == key
        payload = self._send("instruction", reset, max_tokens=1, cache_prompt=known)
        self.held = _Held(
            instruction=key,
            instruction_tokens=_number(payload, "usage", "prompt_tokens"),
            at_instruction=True,
        )

    def _question(self, conversation: Sequence[Message], head: str) -> None:
        """Leave instruction + question in the cache: from the instruction's end for a new
        question, only the template's tail after it for the current one."""
        new = self.held.question != head
        if new and not self.held.at_instruction:
            self._instruction(conversation)
        payload = self._send("question", _with_last(conversation, head), max_tokens=1)
        if new:
            reused = _number(payload, "timings", "cache_n")
            total = _number(payload, "usage", "prompt_tokens")
            base = self.held.instruction_tokens
            split = None
            if reused is not None and total is not None and base is not None:
                tail = base - reused  # the template's closing tokens after the user turn
                split = total - tail if 0 < tail < total - reused else None
            self.held.question, self.held.split = head, split
        self.held.at_instruction, self.held.fresh = False, True

    def complete(
        self,
        conversation: Sequence[Message],
        head: str | None,
        *,
        whole: bool = False,
        **options: Any,
    ) -> dict[str, Any]:
        """The server's answer to ``conversation``, computed from the canonical state: the
        instruction's end, or the question's end where ``head`` (the last message's text up to
        the candidate) is given; with ``whole``, the whole prompt from an empty cache (as a
        server without prompt caching computes it). Call with :attr:`lock` held."""
        if whole:
            self.held = _Held()  # the instruction was computed inside a longer batch
            return self._send("whole", conversation, cache_prompt=False, **options)
        if self.held.instruction != json.dumps(_instruction_of(conversation)):
            self._instruction(conversation)
        if head is None or not conversation[-1]["content"].startswith(head):
            if not self.held.at_instruction:
                self._instruction(conversation)
            payload = self._send("item", conversation, **options)
            self.held = _Held(self.held.instruction, self.held.instruction_tokens)
            return payload
        start = conversation[-1]["content"][len(head) :].lstrip()[:1]
        alike = self.held.split is None or _may_share_first_token(start, self.held.last_start)
        if self.held.question != head or (not self.held.fresh and alike):
            self._question(conversation, head)
        fresh = self.held.fresh
        payload = self._send("item", conversation, **options)
        if not fresh and _number(payload, "timings", "cache_n") != self.held.split:
            self._question(conversation, head)  # it reused another candidate's tokens
            payload = self._send("redo", conversation, **options)
        self.held.fresh, self.held.last_start = False, start
        return payload


def llama_slot(path: str, ctx: int, threads: Callable[[], int]) -> LlamaSlot:
    """The process's llama.cpp server (one slot) for (file, context); ``threads`` is asked
    once, when it is loaded (one model in memory, whatever the load does later)."""
    key = (path, ctx)
    with _SLOTS_LOCK:
        if key in _SLOTS:
            return _SLOTS[key]
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
        n_threads = threads()
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.cache_prompt = True
        params.cache_ram_mib = 0  # no host-memory state cache: it would restore other items
        params.warmup = False
        params.verbosity = -1
        try:
            server = xlc.Server(params)
        except Exception as exc:  # one clear message for any loader failure
            raise ModelLoadError(f"llama.cpp could not load {path!r}: {exc}") from exc
        _SLOTS[key] = LlamaSlot(server)
        _SLOTS[key].threads = n_threads
        return _SLOTS[key]
