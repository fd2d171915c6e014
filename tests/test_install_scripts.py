"""scripts/install.sh and scripts/start.sh (issue 33, items 5 and 7): a wheel builds without
setuptools' "Package would be ignored" banners, every long step says it is still working, and
``start.sh --with-llm`` installs the ``[llm]`` extra.

The scripts are run against stand-ins (a fake ``install.sh`` and ``.venv/bin/qaeval`` in a
temporary checkout): the real install downloads gigabytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"


def test_the_wheel_builds_without_package_would_be_ignored_banners(tmp_path: Path) -> None:
    """The banners came from data-only folders (data/crossjudge, migrations/versions) missing
    from pyproject's ``packages``: 80 lines that looked like a broken install."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "build", "*.egg-info")
    for name in ("qaeval_core", "migrations", "app"):
        shutil.copytree(REPO_ROOT / name, src / name, ignore=ignore, symlinks=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    link = src / "qaeval_core" / "migrations"  # a developer's symlink, never part of the build
    if link.is_symlink():
        link.unlink()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-2000:]
    assert "would be ignored" not in log and "absent from the `packages`" not in log, log
    (wheel,) = (tmp_path / "dist").glob("qaeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "qaeval_core/data/crossjudge/delta.safetensors" in names
    assert "qaeval_core/data/crossjudge/meta.json" in names
    assert "qaeval_core/migrations/versions/0001_initial_schema.py" in names
    assert "qaeval_core/migrations/script.py.mako" in names


def _bash(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def test_a_quiet_step_says_it_is_still_working_and_keeps_its_exit_status() -> None:
    steps = SCRIPTS / "steps.sh"
    done = _bash(
        f"source {steps}; step 4 5 'qaeval'; with_heartbeat 'installing qaeval' sleep 2.5",
        {"QAEVAL_HEARTBEAT_S": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "==> [4/5] qaeval" in done.stdout
    assert "... still installing qaeval (" in done.stdout
    failed = _bash(f"source {steps}; with_heartbeat 'x' bash -c 'exit 3'; echo rc=$?")
    assert "rc=3" in failed.stdout


def _fake_checkout(tmp_path: Path) -> Path:
    """A checkout whose install.sh and qaeval only report what they were asked."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPTS / "start.sh", root / "scripts" / "start.sh")
    (root / "scripts" / "install.sh").write_text('echo "EXTRAS=$QAEVAL_EXTRAS"\n')
    qaeval = root / ".venv" / "bin" / "qaeval"
    qaeval.parent.mkdir(parents=True)
    qaeval.write_text('#!/usr/bin/env bash\necho "qaeval $*"\n')
    qaeval.chmod(0o755)
    return root


def test_start_with_llm_installs_the_llm_extra(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path)
    base = {k: v for k, v in os.environ.items() if k != "QAEVAL_EXTRAS"}
    done = subprocess.run(
        ["bash", str(root / "scripts" / "start.sh"), "--with-llm", "--server.port", "9"],
        capture_output=True,
        text=True,
        check=False,
        env=base,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "EXTRAS=models,postgres,onnx,dev,llm" in done.stdout
    assert "qaeval app --server.port 9" in done.stdout  # --with-llm is not passed on
    # Without a terminal to ask in, and without the flag, the LLM is left out.
    plain = subprocess.run(
        ["bash", str(root / "scripts" / "start.sh")],
        capture_output=True,
        text=True,
        check=False,
        env=base,
        stdin=subprocess.DEVNULL,
    )
    assert plain.returncode == 0, plain.stderr
    assert "EXTRAS=models,postgres,onnx,dev\n" in plain.stdout
    assert "qaeval demo" in plain.stdout and "qaeval app" in plain.stdout
