"""The ``qaeval`` command: one Typer app, one error boundary.

Each command group lives in its own module exposing ``add_commands(app)``. Known errors
(:class:`~qaeval_core.errors.QAEvalError`) become a one-line message and exit code 1, the
parameter a library error names shown as its flag (:mod:`qaeval_core.cli.flags`); set
``QAEVAL_DEBUG=1`` to see the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer
from rich.markup import escape

from qaeval_core.cli.common import err_console
from qaeval_core.cli.flags import cli_message, param_flags
from qaeval_core.errors import QAEvalError

#: Command modules, in the order their commands appear in ``qaeval --help``.
COMMAND_MODULES = [
    "qaeval_core.cli.db",
    "qaeval_core.cli.import_export",
    "qaeval_core.cli.score",
    "qaeval_core.cli.users",
    "qaeval_core.cli.demo",
    "qaeval_core.cli.report",
    "qaeval_core.cli.audit",
    "qaeval_core.cli.calibrate",
    "qaeval_core.cli.estimate",
    "qaeval_core.cli.check",
]

app = typer.Typer(
    name="qaeval",
    help="Judge whether QA answers are actually correct: label, score, compare, calibrate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # reflows docstrings; "[...]" is text, not rich markup
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"qaeval {version('qaeval')}")
        except PackageNotFoundError:
            print("qaeval (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    pass


for _name in COMMAND_MODULES:
    importlib.import_module(_name).add_commands(app)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point with the error boundary."""
    try:
        app(args=argv, standalone_mode=False)
    except QAEvalError as exc:
        if os.environ.get("QAEVAL_DEBUG"):
            raise
        message = cli_message(exc, param_flags(app))
        err_console.print(f"[bold red]Error:[/] {escape(message)}", markup=True, soft_wrap=True)
        return 1
    except (KeyboardInterrupt, EOFError):
        err_console.print("Interrupted.")
        return 130
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # Click usage errors arrive here in non-standalone mode
        import click

        # typer >= 0.24 vendors its own click (typer._click), whose errors are TyperExceptions.
        if isinstance(exc, click.exceptions.ClickException | typer.exceptions.TyperException):
            if hasattr(exc, "show"):
                exc.show()
            else:
                err_console.print(f"Error: {exc.format_message()}", markup=False)
            return int(getattr(exc, "exit_code", 2))
        if isinstance(exc, click.exceptions.Abort | typer.exceptions.Abort):
            err_console.print("Aborted.")
            return 1
        raise
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
