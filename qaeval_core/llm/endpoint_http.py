"""Talking HTTP to an OpenAI-compatible endpoint safely: its URL, and reading its answer.

A server can fail in ways that look like answers: it hangs, trickles one byte at a time,
streams a body without end, or answers bytes that are not UTF-8, not JSON, or JSON nested so
deep that reading it overflows the stack (issue 31's probes). :func:`read_body` reads an answer
against a deadline for the *whole* response and a size limit, and :func:`parse_json` turns
every unreadable body into one :class:`LLMEndpointError` line, so the caller can count the item
as having no verdict instead of crashing or guessing.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
from typing import Any

from qaeval_core.errors import QAEvalError

__all__ = [
    "LLMEndpointError",
    "MAX_RESPONSE_BYTES",
    "chat_url",
    "error_detail",
    "late",
    "one_line",
    "parse_json",
    "read_body",
]

#: The largest endpoint answer read: a chat answer with 20 top log-probabilities is a few
#: kilobytes, so 8 MiB is generous and still stops a server that streams without end.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class LLMEndpointError(QAEvalError):
    """An OpenAI-compatible endpoint could not be reached or answered with an error."""


def chat_url(url: str) -> str:
    """The ``/chat/completions`` URL for a base URL (``http://host:8000/v1``) or itself."""
    url = url.strip()
    if not url.startswith(("http://", "https://")):
        raise LLMEndpointError(
            f"LLM endpoint URL must start with http:// or https://, got {url!r}. Example: "
            "http://localhost:8000/v1"
        )
    if url.rstrip("/").endswith("/chat/completions"):
        return url.rstrip("/")
    return url.rstrip("/") + "/chat/completions"


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, at most ``limit`` characters (server text goes into messages)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def late(url: str, timeout: float) -> str:
    """Why a try ended: the deadline for the whole response passed."""
    return (
        f"{url} did not finish answering within {float(timeout):g} s (the deadline for a whole "
        "response); is the server overloaded or hanging? Raise timeout for a slow model."
    )


def error_detail(exc: urllib.error.HTTPError) -> str:
    """The start of an error response's body (read with a small bound: it may be endless)."""
    try:
        return one_line(exc.read(300).decode("utf-8", "replace"), 300)
    except Exception:  # a body that fails to read adds nothing to the status
        return ""


def read_body(resp: Any, deadline: float, limit: int, url: str) -> bytes:
    """The response body, read until the deadline and at most ``limit`` bytes.

    Each read waits at most until the deadline (the socket's timeout is lowered as time runs
    out), so a server that trickles one byte at a time cannot stretch a try past it.
    """
    sock = _socket_of(resp)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if sock is not None:
            sock.settimeout(left)
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise LLMEndpointError(
                f"{url} answered with more than {limit:,} bytes (max_response_bytes); an "
                "OpenAI-compatible chat answer is a few kilobytes. Is it the right endpoint?"
            )
        chunks.append(chunk)


def _socket_of(resp: Any) -> socket.socket | None:
    """The socket under a urllib response (to lower its timeout), or None if hidden."""
    raw = getattr(getattr(resp, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def parse_json(raw: bytes, url: str) -> Any:
    """The body as JSON, or one line saying why not (not UTF-8, not JSON, nested too deep)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        why = f"its answer is not UTF-8 text (byte {exc.start})"
    except RecursionError:
        why = "its answer is JSON nested too deep to read"
    except ValueError as exc:
        why = f"its answer is not JSON ({one_line(str(exc), 80)}: {one_line(repr(raw[:60]), 80)})"
    raise LLMEndpointError(
        f"{url}: {why}; is it an OpenAI-compatible chat/completions endpoint?"
    ) from None
