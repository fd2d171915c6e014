"""One home per statistic, one reader of the judge file (issue 34, items 3 and 4).

Two promises of docs/architecture.md a machine can check:

* **No second definition of a shared statistic.** The Wilson interval, the logit, the majority
  vote and Cohen's kappa live in :mod:`qaeval_core.stats`. Elsewhere in ``qaeval_core`` and
  ``app`` a function whose name says it computes one of them must be listed in
  :data:`NAMED_WRAPPERS` with its reason *and* call the stats function it names; and no module
  but ``stats`` calls the libraries they wrap (``cohen_kappa_score``, scipy's ``proportion_ci``,
  statsmodels' ``proportion_confint``) or writes the logit out (``log(p / (1 - p))``).
* **No view or CLI command walks the judge file.** The pages (``app/``) and the CLI
  (``qaeval_core/cli/``) read a judge file through
  :func:`qaeval_core.judge.file_summary.judge_summary` (or the :class:`Judge` itself). Detected
  as: a subscript or ``.get(...)`` of an object named ``config`` or of an attribute ``.config``
  (a saved calibration's raw JSON), or with a string key that names a part of the judge file
  (:data:`JUDGE_FILE_KEYS`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import qaeval_core

ROOT = Path(qaeval_core.__file__).resolve().parent
REPO = ROOT.parent
STATS = ROOT / "stats.py"

#: The statistics with one home, by a word their function names carry.
CONCEPTS = ("wilson", "logit", "kappa", "majority")

#: Functions outside ``stats`` whose names carry one of :data:`CONCEPTS`, each with why it is
#: not a second definition and the stats function it must call.
NAMED_WRAPPERS: dict[tuple[str, str], tuple[str, str]] = {
    ("qaeval_core/judge/triage.py", "score_logit"): (
        "logit",
        "names the clip a saved judge applies to combiner scores (SCORE_EPS)",
    ),
    ("qaeval_core/judge/cascade.py", "llm_logit"): (
        "logit",
        "names the clip a saved cascade applies to LLM probabilities (LLM_EPS)",
    ),
    ("qaeval_core/analysis/agreement.py", "pairwise_kappa"): (
        "cohen_kappa",
        "the kappa of every pair of raters: a table, not a kappa",
    ),
    ("app/views/agreement.py", "_kappa_heatmap"): (
        "",
        "a chart of kappas it is given; computes none",
    ),
}

#: Library calls that compute a shared statistic: only ``stats`` makes them.
WRAPPED_CALLS = ("cohen_kappa_score", "proportion_ci", "proportion_confint")

#: Keys of the judge file's parts (docs: :mod:`qaeval_core.judge.judge`) that only the judge
#: package reads: top-level parts, and the fields pages showed from them.
JUDGE_FILE_KEYS = frozenset(
    {
        "quality",
        "fitted_on",
        "triage",
        "cascade",
        "guarantee",
        "knowledge",
        "checksum",
        "schema_version",
        "cv_accuracy_ci",
        "winner",
        "llm_seconds_per_item",
        "judge_s_per_1000",
        "judge_load_s",
        "inputs_rule",
        "evaluated",
    }
)


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py") if "migrations" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            f = call.func
            names.add(f.id if isinstance(f, ast.Name) else getattr(f, "attr", ""))
    return names


def _writes_out_logit(node: ast.AST) -> bool:
    """``log(x / (1 - x))``: a call of ``log`` on a division whose divisor is ``1 - x``."""
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and call.args):
            continue
        name = getattr(call.func, "attr", getattr(call.func, "id", ""))
        arg = call.args[0]
        if (
            name == "log"
            and isinstance(arg, ast.BinOp)
            and isinstance(arg.op, ast.Div)
            and isinstance(arg.right, ast.BinOp)
            and isinstance(arg.right.op, ast.Sub)
            and isinstance(arg.right.left, ast.Constant)
            and arg.right.left.value == 1
            and ast.dump(arg.right.right) == ast.dump(arg.left)
        ):
            return True
    return False


def second_definitions(paths: list[Path]) -> list[str]:
    """Where a shared statistic is defined or computed outside ``stats`` (module docstring)."""
    found = []
    for path in paths:
        if path == STATS:
            continue
        rel = _rel(path)
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if not any(c in node.name.lower() for c in CONCEPTS):
                    continue
                listed = NAMED_WRAPPERS.get((rel, node.name))
                if listed is None:
                    found.append(f"{rel}: def {node.name} (a second definition?)")
                elif listed[0] and listed[0] not in _called_names(node):
                    found.append(f"{rel}: {node.name} does not call stats.{listed[0]}")
        called = _called_names(tree) & set(WRAPPED_CALLS)
        found += [f"{rel}: calls {name}" for name in sorted(called)]
        if _writes_out_logit(tree):
            found.append(f"{rel}: writes out log(p / (1 - p))")
    return found


def test_the_finder_finds_second_definitions(tmp_path: Path) -> None:
    bad = REPO / "qaeval_core" / "_one_home_probe.py"
    text = (
        "import numpy as np\n"
        "from sklearn.metrics import cohen_kappa_score\n"
        "def _wilson(k, n): return k / n\n"
        "def f(p): return np.log(p / (1 - p))\n"
        "def g(a, b): return cohen_kappa_score(a, b)\n"
    )
    try:
        bad.write_text(text, "utf-8")
        found = second_definitions([bad])
    finally:
        bad.unlink()
    assert any("def _wilson" in f for f in found)
    assert any("calls cohen_kappa_score" in f for f in found)
    assert any("log(p / (1 - p))" in f for f in found)


def test_no_second_definition_of_a_shared_statistic() -> None:
    assert second_definitions(_modules(ROOT, REPO / "app")) == []


def test_every_listed_wrapper_still_exists() -> None:
    for (rel, name), _ in NAMED_WRAPPERS.items():
        tree = ast.parse((REPO / rel).read_text("utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in names, f"{rel}: {name} is listed in NAMED_WRAPPERS but gone"


def _subscripted_key(node: ast.AST) -> tuple[ast.AST, str | None] | None:
    """``(object, key)`` of ``obj[...]`` or ``obj.get(...)`` (key None unless a string)."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        return node.value, key.value if isinstance(key, ast.Constant) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
    ):
        key = node.args[0]
        return node.func.value, key.value if isinstance(key, ast.Constant) else None
    return None


def judge_file_reads(paths: list[Path]) -> list[str]:
    """Where a view or CLI module reads the judge file by hand (module docstring)."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            read = _subscripted_key(node)
            if read is None:
                continue
            obj, key = read
            raw = (isinstance(obj, ast.Name) and obj.id == "config") or (
                isinstance(obj, ast.Attribute) and obj.attr == "config"
            )
            if raw or (isinstance(key, str) and key in JUDGE_FILE_KEYS):
                found.append(f"{_rel(path)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_finder_finds_judge_file_reads(tmp_path: Path) -> None:
    probe = REPO / "app" / "_one_home_probe.py"
    probe.write_text(
        "def f(c, tier, config):\n"
        "    a = c.config.get('name')\n"
        "    b = tier['llm_seconds_per_item']\n"
        "    return config['anything'], a, b, {'triage': 1}\n",
        "utf-8",
    )
    try:
        found = judge_file_reads([probe])
    finally:
        probe.unlink()
    assert len(found) == 3, found  # the dict literal's key is not a read


@pytest.mark.parametrize("where", ["app", "qaeval_core/cli"])
def test_no_view_or_cli_module_reads_judge_file_keys(where: str) -> None:
    assert judge_file_reads(_modules(REPO / where)) == []
