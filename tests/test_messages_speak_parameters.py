"""Library errors speak of parameters; the CLI shows them as flags (issue 25).

Why: the app shows the library's messages to people who have no command line, so a message
naming ``--target-accuracy`` or telling them to run ``qaeval calibrate`` points nowhere. The
library names the parameter of the function its caller called and carries it as
``QAEvalError.param``; :mod:`qaeval_core.cli.flags` turns it into the flag the CLI user typed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

from qaeval_core.calibrate.options import CostPolicy
from qaeval_core.calibrate.triage import fit_band
from qaeval_core.cli.flags import cli_message, param_flags, with_flag
from qaeval_core.cli.main import app, main
from qaeval_core.errors import ConfigError, InputError, QAEvalError
from qaeval_core.judge.triage import check_share
from qaeval_core.workflows.calibration import calibrate_dataset

CORE = Path(__file__).resolve().parents[1] / "qaeval_core"

#: A command-line flag, or advice to run a qaeval command.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z_-]*")
COMMAND = re.compile(
    r"\bqaeval (?:calibrate|score|import|export|user|db|demo|report|estimate|check|metrics|app)\b"
)

#: Strings outside qaeval_core/cli/ that may quote a flag or a command: {(file, text): reason}.
ALLOWED = {
    ("io/formats/lm_eval.py", "--log_samples"): "lm-evaluation-harness's own flag, which writes "
    "the files this format reads",
    ("io/formats/lighteval.py", "--save-details"): "lighteval's own flag, which writes the files "
    "this format reads",
    ("judge/gold_check.py", "qaeval check"): "the JUnit test suite's name that CI systems show "
    "(kept from when the check lived in cli/check.py), not a message",
    ("store/scope.py", "qaeval db"): "the schema is upgraded by the operator's command "
    "(`qaeval db upgrade`); no app page or library caller can do it for the reader",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants (documentation may name the CLI; messages may not)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant in ``path`` (f-string parts included), docstrings and comments
    left out, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.append((node.lineno, node.value))
    return found


def test_no_library_message_names_a_cli_flag_or_command():
    offences = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        if rel.startswith("cli/"):
            continue  # the CLI speaks of its own flags
        for line, text in _message_strings(path):
            for pattern in (FLAG, COMMAND):
                for match in pattern.finditer(text):
                    if (rel, match.group(0)) not in ALLOWED:
                        offences.append(f"{rel}:{line}: {match.group(0)!r} in {text!r}")
    assert not offences, "library messages must name parameters, not flags:\n" + "\n".join(offences)


def test_the_allow_list_holds_only_strings_that_exist():
    for rel, text in ALLOWED:
        assert text in (CORE / rel).read_text(encoding="utf-8"), (rel, text)


# ----------------------------------------------------------------------------- the library


def test_a_bad_parameter_is_named_and_carried():
    curve = pd.DataFrame(
        {
            "share": [0.0, 0.1, 0.2],
            "threshold": [1.0, 0.4, 0.3],
            "combined_accuracy": [0.8, 0.85, 0.9],
            "confident_accuracy": [0.8, 0.84, 0.88],
        }
    )
    with pytest.raises(InputError, match=r"^target_accuracy must be in \(0, 1\]") as caught:
        fit_band(curve, target_accuracy=2)
    assert caught.value.param == "target_accuracy"
    with pytest.raises(InputError, match="lower target_accuracy") as caught:
        fit_band(curve, target_accuracy=0.99)
    assert caught.value.param == "target_accuracy"
    with pytest.raises(InputError, match=r"^human_share must be a number") as caught:
        check_share(1.5)
    assert caught.value.param == "human_share"


def test_a_workflow_names_its_own_parameter(sqlite_url: str):
    with pytest.raises(ConfigError, match=r"^inputs must be one of cheap, all") as caught:
        calibrate_dataset(sqlite_url, "any", cost_policy=CostPolicy(inputs="some"))
    assert caught.value.param == "inputs"
    assert "--" not in str(caught.value)


def test_param_is_optional_and_keyword_only():
    plain = ConfigError("something is off")
    assert plain.param is None and str(plain) == "something is off"
    assert InputError("x", param="seed").param == "seed"
    assert isinstance(InputError("x"), ValueError)


# ----------------------------------------------------------------------------- the CLI


def test_every_cli_option_name_means_one_flag():
    """The map is global: an option name spelled two ways would make it ambiguous."""
    import typer

    seen: dict[str, set[str]] = {}

    def walk(cmd) -> None:  # type: ignore[no-untyped-def]
        for p in cmd.params:
            if p.param_type_name == "option":
                seen.setdefault(p.name, set()).add(p.opts[0])
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    flags = param_flags(app)
    assert flags["target_accuracy"] == "--target-accuracy"
    assert flags["n_splits"] == "--folds" and flags["fmt"] == "--format"
    assert flags["map_"] == "--map" and flags["mapping"] == "--map"
    assert {name: opts for name, opts in seen.items() if len(opts) > 1} == {}


@pytest.mark.parametrize(
    ("message", "param", "shown"),
    [
        ("target_accuracy must be in (0, 1], got 2.", "target_accuracy", "--target-accuracy must"),
        ("`inputs` must be cheap or all.", "inputs", "--inputs must"),
        ("The share is bad.", "human_share", "The share is bad. (--human-share)"),
        ("x.human_share is 2; human_share must be < 1.", "human_share", "x.human_share is 2;"),
    ],
)
def test_with_flag_rewrites_only_the_parameter(message: str, param: str, shown: str):
    flag = param_flags(app)[param]
    assert shown in with_flag(message, param, flag)


def test_advice_to_pass_a_parameter_becomes_a_flag():
    flags = param_flags(app)
    exc = InputError("raise it or use every input (inputs='all'); n_most_uncertain=N; smile:w=1")
    assert cli_message(exc, flags) == (
        "raise it or use every input (--inputs all); n_most_uncertain=N; smile:w=1"
    )
    exc = QAEvalError("calibrate again (human_share=S)", param="human_share")
    assert cli_message(exc, flags) == "calibrate again (--human-share S)"


def test_the_cli_shows_the_flag_for_the_same_mistake(capsys, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    code = main(["calibrate", "-d", "x", "-o", str(tmp_path / "j.json"), "--human-share", "1.5"])
    err = capsys.readouterr().err
    assert code == 1
    assert "--human-share must be a number in [0, 1)" in err
    assert "human_share" not in err


def test_the_cli_shows_the_flag_of_an_import_option(capsys, sqlite_url: str, tmp_path: Path):
    data = tmp_path / "a.jsonl"
    data.write_text('{"question": "q", "references": ["a"], "candidate": "a"}\n')
    code = main(["import", str(data), "-d", "x", "--label-scale", "five", "--db", sqlite_url])
    err = capsys.readouterr().err
    assert code == 1 and "--label-scale must be one of" in err
