"""Many processes for the concurrency tests, without paying an interpreter start for each.

The store races are between *processes* (the app's sessions, an import, a CLI call), each with
its own connections. ``spawn`` gives that but starts a fresh interpreter per process and
imports qaeval, pandas and SQLAlchemy in each (20 processes: ~40 s of CPU on the 2-core CI
machine). ``forkserver`` gives the same isolation: its children fork from one clean server
process that never opened a connection (nothing is inherited from pytest), and the server
imports the store's modules once, before the first child.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.context import BaseContext

#: Imported once by the fork server. One list for every caller: the server starts at the first
#: use in a pytest process and later preload requests would be ignored.
PRELOAD = (
    "qaeval_core.store.items.imports",
    "qaeval_core.store.labels",
    "qaeval_core.store.queues.assignment",
    "qaeval_core.store.queues.serving",
    "qaeval_core.store.session",
)


def store_processes() -> BaseContext:
    """A multiprocessing context whose processes fork from a server that imported the store."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx
