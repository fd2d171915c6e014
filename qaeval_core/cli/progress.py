"""How the CLI shows a long calibration's progress (issue 21, item 8: ``qaeval calibrate`` was
silent for minutes): the library reports steps through a callback
(:mod:`qaeval_core.calibrate.progress`), this draws them on stderr."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from qaeval_core.cli.common import err_console

if TYPE_CHECKING:  # importing calibrate/ would load scikit-learn for ``qaeval --help``
    from qaeval_core.calibrate.progress import CalibrationProgress, ProgressCallback

__all__ = ["calibration_progress"]


@contextmanager
def calibration_progress() -> Iterator[ProgressCallback]:
    """Show a calibration's progress on stderr: a line per step and per message (what was
    printed before, now numbered by step) and, on a terminal, a bar with the share done. The
    tables go to stdout as before, so piping them stays clean."""
    from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = bar.add_task("Calibrating", total=1.0)
    current: list[str] = []

    def show(p: CalibrationProgress) -> None:
        if current != [p.step]:
            current[:] = [p.step]
            bar.console.print(f"Step {p.index} of {p.steps}: {p.step}", markup=False)
        bar.console.print(f"  {p.message}", markup=False)
        bar.update(task, completed=p.fraction, description=p.step)

    with bar:
        yield show
