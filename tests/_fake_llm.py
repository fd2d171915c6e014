"""A fake OpenAI-compatible ``/chat/completions`` server on 127.0.0.1 (an ephemeral port, a
thread) that misbehaves on request: it dies after some answers, answers malformed bodies,
hangs, trickles bytes, or streams an endless body. The LLM endpoint tests use it to check that
each failure is *no verdict* with a one-line reason, and never a score that looks real.

Every slow behaviour ends by itself after :data:`GIVE_UP` seconds (or at the test's end), so a
client that lacks a deadline makes its test fail, not hang for ever.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: The longest any slow behaviour lasts before the server finishes its answer anyway.
GIVE_UP = 8.0

#: The bodies reported from the hostile probes (issue 31): each must be no verdict.
MALFORMED = {
    "choices_not_a_list": b'{"choices": "x"}',
    "logprob_abc": json.dumps(
        {
            "choices": [
                {
                    "message": {"content": "yes"},
                    "logprobs": {"content": [{"token": "yes", "logprob": "abc"}]},
                }
            ]
        }
    ).encode(),
    "logprob_null": json.dumps(
        {
            "choices": [
                {
                    "message": {"content": "yes"},
                    "logprobs": {
                        "content": [
                            {
                                "token": "yes",
                                "logprob": None,
                                "top_logprobs": [{"token": "yes", "logprob": None}],
                            }
                        ]
                    },
                }
            ]
        }
    ).encode(),
    "deep_json": b"[" * 100_000 + b"]" * 100_000,
    "not_utf8": b'{"choices": [{"message": {"content": "\xff\xfe yes"}}]}',
    "not_json": b"<html>502 Bad Gateway</html>",
}


def good_body(p_yes: float) -> bytes:
    """A well-formed answer whose first token is yes with probability ``p_yes``."""
    top = [
        {"token": "yes", "logprob": math.log(p_yes)},
        {"token": "no", "logprob": math.log(1 - p_yes)},
    ]
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": "yes"},
        "logprobs": {
            "content": [{"token": "yes", "logprob": top[0]["logprob"], "top_logprobs": top}]
        },
    }
    return json.dumps({"choices": [choice]}).encode()


def p_yes_for(user_text: str) -> float:
    """The fake model's P(yes): 0.9 when the candidate names Shakespeare, else 0.2."""
    candidate = user_text.split("Candidate answer:")[-1]
    return 0.9 if "Shakespeare" in candidate else 0.2


@dataclass
class FakeLLM:
    """The server's behaviour, changed by the test between calls.

    ``mode``: ``ok`` (good answers), ``dead`` (drops every connection without an answer),
    ``body`` (answers ``body`` with status 200), ``hang`` (answers nothing until
    :data:`GIVE_UP`), ``trickle`` (one byte every 50 ms of an answer that never completes in
    time), ``endless`` (a body without end). ``die_after``: in ``ok`` mode, answer this many
    requests, then behave as ``dead``.
    """

    url: str = ""
    mode: str = "ok"
    body: bytes = b""
    die_after: int | None = None
    answered: int = 0
    requests: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> tuple[int, str]:
        with self.lock:
            self.requests += 1
            mode = self.mode
            if mode == "ok" and self.die_after is not None and self.answered >= self.die_after:
                mode = "dead"
            if mode == "ok":
                self.answered += 1
            return self.requests, mode


def _handler(state: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            request = json.loads(self.rfile.read(length) or b"{}")
            _, mode = state.count()
            if mode == "dead":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if mode == "ok":
                user = request["messages"][-1]["content"]
                self._send(good_body(p_yes_for(user)))
            elif mode == "body":
                self._send(state.body)
            elif mode == "hang":
                state.stop.wait(GIVE_UP)
                self._send(good_body(0.9))
            elif mode == "trickle":
                body = good_body(0.9)
                self._head(len(body))
                started = time.monotonic()
                for i in range(len(body)):
                    if state.stop.is_set() or time.monotonic() - started > GIVE_UP:
                        self.wfile.write(body[i:])
                        break
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            elif mode == "endless":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = b"[" * 65536
                started = time.monotonic()
                try:
                    while not state.stop.is_set() and time.monotonic() - started < GIVE_UP:
                        self.wfile.write(chunk)
                except OSError:  # the client hung up: what a size limit does
                    pass
                self.close_connection = True

        def _head(self, length: int) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def _send(self, body: bytes) -> None:
            self._head(len(body))
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

        def handle(self) -> None:
            with contextlib.suppress(OSError):  # a client that gave up mid-answer
                super().handle()

    return Handler


@contextmanager
def fake_llm(**settings: object) -> Iterator[FakeLLM]:
    """A running fake endpoint (``state.url`` is its ``/v1`` base URL), stopped at exit."""
    state = FakeLLM(**settings)  # type: ignore[arg-type]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
