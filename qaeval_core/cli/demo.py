"""``qaeval demo`` (a ready store with the demo data) and ``qaeval app`` (start the web app).

The demo arrives scored with :data:`DEMO_METRICS`, the fast metrics (lexical ones and PANDA's
shipped model: well under a second for its 298 items on a laptop CPU), so the Explorer and the
Leaderboard have something to show at the first login; slower metrics (embeddings, LLMs) are
one click away on those pages or ``qaeval score --dataset``.

Why a second dataset (issue 32, item 9): every NQ301 item carries the study's imported labels,
so the loop the app is for (route the judge's doubtful items to people, draw by chance, teach
answers, estimate with an audit sample) had nothing to act on: Route said "Routed 0 of 63".
``qaeval demo`` therefore also makes :data:`LOOP_DATASET`, the first :data:`LOOP_ITEMS` answers
of the same file with the imported labels kept on every :data:`LOOP_LABEL_EVERY`-th item only
(enough to calibrate a judge and to suggest taught answers) and none on the rest, so routing,
drawing by chance and audit samples have unlabelled items to deal. ``--no-loop`` leaves it out.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from qaeval_core import io
from qaeval_core.cli.common import DbOption, console
from qaeval_core.errors import ConfigError, NotFoundError
from qaeval_core.vocabulary import FAST_METRICS

if TYPE_CHECKING:  # the store is imported where it is used: ``qaeval --help`` stays light
    from qaeval_core.store import ImportReport

DEMO_DATASET = "demo-nq301"
DEMO_FILE = "demo_nq301.jsonl"
DEMO_SOURCE = (
    "Kamalloo et al. 2023, NQ301 human judgments (github.com/ehsk/OpenQA-eval, MIT); "
    "see qaeval_core/data/LICENSE-demo_nq301.md"
)
ADMIN = "admin"
#: The demo dataset with unlabelled items (module docstring), its size and which items keep
#: their imported labels (every third: 40 of 120, spread over the questions in file order).
LOOP_DATASET = "demo-nq301-loop"
LOOP_ITEMS = 120
LOOP_LABEL_EVERY = 3
#: The metrics ``qaeval demo`` scores the demo with: the fast metrics (lexical and PANDA, no
#: model download; :data:`qaeval_core.vocabulary.FAST_METRICS`).
DEMO_METRICS = FAST_METRICS
#: Streamlit settings ``qaeval app`` passes on the command line, so the app behaves the same
#: whatever directory it is started from (Streamlit reads ``.streamlit/config.toml`` only from
#: the working directory; the checkout's copy says the same, a test keeps them equal).
APP_SETTINGS: dict[str, str] = {
    "server.headless": "true",
    "server.runOnSave": "false",
    "server.fileWatcherType": "none",
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "minimal",
}


def _stored_ids(url: str) -> set[str]:
    """Ids of the demo items already in the store. A refresh skips them rather than
    re-importing: stores made before the demo's text repair (13 rows had mojibake) keep their
    items, where a re-import would refuse them as "same id, different content"."""
    from qaeval_core import store

    if DEMO_DATASET not in {d.name for d in store.list_datasets(url)}:
        return set()
    with store.store_scope(url) as session:
        return set(store.frame_items(session, DEMO_DATASET)["external_id"].astype(str))


def score_demo(
    url: str, metrics: tuple[str, ...] = DEMO_METRICS, dataset: str = DEMO_DATASET
) -> int:
    """Score a demo dataset with ``metrics`` (items already scored are skipped); returns how
    many scores were computed now."""
    from qaeval_core.workflows.stored_scoring import score_dataset

    done = score_dataset(url, dataset, list(metrics))
    return sum(int(part["scored"]) for part in done.values())


def install_loop_dataset(url: str, *, score: bool = True) -> ImportReport | None:
    """Import :data:`LOOP_DATASET` (module docstring) unless the store has it; score it with
    :data:`DEMO_METRICS` unless ``score`` is False. Returns the import report, or None when it
    was there already."""
    from qaeval_core import store

    if LOOP_DATASET in {d.name for d in store.list_datasets(url)}:
        if score:
            score_demo(url, dataset=LOOP_DATASET)
        return None
    data = resources.files("qaeval_core.data").joinpath(DEMO_FILE).read_bytes()
    rows = io.read_items(data, name=DEMO_FILE)[:LOOP_ITEMS]
    rows = [
        row if i % LOOP_LABEL_EVERY == 0 else dataclasses.replace(row, labels=[])
        for i, row in enumerate(rows)
    ]
    report = store.import_items(url, LOOP_DATASET, rows, source=DEMO_SOURCE)
    if score:
        score_demo(url, dataset=LOOP_DATASET)
    return report


def install_demo(
    url: str, password: str = "admin", *, score: bool = True
) -> tuple[ImportReport, bool]:
    """Import the shipped demo dataset, score it with :data:`DEMO_METRICS` (unless ``score``
    is False) and create the admin account (all idempotent).

    Returns the import report and whether the admin account was created now. Its password is
    a temporary one: the app asks for a new one at the first login.
    """
    from qaeval_core import store

    data = resources.files("qaeval_core.data").joinpath(DEMO_FILE).read_bytes()
    rows = io.read_items(data, name=DEMO_FILE)
    stored = _stored_ids(url)
    new = [row for row in rows if row.external_id not in stored]
    if new or not stored:
        report = store.import_items(url, DEMO_DATASET, new, source=DEMO_SOURCE)
        report = dataclasses.replace(report, rows=len(rows), items_skipped=len(rows) - len(new))
    else:
        report = store.ImportReport(DEMO_DATASET, False, len(rows), 0, len(rows), 0, 0)
    if score:
        score_demo(url)
    try:
        store.get_user(url, ADMIN)
        return report, False
    except NotFoundError:
        store.add_user(url, ADMIN, "admin", password, must_change_password=True)
        return report, True


def app_main_path() -> Path:
    """The Streamlit entry file ``app/main.py`` of the installed ``app`` package."""
    spec = importlib.util.find_spec("app")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        main = Path(location) / "main.py"
        if main.is_file():
            return main
    raise ConfigError(
        "The qaeval web app (app/main.py) is not installed next to qaeval_core; "
        "reinstall qaeval (bash scripts/install.sh)."
    )


def _browser_host(host: str) -> str:
    return "localhost" if host in ("0.0.0.0", "::", "") else host


def add_commands(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        db: DbOption = None,
        password: Annotated[
            str, typer.Option(help="Password of the admin account when it is created.")
        ] = "admin",
        score: Annotated[
            bool,
            typer.Option(
                help=f"Score the demo with the fast metrics ({', '.join(DEMO_METRICS)}), so "
                "the Explorer and Leaderboard are ready."
            ),
        ] = True,
        loop: Annotated[
            bool,
            typer.Option(
                help=f"Also make {LOOP_DATASET}: {LOOP_ITEMS} of the answers, labels on one "
                f"in {LOOP_LABEL_EVERY} only, to try routing, drawing by chance and estimates."
            ),
        ] = True,
    ) -> None:
        """Create (or refresh) a store with the demo dataset, scored, and an admin account."""
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db)
        report, created = install_demo(url, password, score=score)
        safe = store_session._safe(url)
        console.print(f"Store: {safe}", markup=False, soft_wrap=True)
        console.print(report.summary(), markup=False, soft_wrap=True)
        if loop:
            looped = install_loop_dataset(url, score=score)
            if looped is not None:
                console.print(
                    f"{looped.summary()} Labels kept on one item in {LOOP_LABEL_EVERY}: the "
                    "rest wait for routing, drawing by chance or an audit sample.",
                    markup=False,
                    soft_wrap=True,
                )
        if score:
            console.print(
                f"Scored with the fast metrics: {', '.join(DEMO_METRICS)}.",
                markup=False,
                soft_wrap=True,
            )
        if created:
            shown = "admin" if password == "admin" else "the --password you gave"
            console.print(
                f"Admin account created: user 'admin', password {shown} "
                "(the app asks for a new one at the first login).",
                markup=False,
                soft_wrap=True,
            )
        else:
            console.print(
                "Admin account 'admin' already exists (password unchanged).", markup=False
            )
        db_arg = "" if db is None else f" --db {db}"
        console.print(
            f"Start the app with `qaeval app{db_arg}` and log in as 'admin'.",
            markup=False,
            soft_wrap=True,
        )

    @app.command("app")
    def run_app(
        db: DbOption = None,
        port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
        host: Annotated[str, typer.Option(help="Address to listen on.")] = "localhost",
    ) -> None:
        """Upgrade the store's schema and start the Streamlit app on it."""
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db)
        main = app_main_path()
        env = dict(os.environ, QAEVAL_DATABASE_URL=url)
        console.print(
            f"qaeval app on store {store_session._safe(url)}\n"
            f"Local URL: http://{_browser_host(host)}:{port}",
            markup=False,
            soft_wrap=True,
        )
        sys.stdout.flush()
        argv = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(main),
            "--server.port",
            str(port),
            "--server.address",
            host,
        ]
        for key, value in APP_SETTINGS.items():
            argv += [f"--{key}", value]
        os.execvpe(sys.executable, argv, env)
