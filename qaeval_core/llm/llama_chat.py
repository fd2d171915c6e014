"""Greedy chat completion from a GGUF model through llama.cpp (LAVE on the packaged Qwen).

:class:`~qaeval_core.llm.next_token.LlamaCppBackend` reads one token's probabilities; LAVE
writes a rationale, so it needs whole completions from the same server. The server keeps the
longest common prefix of the previous prompt in its key/value cache; like the next-token
backend, each item is preceded by a "reset" request whose prompt is the part every item shares
(``shared_prefix``, e.g. LAVE's task and demonstrations), so every item starts computing from the
same cached state and its completion does not depend on the items scored before it (issue 21),
while the shared demonstrations are evaluated once, not once per item.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from qaeval_core.errors import ModelLoadError
from qaeval_core.llm.next_token import LlamaCppBackend
from qaeval_core.llm.prompts import Message

__all__ = ["LlamaCppChat"]


def _content(payload: Any) -> str:
    try:
        return str(payload["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError):
        raise ModelLoadError(
            f"llama.cpp answered without a completion: {str(payload)[:300]}"
        ) from None


class LlamaCppChat:
    """Greedy completions of chat conversations by a GGUF file through llama.cpp.

    ``shared_prefix`` maps the last message's text to the part all items share; the reset
    request asks for one token on that prefix alone. None: no reset (each prompt is computed
    after whatever the cache holds, which can round differently).
    """

    def __init__(
        self,
        path: str,
        *,
        max_new_tokens: int = 128,
        ctx: int = 4096,
        shared_prefix: Callable[[str], str] | None = None,
    ) -> None:
        self.path = path
        self.max_new_tokens = max_new_tokens
        self._server = LlamaCppBackend(path, ctx=ctx)
        self.shared_prefix = shared_prefix

    @property
    def name(self) -> str:
        return f"llama.cpp:{os.path.basename(self.path)}"

    @staticmethod
    def _request(messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
        return {
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": 0,
            "cache_prompt": True,
        }

    def generate(self, conversations: Sequence[Sequence[Message]]) -> list[str]:
        if not conversations:
            return []
        slot = self._server.slot()
        server = slot.server
        out: list[str] = []
        for conv in conversations:
            conv = list(conv)
            with slot.lock:
                slot.forget()  # the verdicts' record of the cache no longer holds
                if self.shared_prefix is not None and conv:
                    head = {**conv[-1], "content": self.shared_prefix(conv[-1]["content"])}
                    server.handle_chat_completions(self._request([*conv[:-1], head], 1))
                payload = server.handle_chat_completions(self._request(conv, self.max_new_tokens))
            if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
                raise ModelLoadError(f"llama.cpp refused a request: {str(payload['error'])[:300]}")
            out.append(_content(payload))
        return out
