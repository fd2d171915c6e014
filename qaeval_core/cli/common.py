"""Options and output helpers shared by every CLI command module."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="QAEVAL_DATABASE_URL",
        help="Store URL or SQLite file path (default: .qaeval/qaeval.sqlite).",
        show_envvar=True,
    ),
]
