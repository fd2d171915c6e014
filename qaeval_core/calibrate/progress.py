"""Progress of a long calibration, as steps a page, a CLI or a log can show.

A default fit takes minutes (scoring the inputs, measuring their costs, choosing inputs,
comparing combiners). The library prints nothing: :func:`~qaeval_core.workflows.calibrate_dataset`
and :func:`~qaeval_core.calibrate.fit.fit_judge` take an optional ``progress`` callback and call
it with a :class:`CalibrationProgress` at every step and every unit of work inside a step (a
scored input, a measured input family, an evaluated input set, a compared combiner). The Calibrate
page draws them as a status box with a progress bar, ``qaeval calibrate`` as a progress bar on
stderr.

:class:`Steps` numbers a run's steps (known in advance, so "step 3 of 7" means what it says) and
turns each change into a :class:`CalibrationProgress`; :meth:`Steps.relay` passes a nested run's
progress (``fit_judge`` inside ``calibrate_dataset``) on under the outer run's numbering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

__all__ = ["CalibrationProgress", "ProgressCallback", "Steps"]


@dataclass(frozen=True)
class CalibrationProgress:
    """Where a run is: step ``index`` of ``steps`` (1-based) named ``step``, ``done`` of
    ``total`` units of that step (``total`` 0: not counted), and what is happening now."""

    step: str
    index: int
    steps: int
    message: str
    done: int = 0
    total: int = 0

    @property
    def fraction(self) -> float:
        """The share of the whole run done, in [0, 1]: finished steps count one each, the
        current one its share of units."""
        within = min(self.done / self.total, 1.0) if self.total > 0 else 0.0
        return max(0.0, min(1.0, (self.index - 1 + within) / max(self.steps, 1)))

    def __str__(self) -> str:
        return self.message


#: What a caller passes as ``progress``.
ProgressCallback = Callable[[CalibrationProgress], None]


class Steps:
    """The steps of one run, in order; sends a :class:`CalibrationProgress` to ``callback``
    (None: to nobody) each time a step starts or moves on."""

    def __init__(self, callback: ProgressCallback | None, names: Sequence[str]) -> None:
        if len(set(names)) != len(names):
            raise ValueError(f"step names must be unique, got {list(names)}")
        self._callback = callback
        self.names = list(names)
        self._current: CalibrationProgress | None = None

    def _send(self, progress: CalibrationProgress) -> None:
        self._current = progress
        if self._callback is not None:
            self._callback(progress)

    def start(self, name: str, message: str, *, total: int = 0) -> None:
        """Step ``name`` begins (``total`` units of work, 0 when not counted)."""
        self._send(
            CalibrationProgress(
                name, self.names.index(name) + 1, len(self.names), message, 0, total
            )
        )

    def advance(self, message: str, *, done: int | None = None, total: int | None = None) -> None:
        """The current step moves on: ``done`` units finished (unchanged when None)."""
        if self._current is None:
            raise RuntimeError("advance() before start(): start a step first")
        cur = self._current
        self._send(
            replace(
                cur,
                message=message,
                done=cur.done if done is None else done,
                total=cur.total if total is None else total,
            )
        )

    def say(self, message: str) -> None:
        """A message within the current step (before any step: the first one's)."""
        if self._current is None:
            self.start(self.names[0], message)
        else:
            self.advance(message)

    def relay(self, inner: CalibrationProgress) -> None:
        """A nested run's progress, renumbered as this run's step of the same name."""
        index = self.names.index(inner.step) + 1
        self._send(replace(inner, index=index, steps=len(self.names)))
