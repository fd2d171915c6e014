"""``qaeval --help`` and ``qaeval --version`` load none of the heavy libraries (issue 25).

Why: a newcomer's first command should answer at once; on a loaded 2-core machine importing
pandas, SQLAlchemy, scikit-learn and SciPy took ~5 s just to print help. The command modules
import the store and the library inside their commands; the option sets they list come from
:mod:`qaeval_core.vocabulary`. Checked in a fresh interpreter (this one has them all loaded).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "sqlalchemy", "sklearn", "scipy", "torch", "numpy")

#: Runs ``qaeval ARGS`` in a fresh interpreter and prints what it loaded as JSON.
PROBE = f"""
import contextlib, io, json, sys
from qaeval_core.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & {set(HEAVY)!r})
print(json.dumps({{"code": code, "loaded": loaded, "printed": out.getvalue()}}))
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"]], ids=["help", "version"])
def test_help_and_version_load_no_heavy_library(args: list[str]) -> None:
    probe = PROBE.replace(
        "json.loads(HEAVY)", repr(json.dumps(list(HEAVY))).join(["json.loads(", ")"])
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert ("Usage:" if args == ["--help"] else "qaeval ") in result["printed"]
    assert result["loaded"] == [], f"qaeval {' '.join(args)} imported {result['loaded']}"
