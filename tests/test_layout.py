"""The package's layout promises, checked on the source tree (one home per job).

* no import cycle among ``qaeval_core`` modules, counting imports inside functions too;
* ``sqlalchemy`` is imported only under ``qaeval_core/store/``;
* applying a saved judge loads neither the training code (``calibrate/``) nor the store;
* one JSON converter (``qaeval_core.jsonable``);
* a module over ~400 lines says in its docstring why it is one module;
* every package directory is listed in pyproject's ``packages`` (a wheel would miss it);
* no module imports another module's private (``_underscore``) name: what one module needs from
  another is public there, so its name says it is shared;
* one meaning per public name: no two modules define the same public name or share a module name,
  except where the sameness is intended (a protocol, one concept on several floors), listed in
  ``SAME_NAME_ALLOWED`` / ``SAME_MODULE_NAME_ALLOWED`` with the reason.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import qaeval_core

ROOT = Path(qaeval_core.__file__).resolve().parent
REPO = ROOT.parent
#: Lines above which a module must say why it is one module.
MAX_LINES = 400
LONG_MODULE_REASON = "Why it is one module"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            stack.append(child)


def _imported(name: str, path: Path, *, type_checking: bool = False) -> set[str]:
    """Absolute names of the modules ``name`` imports (a ``from pkg import sub`` of a
    submodule counts as importing the submodule)."""
    tree = ast.parse(path.read_text("utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nodes = (
        [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
        if type_checking
        else list(_import_nodes(tree))
    )
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            out.add(sub if sub in MODULES else base)
    return out


def _graph() -> dict[str, set[str]]:
    return {name: _imported(name, path) & MODULES.keys() for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing
    itself (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_in_the_core() -> None:
    assert _cycles(_graph()) == []


def test_no_private_name_is_imported_across_modules() -> None:
    private = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qaeval_core"):
                private += [
                    f"{name}: from {node.module} import {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert private == []


#: Public names defined in several modules on purpose, each with why the sameness is intended.
SAME_NAME_ALLOWED: dict[str, str] = {
    "NAME": "file-format protocol: every io/formats/<harness>.py names its format",
    "TITLE": "file-format protocol: every io/formats/<harness>.py titles its format",
    "detect": "file-format protocol: every io/formats/<harness>.py recognises its files",
    "read": "file-format protocol: every io/formats/<harness>.py reads its files",
    "version": "file-format protocol: the harness version a io/formats/<harness>.py log records",
    "add_commands": "CLI protocol: every cli/<group>.py adds its commands to the Typer app",
    "log": "each module's own logger, logging.getLogger(__name__)",
}

#: Module basenames used by several modules on purpose: one concept, one module per floor.
SAME_MODULE_NAME_ALLOWED: dict[str, str] = {
    "answer_knowledge": "taught answers: the store persists them, workflows join store + judge",
    "base": "a package's base classes: metrics/base.py (Metric), judge/combiners/base.py",
    "calibrate": "calibration: calibrate/ fits judges, cli/calibrate.py is `qaeval calibrate`",
    "cascade": "the cascade on its floor: calibrate fits it, judge applies it, workflows fit it "
    "on a stored dataset",
    "flags": "two words: store/flags.py keeps the flags annotators raise on items for review, "
    "cli/flags.py names the CLI's option flags after library parameters",
    "frames": "the analysis frames: store/frames.py reads them, analysis/frames.py builds",
    "guarantee": "the guarantee on its floor: calibrate fits it, judge applies it",
    "judge": "the judge package and its Judge class's module (judge/judge.py)",
    "knowledge": "taught answers: knowledge/ builds them, judge/knowledge.py applies them",
    "labels": "labels on their floor: io reads them from files, the store saves and reads them",
    "progress": "a calibration's progress: calibrate reports it, cli/progress.py draws it",
    "report": "the dataset report: analysis/report.py computes it, cli/report.py prints it",
    "triage": "triage on its floor: calibrate fits the band, judge applies it, workflows route",
    "users": "accounts: the store keeps them, cli/users.py is `qaeval user ...`",
}


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _defined_names(tree: ast.Module) -> Iterator[str]:
    """Names a module binds at top level by ``def``, ``class`` or assignment (also under
    a top-level ``if``/``try``, not under ``if TYPE_CHECKING:``); imports are not definitions."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody]
            todo += [stmt for handler in node.handlers for stmt in handler.body]


def _same_names() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(public name -> modules defining it, module basename -> modules) for repeated ones."""
    names: dict[str, set[str]] = {}
    basenames: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for defined in _defined_names(ast.parse(path.read_text("utf-8"))):
            if _is_public(defined):
                names.setdefault(defined, set()).add(name)
        base = name.rpartition(".")[2]
        if name != "qaeval_core" and _is_public(base):
            basenames.setdefault(base, []).append(name)
    return (
        {n: sorted(m) for n, m in sorted(names.items()) if len(m) > 1},
        {n: m for n, m in sorted(basenames.items()) if len(m) > 1},
    )


def test_the_name_finder_counts_definitions_not_imports() -> None:
    tree = ast.parse(
        "from x import A\nimport b\nB = 1\ndef c(): pass\nclass D: pass\n"
        "if TYPE_CHECKING:\n    E = 1\ntry:\n    F: int = 1\nexcept ImportError:\n    G = None\n"
    )
    assert sorted(_defined_names(tree)) == ["B", "D", "F", "G", "c"]


def test_one_meaning_per_public_name() -> None:
    """No two modules of the core define a public name (function, class, constant, type alias)
    or are named alike, unless the sameness is intended and listed with its reason: one concept
    has one name, and one name one concept (issue 25)."""
    names, basenames = _same_names()
    clashes = [
        f"{name}: {', '.join(modules)}"
        for name, modules in names.items()
        if name not in SAME_NAME_ALLOWED
    ]
    clashes += [
        f"module {base}: {', '.join(modules)}"
        for base, modules in basenames.items()
        if base not in SAME_MODULE_NAME_ALLOWED
    ]
    assert clashes == [], "same name, different modules (rename, or list it with a reason):\n" + (
        "\n".join(clashes)
    )
    stale = (SAME_NAME_ALLOWED.keys() - names.keys()) | (
        SAME_MODULE_NAME_ALLOWED.keys() - basenames.keys()
    )
    assert stale == set(), "allowed but no longer repeated: remove from the allow-list"


def test_sqlalchemy_is_imported_only_under_store() -> None:
    outside = {
        name: sorted(
            m
            for m in _imported(name, path, type_checking=True)
            if m == "sqlalchemy" or m.startswith("sqlalchemy.")
        )
        for name, path in MODULES.items()
        if not name.startswith("qaeval_core.store")
    }
    assert {name: mods for name, mods in outside.items() if mods} == {}


def test_judge_package_never_imports_the_training_side_or_the_store() -> None:
    judge = {n: g for n, g in _graph().items() if n.startswith("qaeval_core.judge")}
    reached, todo = set(judge), list(judge)
    graph = _graph()
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    banned = ("qaeval_core.calibrate", "qaeval_core.store", "qaeval_core.workflows")
    assert sorted(m for m in reached if m.startswith(banned)) == []


def _fit_toy_judge(tmp_path: Path) -> Path:
    from qaeval_core.calibrate import CrossValidation, feature_scores, fit_judge
    from qaeval_core.metrics.base import get_metric
    from qaeval_core.schema import Item

    rng = np.random.default_rng(0)
    items, y = [], []
    for i in range(80):
        ok = bool(rng.random() < 0.5)
        cand = "Paris" if ok else "Lyon"
        items.append(Item(question=f"capital {i}?", references=("Paris",), candidate=cand))
        y.append(ok)
    scores, _, specs = feature_scores(items, [get_metric("f1"), get_metric("em")])
    judge, _ = fit_judge(
        scores, np.array(y), specs, candidates=["stacker"], cv=CrossValidation(n_boot=50)
    )
    return judge.save(tmp_path / "judge.json")


def test_applying_a_saved_judge_loads_no_training_code_or_store(tmp_path: Path) -> None:
    config = _fit_toy_judge(tmp_path)
    frame = pd.DataFrame(
        {
            "question": ["capital?", "capital?"],
            "references": [["Paris"], ["Paris"]],
            "candidate": ["Paris", "Lyon"],
        }
    )
    data = tmp_path / "frame.json"
    frame.to_json(data, orient="records")
    code = f"""
import json, sys
import pandas as pd
from qaeval_core.judge import Judge
judge = Judge.from_config({str(config)!r})
out = judge.judge(pd.read_json({str(data)!r}, orient="records"))
loaded = sorted(m for m in sys.modules if m.startswith(("qaeval_core.calibrate",
    "qaeval_core.store", "qaeval_core.workflows", "sqlalchemy")))
print(json.dumps({{"loaded": loaded, "correct": out["judge_correct"].tolist()}}))
"""
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert result["correct"] == [True, False]


def test_one_json_converter() -> None:
    """No module but ``jsonable`` defines a JSON conversion (a ``*jsonable*`` function or a
    ``json.dumps(..., default=...)`` hook); everything else calls ``to_jsonable``."""
    offenders = []
    for name, path in MODULES.items():
        if name == "qaeval_core.jsonable":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef) and (
                "jsonable" in node.name or node.name in ("plain_value", "_numpy_default")
            ):
                offenders.append(f"{name}.{node.name}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "dumps"
                and any(k.arg == "default" for k in node.keywords)
            ):
                offenders.append(f"{name}:{node.lineno} json.dumps(default=...)")
    assert offenders == []


def test_long_modules_say_why_they_are_one_module() -> None:
    long = {}
    for name, path in MODULES.items():
        text = path.read_text("utf-8")
        n_lines = text.count("\n")
        if n_lines > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if LONG_MODULE_REASON not in doc:
                long[name] = n_lines
    assert long == {}, (
        f"over {MAX_LINES} lines without '{LONG_MODULE_REASON}: ...' in the docstring"
    )


def test_every_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = {
        _module_name(init)
        for top in ("qaeval_core", "app")
        for init in (REPO / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert on_disk - listed == set()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": np.float64(0.5), 3: np.int64(2)}, {"a": 0.5, "3": 2}),
        ([np.nan, float("inf"), None, pd.NA, pd.NaT], [None, None, None, None, None]),
        ((1, np.array([True, False])), [1, [True, False]]),
        (pd.Timestamp("2026-01-02T03:04:05"), "2026-01-02T03:04:05"),
        (pd.DataFrame({"x": [1.0, np.nan]}), [{"x": 1.0}, {"x": None}]),
        ({1}, [1]),
        (object, str(object)),
    ],
)
def test_to_jsonable_rules(value: object, expected: object) -> None:
    from qaeval_core.jsonable import to_jsonable

    assert to_jsonable(value) == expected
    json.dumps(to_jsonable(value), allow_nan=False)


def test_to_jsonable_strict_refuses_what_would_not_load_back() -> None:
    from qaeval_core.jsonable import to_jsonable

    assert to_jsonable({"w": [np.float32(0.25)]}, strict=True) == {"w": [0.25]}
    with pytest.raises(ValueError, match="non-finite"):
        to_jsonable({"w": float("nan")}, strict=True)
    with pytest.raises(TypeError, match="not JSON serializable"):
        to_jsonable({"w": object()}, strict=True)
    assert to_jsonable(object(), unknown=lambda _v: "x") == "x"


def test_the_scripts_benches_and_experiments_import_what_exists() -> None:
    """``scripts/``, ``bench/`` and ``experiments/`` are run by hand, not by the suite: a module
    moved or a name renamed in ``qaeval_core`` would break them unseen (it happened when
    ``metrics/_support`` was split). Every ``from qaeval_core... import name`` there must name a
    module that exists and a name it defines or imports (read from the source, nothing run)."""
    missing = []
    for folder in ("scripts", "bench", "experiments"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                    "qaeval_core"
                ):
                    continue
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                source = MODULES.get(node.module)
                if source is None:
                    missing.append(f"{where}: no module {node.module}")
                    continue
                tree = ast.parse(source.read_text("utf-8"))
                bound = set(_defined_names(tree)) | {
                    (alias.asname or alias.name).split(".")[0]
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Import | ast.ImportFrom)
                    for alias in n.names
                }
                submodules = {
                    m.rpartition(".")[2] for m in MODULES if m.startswith(node.module + ".")
                }
                lazy = "__getattr__" in bound
                for alias in node.names:
                    if alias.name not in bound | submodules and not lazy:
                        missing.append(f"{where}: {node.module} has no {alias.name}")
    assert missing == []


def test_the_tests_mirror_the_packages() -> None:
    """Each test folder is named after a package (``tests/store`` for ``qaeval_core/store``,
    ``tests/app/browser`` for the app in a browser), test file names are unique (pytest imports
    them by name), and no test imports another test file: shared helpers are ``tests/_*.py``."""
    tests = REPO / "tests"
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} | {"app"}
    folders = {
        p.parent.relative_to(tests).as_posix()
        for p in tests.rglob("test_*.py")
        if p.parent != tests
    }
    assert {f for f in folders if f.split("/")[0] not in packages} == set()
    assert {f for f in folders if "/" in f} <= {"app/browser"}
    names = [p.name for p in tests.rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    imports_of_tests = []
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("test_"):
                imports_of_tests.append(f"{path.relative_to(tests)}: {node.module}")
    assert imports_of_tests == []


#: The store's entities and the one function that resolves each by name (or id).
STORE_RESOLVERS = {
    "dataset": ("qaeval_core.store.datasets", "find_dataset"),
    "user": ("qaeval_core.store.users", "find_user"),
}


def _resolves_by_name(function: ast.FunctionDef, table: str) -> bool:
    """Whether ``function`` looks up one row of ``table`` by its ``name`` column: a
    ``<Table>.name == ...`` comparison and a NotFoundError saying "No <entity> ..." (a
    resolver; a permission check that refuses unknown names alike is not one)."""
    entity = f"No {table.lower()}"
    compares = any(
        isinstance(n, ast.Compare)
        and isinstance(n.left, ast.Attribute)
        and n.left.attr == "name"
        and isinstance(n.left.value, ast.Name)
        and n.left.value.id == table
        for n in ast.walk(function)
    )
    raises_not_found = any(
        isinstance(n, ast.Raise)
        and isinstance(n.exc, ast.Call)
        and isinstance(n.exc.func, ast.Name)
        and n.exc.func.id == "NotFoundError"
        and any(
            isinstance(c, ast.Constant) and str(c.value).startswith(entity)
            for arg in n.exc.args[:1]
            for c in ast.walk(arg)
        )
        for n in ast.walk(function)
    )
    return compares and raises_not_found


def test_the_store_is_grouped_by_entity_with_one_resolver_each() -> None:
    """The store is one module (or small package) per entity, not a folder per transaction
    style (``@own_transaction`` marks those functions), and each entity has one resolver by name,
    so a typo gets one wording whichever function was called (issue 34)."""
    store = ROOT / "store"
    assert not (store / "repo").exists() and not (store / "annotation").exists()
    resolvers: dict[str, list[str]] = {entity: [] for entity in STORE_RESOLVERS}
    tables = {"dataset": "Dataset", "user": "User"}
    for name, path in MODULES.items():
        if not name.startswith("qaeval_core.store"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef):
                for entity, table in tables.items():
                    if _resolves_by_name(node, table):
                        resolvers[entity].append(f"{name}.{node.name}")
    expected = {entity: [".".join(where)] for entity, where in STORE_RESOLVERS.items()}
    assert resolvers == expected, "resolve a dataset or user through its one resolver"


def test_the_resolver_finder_sees_a_second_resolver() -> None:
    tree = ast.parse(
        "def lookup(s, name):\n"
        "    found = s.scalar(select(User).where(User.name == name))\n"
        "    if found is None:\n"
        "        raise NotFoundError(f'No user {name!r}')\n"
        "    return found\n"
    )
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    assert _resolves_by_name(function, "User") and not _resolves_by_name(function, "Dataset")


#: The one home of each answer rule and of the number-word tables (docs/architecture.md).
RULE_HOMES = {"qaeval_core.text.answer_rules", "qaeval_core.text.numbers"}
#: What a refusal or hedge pattern holds ("don't know", "cannot be determined", "as an AI",
#: "either ... or", "or possibly"), searched in the strings a module compiles as regexes.
_RULE_PATTERN = re.compile(
    r"(?:don|do\s+not|do\\s\+not).{0,20}know|cannot(?:\s|\\s\+)be|as(?:\s|\\s\+)an(?:\s|\\s\+)ai"
    r"|either(?:\s|\\s\+)|or(?:\s|\\s\+)\(\?:possibly",
    re.I,
)
#: Three number words in a row ("seven eight nine", "seven|eight|nine"): a number-word table.
_NUMBER_WORD_RUN = re.compile(r"\bseven\W{1,3}eight\W{1,3}nine\b|\beleven\W{1,3}twelve\b", re.I)


def _rule_definitions(tree: ast.AST) -> list[str]:
    """The regex sources a module compiles that read like an answer rule, and the strings or
    dicts that spell a number-word table (docstrings aside)."""
    found = []
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "compile":
            source = " ".join(
                c.value
                for arg in node.args[:1]
                for c in ast.walk(arg)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
            if _RULE_PATTERN.search(source):
                found.append(f"line {node.lineno}: re.compile({source[:60]!r}...)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and _NUMBER_WORD_RUN.search(node.value):
                found.append(f"line {node.lineno}: {node.value[:60]!r}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if {"seven", "eight", "nine"} <= keys:
                found.append(f"line {node.lineno}: a dict of number words")
    return found


def test_the_rule_finder_finds_rules() -> None:
    copied = """
_HEDGES = re.compile(r"i\\s*(?:do not|don't|dont)\\s+know|cannot be (?:determined)")
_WORDS = "zero one two three four five six seven eight nine ten"
"""
    assert len(_rule_definitions(ast.parse(copied))) == 2
    assert _rule_definitions(ast.parse('"""I don\'t know: seven eight nine."""')) == []


def test_each_answer_rule_and_number_table_has_one_home() -> None:
    """Issue 34: refusal and hedge patterns live in text/answer_rules.py, number-word tables in
    text/numbers.py; every other module imports them (shape's no_hedge, the judge's outcomes,
    the robust profile, extract's answer kinds)."""
    copies = {
        name: found
        for name, path in MODULES.items()
        if name not in RULE_HOMES
        and (found := _rule_definitions(ast.parse(path.read_text("utf-8"))))
    }
    assert copies == {}
    for home in RULE_HOMES:
        assert _rule_definitions(ast.parse(MODULES[home].read_text("utf-8"))), home
