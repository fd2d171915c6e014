"""``qaeval check``: a CI gate that scores a pinned gold set with a judge config.

``qaeval check --config judge.json --gold labelled.jsonl`` scores the gold set, compares the
judge's verdicts with the people's and fails (exit 1, a one-line reason, and a JUnit file for
CI systems with ``--junit``) when the agreement is below ``--min-accuracy``, when fewer than
``--min-items`` gold items were compared, or, with ``--baseline previous.json`` (written by
``--save-baseline``), when a verdict changed or the baseline matches too few of the gold items.
The whole check is :func:`qaeval_core.judge.gold_check.check_judge` (this module parses the
flags and prints its line); ``CheckFailed``, ``CheckResult``, ``run_check`` and ``write_junit``
are re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from qaeval_core.cli.common import console
from qaeval_core.judge.gold_check import (
    BASELINE_KIND,
    DEFAULT_MIN_ITEMS,
    CheckFailed,
    CheckResult,
    check_judge,
    run_check,
    write_junit,
)

__all__ = [
    "BASELINE_KIND",
    "CheckFailed",
    "CheckResult",
    "add_commands",
    "run_check",
    "write_junit",
]


def add_commands(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        config: Annotated[
            Path, typer.Option("--config", help="Judge config to check (from `qaeval calibrate`).")
        ],
        gold: Annotated[
            Path,
            typer.Option("--gold", help="Pinned gold set: items with human labels (any format)."),
        ],
        min_accuracy: Annotated[
            float | None,
            typer.Option(
                "--min-accuracy",
                min=0.0,
                max=1.0,
                help="Fail below this agreement with the labels (default: the low end of the "
                "config's cross-validated accuracy interval, unless --baseline is given).",
            ),
        ] = None,
        baseline: Annotated[
            Path | None,
            typer.Option("--baseline", help="Fail when a verdict differs from this baseline."),
        ] = None,
        save_baseline: Annotated[
            Path | None,
            typer.Option("--save-baseline", help="Write this run's verdicts as a baseline."),
        ] = None,
        junit: Annotated[
            Path | None, typer.Option("--junit", help="Write a JUnit XML report here.")
        ] = None,
        fmt: Annotated[
            str | None, typer.Option("--format", help="Format of the gold file (default: detect).")
        ] = None,
        confidence: Annotated[
            float, typer.Option(min=0.5, max=0.999, help="Level of the agreement's interval.")
        ] = 0.95,
        min_items: Annotated[
            int,
            typer.Option(
                "--min-items",
                help="Fail when fewer gold items (with a clear human label) were compared, "
                "whatever the agreement: on a handful of items any bound passes by chance. "
                "With --baseline, also the fewest gold items the baseline must share.",
            ),
        ] = DEFAULT_MIN_ITEMS,
    ) -> None:
        """Score a pinned gold set with a judge config; exit 1 (one-line reason) when the
        agreement falls below the bound, fewer than --min-items gold items were compared, or
        a verdict changed since the baseline (or the baseline matches too few items)."""
        result = check_judge(
            config,
            gold,
            min_accuracy=min_accuracy,
            baseline=baseline,
            save_baseline=save_baseline,
            junit=junit,
            fmt=fmt,
            confidence=confidence,
            min_items=min_items,
        )
        console.print(result.passed_text(), markup=False, soft_wrap=True)
