"""The flag advice rewrites only parameter names the library wrote (issue 32, item 8): text the
library quotes (a HELM run folder, a log line, a path) keeps every character."""

from __future__ import annotations

import pytest

from qaeval_core.cli.flags import cli_message, param_flags
from qaeval_core.cli.main import app
from qaeval_core.errors import InputError, QAEvalError

HELM_RUN = "natural_qa:mode=closedbook,model=acme_qa-small"


@pytest.mark.parametrize(
    "message",
    [
        f"no scenario_state.json in {HELM_RUN!r}",
        f"/runs/v1/{HELM_RUN}/scenario_state.json: no requests",
        f"{HELM_RUN}: no requests",
        "row 3: the log says 'connect failed (port=443, model=gpt)'",
        'row 3: the log says "retry with port=443"',
    ],
)
def test_quoted_text_and_paths_are_not_rewritten(message: str) -> None:
    flags = param_flags(app)
    assert "model" in flags and "port" in flags  # both are flags: a rewrite would be possible
    assert cli_message(InputError(message), flags) == message


def test_the_errors_own_parameter_is_not_rewritten_inside_quoted_text() -> None:
    flags = param_flags(app)
    exc = QAEvalError(f"model {HELM_RUN!r} is not known", param="model")
    assert cli_message(exc, flags) == f"--model {HELM_RUN!r} is not known"


def test_library_advice_still_becomes_flags() -> None:
    flags = param_flags(app)
    exc = InputError("name the column (model='system') or pass label_scale='three'")
    assert cli_message(exc, flags) == "name the column (--model system) or pass --label-scale three"
