"""What each calibration input costs to compute: seconds per 1,000 rows, measured on this machine.

Why measured and never tabulated: an input's cost depends on the machine (cores, GPU), on the
rows (long answers cost the encoders more) and on the code (the embedding metrics are being
made faster), so a judge file records what was measured where it was calibrated, with the
machine, and ``qaeval calibrate`` uses those numbers to prefer cheap inputs
(:func:`qaeval_core.calibrate.select.select_inputs`).

How, so that it is honest and reproducible:

* **Families.** Each metric class declares its family (``Metric.family``). Inputs that load
  the same encoder form one family (``encoder:minilm``, declared as ``BY_MODEL``; an encoder
  backend whose vectors differ, ``encoder:minilm|onnx-int8``, is another): they
  share its load and, where the metrics reuse each other's encodings, its per-row work. The
  others declare a family of inputs that share tokenisation and normalisation (``lexical``,
  ``ngram``, ``vqa``, ``shape``, ``panda``, ``static``: the distilled MiniLM, which loads no
  encoder). Selection keeps or
  drops a family as a whole, so shared work is never counted twice or assumed away.
* **Cold rows, loaded models.** Each family is measured in a fresh Python process
  (``isolate=True``) whose cache folder holds the model and data folders of the real one
  (linked, so nothing is converted or copied again) but none of its per-string caches (the
  SQLite files: stored embeddings, SMILE's synthetic answers), so no work done earlier for
  these rows is reused. Inside it, per input in the family's order: a warm-up call on two
  synthetic items, timed as ``load_s`` (model load and first-call setup, reported apart), then
  the family's inputs over the sample in one :func:`~qaeval_core.scoring.run_jobs`, as a judge
  runs them (the encoder metrics share one encoding pass, paid by the first of them), each
  input timed as ``s_per_1000`` = seconds * 1000 / rows.
* **The sample** is the calibration's own items (at most ``sample`` of them, drawn with a
  seed), so the cost is that of rows like the ones the judge will see.

A family's cost is the sum of its inputs' ``s_per_1000`` measured that way (work shared inside
the family is paid once, by the first input that needs it). ``python -m
qaeval_core.calibrate.cost`` is the measuring child process (JSON in on stdin, out on stdout).

**Cached.** Measuring the encoder family cold takes minutes on a CPU, and the answer barely
changes between two calibrations on one machine, so each family's measurement is kept in
``<cache dir>/input_costs.json`` (``QAEVAL_CACHE_DIR``, else ``~/.cache/qaeval``) under a key
made of: the family's inputs (column, metric id, metric config hash: a changed parameter or
metric version is a new key), the machine (:func:`machine_key`: :func:`machine_info` without
the load and other volatile fields, plus whether a GPU is present), the qaeval version, and the
datasets the rows came from (costs per row follow text length: NQ's short answers are not
MMLU-Pro's). A later calibration reads the family back instead of spawning a process; the cost
table says which families came from the cache and when they were measured (``cached``), and
``remeasure=True`` (``qaeval calibrate --remeasure-costs``) measures again and overwrites.
In-process measurements (``isolate=False`` or a fallback) are never cached: caches filled
earlier in the process bias them.

Why it is one module: the cost record, the family rule and the measuring parent and child
share one format and one definition of "cost"; split, they would drift apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from qaeval_core.errors import InputError
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.metrics.base import BY_MODEL, Metric
from qaeval_core.schema import Item

__all__ = [
    "COST_UNIT",
    "CostTable",
    "InputCost",
    "COST_CACHE_FILE",
    "cost_cache_path",
    "cost_record",
    "input_family",
    "machine_info",
    "machine_key",
    "measure_costs",
]

#: What every cost number is.
COST_UNIT = "seconds per 1,000 rows"
#: The cost cache's file name, in the qaeval cache folder.
COST_CACHE_FILE = "input_costs.json"
#: Fields of :func:`machine_info` that change from run to run on one machine (not in the key).
_VOLATILE = ("loadavg_1min", "torch_threads", "cuda")
#: Format of the cache file; a file in another format is ignored (and rewritten). 2: encoder
#: families timed through one shared encoding pass (format-1 entries priced them ~1.5x high).
_CACHE_FORMAT = 2
#: Two synthetic items for the warm-up call (model load), unlike any real row.
_WARMUP = (
    Item("qaeval warm-up question one?", ("warm-up reference",), "warm-up answer"),
    Item("qaeval warm-up question two?", ("second warm-up reference",), "another answer"),
)


def input_family(metric: Metric) -> str:
    """The family an input is kept or dropped with (see the module docstring): the one its
    class declares (:attr:`~qaeval_core.metrics.base.Metric.family`), its id when it declares
    none. :data:`~qaeval_core.metrics.base.BY_MODEL` is keyed like the stored vectors
    (:func:`~qaeval_core.models.backends.store_key`): a backend whose vectors differ
    (``onnx-int8``) is a family of its own, priced apart, so selection can weigh the cheaper
    encoder against the float one."""
    family = metric.family or metric.id
    if family == BY_MODEL:
        model = getattr(metric, "model", None)
        if not (isinstance(model, str) and model):
            return metric.id
        from qaeval_core.models.backends import store_key

        backend = getattr(metric, "backend", None)  # an encoder's; an LLM has none of this kind
        return f"encoder:{store_key(model, backend if isinstance(backend, str) else None)}"
    return family


def machine_info() -> dict[str, Any]:
    """Where a cost was measured: CPU, core count, platform, Python, the load at the time."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        if names:
            info["cpu"] = names[0]
    except OSError:
        pass
    with contextlib.suppress(OSError):
        info["loadavg_1min"] = round(os.getloadavg()[0], 2)
    torch = sys.modules.get("torch")  # only if already loaded: never import it just for this
    if torch is not None:
        info["torch_threads"] = int(torch.get_num_threads())
        info["cuda"] = bool(torch.cuda.is_available())
    return info


def machine_key() -> dict[str, Any]:
    """The machine as the cost cache sees it: :func:`machine_info` without what changes between
    runs (load, torch's threads), plus whether an NVIDIA GPU is present (checked without
    importing torch: the encoder family costs a fraction on a GPU)."""
    info = {k: v for k, v in machine_info().items() if k not in _VOLATILE}
    info["gpu"] = any(Path(p).exists() for p in ("/dev/nvidiactl", "/dev/nvidia0"))
    return info


def _qaeval_version() -> str:
    try:
        from importlib.metadata import version

        return version("qaeval")
    except Exception:  # pragma: no cover - not installed (running from a checkout)
        return "unknown"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{where} must be a finite number, got {value!r}.")
    if value < 0:
        raise InputError(f"{where} must be >= 0, got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class InputCost:
    """One input's measured cost: per-row work and, apart, its cold load."""

    column: str
    family: str
    s_per_1000: float
    load_s: float = 0.0

    @classmethod
    def from_dict(cls, data: Any, where: str = "cost input") -> InputCost:
        if not isinstance(data, Mapping):
            raise InputError(f"{where} must be an object with column, family, s_per_1000.")
        column, family = data.get("column"), data.get("family")
        if not isinstance(column, str) or not column or not isinstance(family, str) or not family:
            raise InputError(f"{where}: column and family must be non-empty strings.")
        return cls(
            column,
            family,
            _number(data.get("s_per_1000"), f"{where}.s_per_1000"),
            _number(data.get("load_s", 0.0), f"{where}.load_s"),
        )


@dataclass(frozen=True)
class CostTable:
    """Measured costs of a calibration's inputs, and where and how they were measured."""

    inputs: tuple[InputCost, ...]
    rows: int = 0
    machine: dict[str, Any] = field(default_factory=dict)
    method: str = ""
    #: When the oldest of its measurements was taken (UTC, ISO 8601).
    measured_at: str = ""
    #: Families read back from the cost cache: family -> {"measured_at", "rows"} of the cached
    #: measurement (empty: everything was measured by this call).
    cached: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """``measured``, ``cache`` or ``cache and measured``: where the numbers came from."""
        if not self.cached:
            return "measured"
        return "cache" if set(self.cached) >= set(self.families()) else "cache and measured"

    def __post_init__(self) -> None:
        cols = [c.column for c in self.inputs]
        if len(set(cols)) != len(cols):
            raise InputError(f"A cost table names an input twice: {cols}.")

    @property
    def columns(self) -> list[str]:
        return [c.column for c in self.inputs]

    def families(self) -> dict[str, list[str]]:
        """Family -> its columns, families in order of first appearance."""
        out: dict[str, list[str]] = {}
        for c in self.inputs:
            out.setdefault(c.family, []).append(c.column)
        return out

    def family_costs(self) -> dict[str, float]:
        """Family -> seconds per 1,000 rows of computing all its inputs."""
        out: dict[str, float] = {}
        for c in self.inputs:
            out[c.family] = out.get(c.family, 0.0) + c.s_per_1000
        return out

    def cost_of(self, columns: Iterable[str]) -> float:
        """Seconds per 1,000 rows of the families the columns belong to (whole families: the
        measured cost of a family is not split between its members)."""
        return sum(self.family_costs()[f] for f in self.families_of(columns))

    def load_of(self, columns: Iterable[str]) -> float:
        """Cold load seconds of the families the columns belong to."""
        fams = set(self.families_of(columns))
        return sum(c.load_s for c in self.inputs if c.family in fams)

    def families_of(self, columns: Iterable[str]) -> list[str]:
        by_col = {c.column: c.family for c in self.inputs}
        cols = list(columns)
        missing = [c for c in cols if c not in by_col]
        if missing:
            raise InputError(
                f"No cost was measured for input(s) {missing}; measure every input the "
                "calibration uses (measure_costs on the same metric specs)."
            )
        return list(dict.fromkeys(by_col[c] for c in cols))

    def restrict(self, columns: Iterable[str]) -> CostTable:
        keep = set(columns)
        inputs = tuple(c for c in self.inputs if c.column in keep)
        fams = {c.family for c in inputs}
        return CostTable(
            inputs,
            self.rows,
            dict(self.machine),
            self.method,
            self.measured_at,
            {f: dict(v) for f, v in self.cached.items() if f in fams},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": COST_UNIT,
            "rows": self.rows,
            "machine": dict(self.machine),
            "method": self.method,
            "measured_at": self.measured_at,
            "source": self.source,
            "cached": {f: dict(v) for f, v in self.cached.items()},
            "inputs": [asdict(c) for c in self.inputs],
        }

    @classmethod
    def from_dict(cls, data: Any) -> CostTable:
        if not isinstance(data, Mapping) or not isinstance(data.get("inputs"), list):
            raise InputError("A cost table is an object with an 'inputs' list.")
        machine = data.get("machine") or {}
        if not isinstance(machine, Mapping):
            raise InputError("A cost table's machine must be an object.")
        rows = data.get("rows", 0)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise InputError(f"A cost table's rows must be a count, got {rows!r}.")
        cached = data.get("cached") or {}
        if not isinstance(cached, Mapping) or not all(
            isinstance(v, Mapping) for v in cached.values()
        ):
            raise InputError("A cost table's cached must map families to {measured_at, rows}.")
        return cls(
            tuple(
                InputCost.from_dict(x, f"cost.inputs[{i}]") for i, x in enumerate(data["inputs"])
            ),
            rows,
            dict(machine),
            str(data.get("method") or ""),
            str(data.get("measured_at") or ""),
            {str(f): dict(v) for f, v in cached.items()},
        )


def cost_record(
    costs: CostTable,
    columns: Sequence[str],
    used: Sequence[str],
    selection: Mapping[str, Any] | None,
    inputs_rule: str,
) -> dict[str, Any]:
    """A judge file's ``cost`` field (format in :mod:`qaeval_core.judge.config_file`): the costs of
    the calibration's ``columns``, what the judge's ``used`` columns cost, the selection."""
    return {
        **costs.restrict(columns).to_dict(),
        "inputs_rule": "all" if selection is None else inputs_rule,
        "judge_families": costs.families_of(used),
        "judge_s_per_1000": costs.cost_of(used),
        "judge_load_s": costs.load_of(used),
        "selection": None if selection is None else dict(selection),
    }


# -- measuring --------------------------------------------------------------------------------


def _time_family(
    specs: Sequence[tuple[str, Metric]], items: Sequence[Item]
) -> list[dict[str, Any]]:
    """Per input, in order: warm-up (load) seconds, then seconds over ``items``.

    The timed run is the judge's own: one :func:`~qaeval_core.scoring.run_jobs` over the
    family's inputs, so the encoder metrics share one encoding pass of their distinct strings
    (timing each ``score_batch`` alone encoded them once per metric and priced the MiniLM
    family ~1.5x too high). The shared pass runs before the first job and is counted in its
    time: work shared inside a family is paid once, by the first input.
    """
    from qaeval_core.scoring import ScoringJob, run_jobs

    loads = []
    for _column, metric in specs:
        t0 = time.perf_counter()
        metric.score_batch(list(_WARMUP))
        loads.append(time.perf_counter() - t0)
    jobs = [ScoringJob(column, metric, list(items)) for column, metric in specs]
    ends: dict[str, float] = {}
    t0 = time.perf_counter()
    results = run_jobs(
        jobs, on_result=lambda job, _res: ends.setdefault(job.label, time.perf_counter())
    )
    out, start = [], t0
    for (column, _metric), load in zip(specs, loads, strict=True):
        if len(results[column]) != len(items):
            raise RuntimeError(f"{column}: {len(results[column])} results for {len(items)} items.")
        out.append({"column": column, "load_s": load, "seconds": ends[column] - start})
        start = ends[column]
    return out


def _item_dict(it: Item) -> dict[str, Any]:
    return {
        "question": it.question,
        "references": list(it.references),
        "candidate": it.candidate,
        "context": it.context,
        "choices": None if it.choices is None else list(it.choices),
        "wrong_answers": None if it.wrong_answers is None else list(it.wrong_answers),
        "id": it.id,
        "dataset": it.dataset,
        "qa_model": it.qa_model,
    }


def _cold_cache_dir(real: Path) -> str:
    """A temporary cache folder with the real one's folders (models, data) linked in and none
    of its per-string caches (its files: the embedding and synthetic-answer SQLite stores)."""
    tmp = tempfile.mkdtemp(prefix="qaeval-cost-")
    if real.is_dir():
        for entry in real.iterdir():
            if entry.is_dir():
                os.symlink(entry, Path(tmp) / entry.name)
    return tmp


def _measure_isolated(
    specs: Sequence[tuple[str, Metric]], items: Sequence[Item], timeout: float | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from qaeval_core.caches.location import cache_dir

    payload = json.dumps(
        {
            "specs": [FeatureSpec.from_metric(m, c).to_dict() for c, m in specs],
            "items": [_item_dict(it) for it in items],
        }
    )
    tmp = _cold_cache_dir(cache_dir())
    env = dict(os.environ, QAEVAL_CACHE_DIR=tmp, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "qaeval_core.calibrate.cost"],
            input=payload,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise RuntimeError(f"Measuring input costs failed: {' | '.join(tail)}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["timings"], result["machine"]


def cost_cache_path() -> Path:
    """The cost cache file (``<qaeval cache dir>/input_costs.json``)."""
    from qaeval_core.caches.location import cache_dir

    return cache_dir() / COST_CACHE_FILE


def _cache_key(family: str, members: Sequence[tuple[str, Metric]], items: Sequence[Item]) -> str:
    """The cache key of one family's measurement (what goes into it: the module docstring)."""
    key = {
        "family": family,
        "inputs": [[column, m.id, m.config_hash()] for column, m in members],
        "machine": machine_key(),
        "qaeval": _qaeval_version(),
        "rows_from": sorted({it.dataset or "(unnamed)" for it in items}),
    }
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _read_cache(path: Path) -> dict[str, Any]:
    """The cached measurements by key; an unreadable or foreign file counts as empty (it is
    only a cache: the costs are measured again and the file rewritten)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _write_cache(path: Path, new: Mapping[str, Any]) -> None:
    """Merge ``new`` entries into the cache file (re-read first, so entries another process
    wrote meanwhile are kept; replaced atomically, so a reader never sees half a file)."""
    entries = {**_read_cache(path), **new}
    fd, tmp = tempfile.mkstemp(prefix=".input_costs.", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"format": _CACHE_FORMAT, "entries": entries}, fh, indent=1)
        os.replace(tmp, path)
    except OSError:  # a read-only cache folder: keep working, measure again next time
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _cached_timings(
    entry: Any, members: Sequence[tuple[str, Metric]]
) -> list[dict[str, Any]] | None:
    """A cache entry's per-input timings, or None when it does not fit these inputs."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("timings"), list):
        return None
    timings = entry["timings"]
    try:
        ok = [t["column"] for t in timings] == [c for c, _ in members] and all(
            float(t["per_row_s"]) >= 0 and float(t["load_s"]) >= 0 for t in timings
        )
    except (KeyError, TypeError, ValueError):
        return None
    return timings if ok else None


def measure_costs(
    specs: Sequence[tuple[str, Metric]],
    items: Sequence[Item],
    *,
    sample: int = 300,
    seed: int = 0,
    isolate: bool = True,
    timeout: float | None = 1800,
    cache: bool = True,
    remeasure: bool = False,
    progress: Any = None,
    on_family: Callable[[int, int], None] | None = None,
) -> CostTable:
    """Time every input on (a seeded sample of at most ``sample`` of) ``items``, family by
    family; see the module docstring. ``isolate=False`` measures in this process (faster,
    but caches filled earlier in it make inputs look cheaper: for tests and quick looks).

    With ``cache`` (and ``isolate``) a family measured before on this machine, with the same
    metric configurations, qaeval version and datasets, is read from the cost cache instead
    of measured; ``remeasure=True`` measures every family again and updates the cache.
    ``progress`` (a callable taking a message) hears which families are measured or cached;
    ``on_family(done, total)`` hears each family finished (measured or read from the cache).
    """
    say = progress or (lambda _msg: None)
    items = list(items)
    if not items:
        raise InputError("Cannot measure input costs on no items; pass the labelled items.")
    if sample < 1:
        raise InputError(f"sample must be >= 1 row, got {sample}.")
    if len(items) > sample:
        pick = np.sort(np.random.default_rng(seed).choice(len(items), sample, replace=False))
        items = [items[i] for i in pick]
    families: dict[str, list[tuple[str, Metric]]] = {}
    for column, metric in specs:
        families.setdefault(input_family(metric), []).append((column, metric))
    use_cache = cache and isolate
    path = cost_cache_path() if use_cache else None
    stored = _read_cache(path) if path is not None and not remeasure else {}
    n = len(items)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    per_row: dict[str, tuple[str, float, float]] = {}  # column -> family, s per row, load s
    machine: dict[str, Any] = {}
    fallbacks: list[str] = []
    cached: dict[str, dict[str, Any]] = {}
    fresh: dict[str, Any] = {}
    per_family_done: set[str] = set()
    for family, members in families.items():
        key = _cache_key(family, members, items) if use_cache else ""
        hit = _cached_timings(stored.get(key), members) if use_cache else None
        if hit is not None:
            entry = stored[key]
            cached[family] = {
                "measured_at": str(entry.get("measured_at", "")),
                "rows": int(entry.get("rows", 0)),
            }
            machine = machine or dict(entry.get("machine") or {})
            for t in hit:
                per_row[t["column"]] = (family, float(t["per_row_s"]), float(t["load_s"]))
            say(f"{family}: cost from the cache (measured {cached[family]['measured_at']}).")
            per_family_done.add(family)
            if on_family is not None:
                on_family(len(per_family_done), len(families))
            continue
        rows: list[dict[str, Any]] = []
        in_child = False
        if isolate:
            say(f"{family}: measuring its cost on {n} rows in a fresh process ...")
            try:
                rows, machine = _measure_isolated(members, items, timeout)
                in_child = True
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                # A metric registered only in this process (a plugin imported by hand) cannot be
                # rebuilt in a fresh one: measure it here and say so in the method.
                fallbacks.append(f"{family} measured in-process ({str(exc)[:120]})")
        if not rows:
            rows, machine = _time_family(members, items), machine_info()
        timings = [
            {"column": r["column"], "per_row_s": r["seconds"] / n, "load_s": r["load_s"]}
            for r in rows
        ]
        for t in timings:
            per_row[t["column"]] = (family, t["per_row_s"], t["load_s"])
        per_family_done.add(family)
        if on_family is not None:
            on_family(len(per_family_done), len(families))
        if use_cache and in_child:
            fresh[key] = {
                "family": family,
                "timings": timings,
                "rows": n,
                "machine": machine,
                "measured_at": now,
            }
    if fresh and path is not None:
        _write_cache(path, fresh)
    costs = tuple(
        InputCost(
            column,
            per_row[column][0],
            round(per_row[column][1] * 1000.0, 6),
            round(per_row[column][2], 6),
        )
        for column, _ in specs
    )
    rows_note = f"{n} calibration rows"
    if cached and any(v["rows"] != n for v in cached.values()):
        rows_note = "the calibration's rows (cached families: as many as when measured)"
    method = (
        f"each family in a fresh process, per-string caches empty; warm-up call on 2 synthetic "
        f"items (load_s), then one shared scoring pass (run_jobs) over {rows_note}"
        if isolate
        else f"in the calibrating process; warm-up call (load_s), then one shared scoring pass "
        f"over {n} rows"
    )
    if cached:
        method += f"; from the cost cache: {', '.join(cached)}"
    if fallbacks:
        method += "; " + "; ".join(fallbacks)
    times = [v["measured_at"] for v in cached.values() if v["measured_at"]]
    if len(cached) < len(families):
        times.append(now)
    return CostTable(costs, n, machine, method, min(times) if times else now, cached)


def _child() -> None:
    """The measuring process: specs and items on stdin, timings and machine on stdout."""
    data = json.loads(sys.stdin.read())
    specs = [
        (f.column, f.build())
        for f in (FeatureSpec.from_dict(x, f"specs[{i}]") for i, x in enumerate(data["specs"]))
    ]
    items = [
        Item(
            d["question"],
            tuple(d["references"]),
            d["candidate"],
            context=d.get("context"),
            choices=None if d.get("choices") is None else tuple(d["choices"]),
            wrong_answers=None if d.get("wrong_answers") is None else tuple(d["wrong_answers"]),
            id=d.get("id"),
            dataset=d.get("dataset"),
            qa_model=d.get("qa_model"),
        )
        for d in data["items"]
    ]
    timings = _time_family(specs, items)
    sys.stdout.write("\n" + json.dumps({"timings": timings, "machine": machine_info()}) + "\n")


if __name__ == "__main__":
    _child()
