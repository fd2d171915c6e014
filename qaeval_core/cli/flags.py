"""Library parameters to command-line flags: the one place the CLI translates an error.

The library names a bad argument by the parameter of the function the caller called
(``target_accuracy must be in (0, 1]``) and carries that name as
:attr:`~qaeval_core.errors.QAEvalError.param`; the app's users have no flags, so the library
never writes one. The CLI's error boundary (:func:`qaeval_core.cli.main.main`) prints
:func:`cli_message` instead of the bare message, which speaks of the flag the user typed.

The scheme, kept simple so that it cannot garble a message:

* the flag of a parameter is read from the Typer options themselves (the option whose Python
  name is the parameter, e.g. ``target_accuracy`` -> ``--target-accuracy``), plus
  :data:`LIBRARY_NAMES` for the few library parameters the CLI spells differently
  (``n_splits`` is ``--folds``);
* the error's own ``param``: each whole-word occurrence of it in the message (optionally in
  backticks, not part of a longer identifier, flag or dotted name) becomes the flag; when the
  message does not spell it, `` (--flag)`` is appended, so the user still learns which flag to
  change;
* advice to pass another parameter is written ``name=value`` with a plain value (a word, a
  number, ``S``, ``...``, or one of those quoted); for any ``name`` with a flag, in any error
  (also the row errors of a :class:`~qaeval_core.errors.ValidationError`), that becomes
  ``--flag value``;
* everything else is printed as it is (a parameter without a flag keeps its library name);
* **text the library quotes is never rewritten** (issue 32, item 8): a quoted span (``'...'`` or
  ``"..."`` not right after ``=``, the way errors show a value with ``!r``) and a path (a word
  holding ``/`` or ``\\``) keep every character, and advice must start a word (after a space,
  ``(``, ``[`` or a backtick), so ``model=`` inside a HELM run folder name
  (``natural_qa:mode=closedbook,model=acme``) or ``port=443`` in a quoted log line stays text.
"""

from __future__ import annotations

import re
from typing import Any

from qaeval_core.errors import QAEvalError

#: Library parameter names whose CLI option has another Python name: {parameter: flag}.
LIBRARY_NAMES: dict[str, str] = {
    "n_splits": "--folds",
    "knowledge": "--with-knowledge",
    "remeasure": "--remeasure-costs",
    "fmt": "--format",
    "format": "--format",
    "column_map": "--map",
    "prompt": "--llm-prompt",
    "mapping": "--map",
}

#: ``name=value`` advice: an identifier (not part of a longer name, flag, dotted name or metric
#: spec) and a plain or quoted simple value.
_ADVICE = re.compile(
    r"(?:(?<=[\s(\[`])|^)([a-z][a-z0-9_]*)=(?:'([\w.|/-]*)'|\"([\w.|/-]*)\"|([\w.|/-]+))"
)
#: Spans the CLI never rewrites: quoted text (a quote not right after ``=`` or a letter, up to
#: the same quote) and paths (a word holding a slash or backslash).
_KEEP = re.compile(r"(?<![=\w])'[^']*'(?!\w)|(?<![=\w])\"[^\"]*\"(?!\w)|[^\s'\"]*[/\\][^\s'\"]*")


def _outside_kept(message: str, rewrite: Any) -> tuple[str, int]:
    """``rewrite(text) -> (text, count)`` applied to the parts of ``message`` outside
    :data:`_KEEP` spans; the kept spans come back unchanged. Returns the text and the count."""
    out: list[str] = []
    total, end = 0, 0
    for match in _KEEP.finditer(message):
        text, count = rewrite(message[end : match.start()])
        out += [text, match.group(0)]
        total, end = total + count, match.end()
    text, count = rewrite(message[end:])
    return "".join([*out, text]), total + count


def option_flags(command: Any) -> dict[str, str]:
    """``{parameter: flag}`` for every option of a click/Typer command tree (its first long
    flag, else its first one). The CLI's option names are unique across commands (each name
    means one flag everywhere), which ``tests/cli/test_cli_foundation.py`` checks."""
    flags: dict[str, str] = {}

    def walk(cmd: Any) -> None:
        for param in getattr(cmd, "params", []):
            if getattr(param, "param_type_name", None) != "option" or not param.name:
                continue
            long = [opt for opt in param.opts if opt.startswith("--")]
            flags.setdefault(param.name, (long or param.opts)[0])
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(command)
    return flags


def param_flags(app: Any) -> dict[str, str]:
    """``{parameter: flag}`` for a Typer app: its options' names, then :data:`LIBRARY_NAMES`."""
    import typer

    return {**option_flags(typer.main.get_command(app)), **LIBRARY_NAMES}


def with_flag(message: str, param: str, flag: str) -> str:
    """``message`` speaking of ``flag`` where it names ``param`` (see the module's scheme)."""
    pattern = re.compile(rf"`?(?<![\w.\-,:]){re.escape(param)}(?![\w\-])(=?)`?")
    rewritten, count = _outside_kept(
        message, lambda text: pattern.subn(lambda m: flag + (" " if m.group(1) else ""), text)
    )
    if count or flag in message:
        return rewritten
    return f"{message.rstrip()} ({flag})"


def advice_with_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with every ``name=value`` whose name has a flag written ``--flag value``."""

    def flagged(match: re.Match[str]) -> str:
        flag = flags.get(match.group(1))
        if flag is None:
            return match.group(0)
        value = next(v for v in match.groups()[1:] if v is not None)
        return f"{flag} {value}"

    return _outside_kept(message, lambda text: _ADVICE.subn(flagged, text))[0]


def cli_message(exc: QAEvalError, flags: dict[str, str]) -> str:
    """The message of a library error as the CLI prints it: its parameters shown as flags."""
    message = advice_with_flags(str(exc), flags)
    flag = flags.get(exc.param) if exc.param else None
    return with_flag(message, exc.param, flag) if exc.param and flag else message
