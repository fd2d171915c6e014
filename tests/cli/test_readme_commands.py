"""The README's command list runs (issue 32, item 7: its estimate recipe had failed).

Every line of the ```bash block under "## The command line" is run in order, in an empty
folder holding the default store (``.qaeval/qaeval.sqlite``), through the CLI's entry point;
each must exit 0. The block names only files that an earlier line writes, except the harness
log, a copy of a shipped fixture under the README's name. Optional parts (``[--port 8501]``)
are run too. Two lines need a stand-in: ``qaeval app`` would replace the process with
Streamlit (``os.execvpe`` is recorded instead), and ``qaeval user add`` / ``passwd`` ask for a
password (the prompt's answer is given). Slow: scoring and calibrating load models.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from qaeval_core.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HARNESS_LOG = ROOT / "tests/data/formats/lm_eval/acme__qa-small"
HARNESS_LOG = next(HARNESS_LOG.glob("samples_nq_local_*.jsonl"))


def readme_commands() -> list[str]:
    """The lines of the command-line block, comments removed."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## The command line\n\n```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no ```bash block under '## The command line'"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def argv(line: str) -> list[str]:
    """A README line as arguments: ``qaeval`` dropped, optional ``[...]`` parts kept."""
    words = shlex.split(line.replace("[", "").replace("]", ""))
    assert words[0] == "qaeval", line
    return words[1:]


def test_the_block_names_no_placeholder() -> None:
    for line in readme_commands():
        assert not re.search(r"\b(NAME|FILE|URL|D)\b", line), line


@pytest.mark.slow
def test_every_readme_command_runs_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    shutil.copy(HARNESS_LOG, tmp_path / "samples_nq_open_2025-01-01T00-00-00.jsonl")
    started: list[tuple] = []
    monkeypatch.setattr(os, "execvpe", lambda *args: started.append(args))
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": "a-long-Passw0rd!")
    for line in readme_commands():
        code = main(argv(line))
        captured = capsys.readouterr()
        assert code == 0, f"{line}\n{captured.out[-2000:]}\n{captured.err[-2000:]}"
    assert started and "streamlit" in started[0][1]
    assert (tmp_path / "estimates.json").exists() and (tmp_path / "check.xml").exists()
