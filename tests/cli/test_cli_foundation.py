"""Foundation commands (import, export, user, demo, app, --version); errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _paths import REPO_ROOT, TEST_DATA

from qaeval_core import store
from qaeval_core.cli import demo as demo_cli
from qaeval_core.cli.main import main

REPO = REPO_ROOT
DATA = TEST_DATA


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_and_help_list_every_command(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("qaeval ")
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("import", "export", "user", "demo", "app", "db"):
        assert f" {command} " in out


def test_help_shows_every_word_of_its_text(capsys, monkeypatch):
    """Help is rendered as markdown: brackets (``qaeval[distributed]``) are not eaten as rich
    markup, and a docstring's line breaks do not survive as ragged lines."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run(capsys, "score", "--help")
    assert code == 0
    assert "qaeval[distributed]" in out
    assert "FILE.scored.SUFFIX" in out
    code, out, _ = run(capsys, "calibrate", "--help")
    assert code == 0
    assert "a calibrated threshold on the best metric" in out  # one line, not the source's two


def test_import_then_reimport_then_export_every_format(capsys, db_url: str, tmp_path: Path):
    code, out, err = run(
        capsys, "import", str(DATA / "shared_form.jsonl"), "-d", "toy", "--db", db_url
    )
    assert code == 0, err
    assert "Dataset 'toy' (new dataset): 5 row(s) read; 5 item(s) added" in out
    code, out, _ = run(
        capsys, "import", str(DATA / "shared_form.jsonl"), "-d", "toy", "--db", db_url
    )
    assert code == 0
    assert "0 item(s) added, 5 already present, 0 label(s) added" in out
    for suffix in (".jsonl", ".csv", ".parquet"):
        target = tmp_path / f"toy{suffix}"
        code, out, err = run(capsys, "export", "-d", "toy", "-o", str(target), "--db", db_url)
        assert code == 0, err
        assert f"Wrote 5 items row(s) of 'toy' to {target}" in out
        code, out, err = run(capsys, "import", str(target), "-d", f"copy{suffix}", "--db", db_url)
        assert code == 0, err
        assert "5 item(s) added" in out and "10 label(s) added" in out
    for what in ("labels", "labels-history", "scores"):
        code, _, err = run(
            capsys,
            "export",
            "-d",
            "toy",
            "-o",
            str(tmp_path / f"{what}.csv"),
            "--what",
            what,
            "--db",
            db_url,
        )
        assert code == 0, err
    assert len((tmp_path / "labels.csv").read_text().splitlines()) == 1 + 10


def test_import_options_map_format_and_label_scale(capsys, sqlite_url: str, tmp_path: Path):
    src = tmp_path / "preds.txt"
    src.write_text(
        json.dumps({"q": "who", "truth": "a/b", "pred": "a", "label": 2}) + "\n", encoding="utf-8"
    )
    code, out, err = run(
        capsys,
        "import",
        str(src),
        "-d",
        "d",
        "--format",
        "jsonl",
        "--map",
        "q=question",
        "--map",
        "truth=references",
        "--label-scale",
        "three",
        "--alias-sep",
        "",
        "--db",
        sqlite_url,
    )
    assert code == 0, err
    items = store.list_items(sqlite_url, "d")
    assert items.references.tolist() == [["a/b"]]
    assert store.current_labels(sqlite_url, "d").value.tolist() == [2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "missing.jsonl", "-d", "x"], "No such file: missing.jsonl"),
        (["import", "data.xlsx", "-d", "x"], "suffix '.xlsx'"),
        (["import", str(DATA / "latin1_row.jsonl"), "-d", "x"], "row 2: undecodable bytes"),
        (["import", str(DATA / "long_format.tsv"), "-d", "x"], "is not binary 0/1"),
        (["import", str(DATA / "shared_form.jsonl"), "-d", "x", "--map", "oops"], "COLUMN=FIELD"),
        (["import", str(DATA / "shared_form.jsonl"), "-d", "x", "--map", "a=b"], "fields are"),
        (["import", str(DATA / "shared_form.jsonl"), "-d", "x", "--label-scale", "five"], "five"),
        (["export", "-d", "nope", "-o", "out.jsonl"], "No dataset named 'nope'"),
        (["export", "-d", "x", "-o", "out.xlsx"], "suffix '.xlsx'"),
        (["export", "-d", "x", "-o", "out.csv", "--what", "stuff"], "--what must be one of"),
        (["user", "add", "bob", "--role", "boss", "--password", "x"], "Unknown role 'boss'"),
        (["user", "add", "rater", "--role", "external", "--password", "x"], "take no password"),
        (["export", "-d", "x", "-o", "o.csv", "--db", "nosuch://"], "Invalid database URL"),
        (["import", str(DATA / "shared_form.jsonl"), "-d", "x", "--db", "nosuch://"], "nosuch"),
    ],
)
def test_user_errors_are_one_line_messages_with_exit_code_1(capsys, sqlite_url, args, message):
    if "--db" not in args:
        args = [*args, "--db", sqlite_url]
    code, _, err = run(capsys, *args)
    assert code == 1
    assert message in err
    assert "Traceback" not in err


def test_a_failed_import_changes_nothing(capsys, sqlite_url: str):
    run(capsys, "import", str(DATA / "shared_form.jsonl"), "-d", "x", "--db", sqlite_url)
    before = len(store.list_users(sqlite_url))
    code, _, err = run(
        capsys, "import", str(DATA / "latin1_row.jsonl"), "-d", "y", "--db", sqlite_url
    )
    assert code == 1 and "nothing was imported" in err
    assert [d.name for d in store.list_datasets(sqlite_url)] == ["x"]
    assert len(store.list_users(sqlite_url)) == before


def test_user_add_prompts_for_a_password_and_lists(capsys, monkeypatch, db_url: str):
    asked = []

    def fake_prompt(text: str, **kwargs: object) -> str:
        asked.append((text, kwargs.get("hide_input")))
        return "typed-pw"

    monkeypatch.setattr("qaeval_core.cli.users.typer.prompt", fake_prompt)
    code, out, err = run(capsys, "user", "add", "alice", "--role", "researcher", "--db", db_url)
    assert code == 0, err
    assert asked == [("Password for alice", True)]
    assert "Created researcher 'alice'" in out
    assert store.authenticate(db_url, "alice", "typed-pw") is not None
    code, _, _ = run(capsys, "user", "add", "ext", "--role", "external", "--db", db_url)
    assert code == 0 and len(asked) == 1  # no prompt for external raters
    code, _, err = run(capsys, "user", "add", "alice", "--password", "x", "--db", db_url)
    assert code == 1 and "already exists" in err
    code, out, _ = run(capsys, "user", "list", "--db", db_url)
    assert out.split() == ["alice", "researcher", "ext", "external"]


def test_demo_is_idempotent_and_prints_how_to_log_in(capsys, db_url: str):
    code, out, err = run(capsys, "demo", "--db", db_url)
    assert code == 0, err
    assert "Dataset 'demo-nq301' (new dataset): 298 row(s) read; 298 item(s) added" in out
    assert "user 'admin', password admin" in out
    assert "qaeval app" in out
    code, out, err = run(capsys, "demo", "--db", db_url, "--password", "other")
    assert code == 0, err
    assert "0 item(s) added, 298 already present, 0 label(s) added" in out
    assert "already exists (password unchanged)" in out
    assert store.authenticate(db_url, "admin", "admin").role == "admin"
    info = store.get_dataset(db_url, "demo-nq301")
    assert info.n_items == 298 and "Kamalloo" in (info.source or "")
    labels = store.current_labels(db_url, "demo-nq301")
    assert labels.user.nunique() == 3


def test_demo_creates_the_default_store_in_the_working_directory(capsys, tmp_path: Path):
    code, out, err = run(capsys, "demo", "--password", "pw")
    assert code == 0, err
    assert (tmp_path / ".qaeval" / "qaeval.sqlite").exists()


def test_app_upgrades_and_execs_streamlit_on_the_store(capsys, monkeypatch, tmp_path: Path):
    calls = []
    main_py = tmp_path / "main.py"
    main_py.write_text("")
    monkeypatch.setattr(demo_cli, "app_main_path", lambda: main_py)
    monkeypatch.setattr(os, "execvpe", lambda *a: calls.append(a))
    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    code, out, err = run(capsys, "app", "--db", url, "--port", "8765", "--host", "0.0.0.0")
    assert code == 0, err
    assert "Local URL: http://localhost:8765" in out
    [(exe, argv, env)] = calls
    assert argv[1:5] == ["-m", "streamlit", "run", str(main_py)]
    assert argv[argv.index("--server.port") + 1] == "8765"
    assert argv[argv.index("--server.address") + 1] == "0.0.0.0"
    assert argv[argv.index("--client.toolbarMode") + 1] == "minimal"
    assert argv[argv.index("--server.fileWatcherType") + 1] == "none"
    assert env["QAEVAL_DATABASE_URL"] == url
    assert store.list_datasets(url) == []  # the schema exists now


def test_app_settings_equal_the_checkouts_streamlit_config():
    """``streamlit run`` from the checkout and ``qaeval app`` from anywhere configure alike."""
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    flat = {
        f"{section}.{key}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, values in config.items()
        for key, value in values.items()
    }
    assert flat == demo_cli.APP_SETTINGS


def test_app_main_path_points_into_the_app_package():
    try:
        path = demo_cli.app_main_path()
    except Exception as exc:  # app/main.py is written by the app's owner
        assert "app/main.py" in str(exc)
    else:
        assert path.name == "main.py" and path.parent.name == "app"


def test_console_script_prints_no_traceback(tmp_path: Path):
    exe = Path(sys.executable).parent / "qaeval"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "qaeval_core.cli.main"]
    env = {k: v for k, v in os.environ.items() if k not in ("QAEVAL_DATABASE_URL", "QAEVAL_DEBUG")}
    bad = subprocess.run(
        [*cmd, "import", "nope.jsonl", "--dataset", "d", "--db", str(tmp_path / "s.sqlite")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert bad.returncode == 1
    assert "No such file: nope.jsonl" in bad.stderr and "Traceback" not in bad.stderr
    usage = subprocess.run([*cmd, "import"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
