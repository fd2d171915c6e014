"""One exception hierarchy for qaeval.

Every error a user can cause derives from :class:`QAEvalError`; the CLI and the app catch that
class and show its message (no traceback), so messages must say what was expected, what came,
and how to fix it.

Messages speak the library's language: a bad argument is named by the parameter of the function
the caller called (``target_accuracy must be in (0, 1]``), never by a command-line flag, since the
app's users have no flags. An error about one parameter also carries its name as
:attr:`QAEvalError.param`; the CLI turns that name into its flag in one place
(:mod:`qaeval_core.cli.flags`).
"""

from __future__ import annotations

from dataclasses import dataclass


class QAEvalError(Exception):
    """Base class for errors caused by user input or configuration.

    ``param`` (keyword only, optional) names the one parameter the error is about, exactly as
    the called function spells it and as the message writes it; ``None`` when the error is about
    data, the store or several things at once.
    """

    param: str | None = None

    def __init__(self, *args: object, param: str | None = None) -> None:
        super().__init__(*args)
        self.param = param


class ConfigError(QAEvalError):
    """A configuration (metric parameters, calibrated judge file, URL) is invalid."""


class InputError(QAEvalError, ValueError):
    """Data or a parameter handed to a function is not what it expects (shapes, label values,
    ranges). Also a :class:`ValueError`, as scikit-learn raises for the same mistakes, so
    ``except ValueError`` written against estimators keeps working."""


class NothingToDraw(InputError):
    """Drawing by chance found no unlabelled item among those the selection would route: a
    state of the data, not a mistake, which the Assign page reports as a notice (as routing
    none), while the CLI still prints it in one line and exits non-zero."""


class OptionError(ConfigError, InputError):
    """A field of one of the calibration's option objects (:mod:`qaeval_core.calibrate.options`)
    is out of its range; ``param`` names the field. Both a :class:`ConfigError` and an
    :class:`InputError`: the same values were refused as either before the options became
    objects (a workflow's configuration, a function's argument), and both still catch them."""


class StoreError(QAEvalError):
    """The store cannot do what was asked (unknown dataset, user, schema out of date...)."""


class StoreBusy(StoreError):
    """Another writer (a large import, a deal) held the store longer than we could wait.

    Nothing was written; the same action can simply be tried again.
    """


class NotFoundError(StoreError):
    """A named object (dataset, user, item, calibration) does not exist."""


class PermissionDenied(QAEvalError):
    """The current user's role does not allow the action."""


class ModelLoadError(QAEvalError):
    """A model could not be loaded from the given local path or hub name."""


class IncompleteRunError(QAEvalError):
    """A run finished, but some items got no verdict (an LLM endpoint failed on them): what
    worked was written or stored and cached, and the message says how many failed and why."""


@dataclass(frozen=True)
class RowError:
    """One invalid input row: 1-based row number (line for JSONL, data row for CSV/Parquet)."""

    row: int
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}: {self.reason}"


class ValidationError(QAEvalError):
    """An input file has invalid rows; nothing was imported. Carries every bad row."""

    def __init__(
        self,
        source: str,
        errors: list[RowError],
        *,
        limit: int = 50,
        outcome: str = "nothing was imported",
    ) -> None:
        self.source = source
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:limit])
        more = f"\n  ... and {len(errors) - limit} more" if len(errors) > limit else ""
        super().__init__(f"{source}: {len(errors)} invalid row(s); {outcome}.\n{shown}{more}")
