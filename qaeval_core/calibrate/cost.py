"""What each calibration input costs to compute: seconds per 1,000 rows, measured on this machine.

Why measured and never tabulated: an input's cost depends on the machine (cores, GPU), on the
rows (long answers cost the encoders more) and on the code (the embedding metrics are being
made faster), so a judge file records what was measured where it was calibrated, with the
machine, and ``qaeval calibrate`` uses those numbers to prefer cheap inputs
(:func:`qaeval_core.calibrate.select.select_inputs`).

How, so that it is honest and reproducible:

* **Families.** Inputs that load the same encoder form one family (``encoder:minilm``): they
  share its load and, where the metrics reuse each other's encodings, its per-row work. The
  other inputs are grouped by the module that computes them (``lexical``, ``ngram``, ``vqa``,
  ``shape``, ``panda``), whose members share tokenisation and normalisation. Selection keeps or
  drops a family as a whole, so shared work is never counted twice or assumed away.
* **Cold rows, loaded models.** Each family is measured in a fresh Python process
  (``isolate=True``) whose cache folder holds the model and data folders of the real one
  (linked, so nothing is converted or copied again) but none of its per-string caches (the
  SQLite files: stored embeddings, SMILE's synthetic answers), so no work done earlier for
  these rows is reused. Inside it, per input in the family's order: a warm-up call on two
  synthetic items, timed as ``load_s`` (model load and first-call setup, reported apart), then
  one ``score_batch`` over the sample, timed as ``s_per_1000`` = seconds * 1000 / rows.
* **The sample** is the calibration's own items (at most ``sample`` of them, drawn with a
  seed), so the cost is that of rows like the ones the judge will see.

A family's cost is the sum of its inputs' ``s_per_1000`` measured that way (work shared inside
the family is paid once, by the first input that needs it). ``python -m
qaeval_core.calibrate.cost`` is the measuring child process (JSON in on stdin, out on stdout).

Why it is one module: the cost record, the family rule and the measuring parent and child
share one format and one definition of "cost"; split, they would drift apart.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from qaeval_core.errors import InputError
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.metrics.base import Metric
from qaeval_core.schema import Item

__all__ = [
    "COST_UNIT",
    "CostTable",
    "InputCost",
    "cost_record",
    "input_family",
    "machine_info",
    "measure_costs",
]

#: What every cost number is.
COST_UNIT = "seconds per 1,000 rows"
#: Two synthetic items for the warm-up call (model load), unlike any real row.
_WARMUP = (
    Item("qaeval warm-up question one?", ("warm-up reference",), "warm-up answer"),
    Item("qaeval warm-up question two?", ("second warm-up reference",), "another answer"),
)


def input_family(metric: Metric) -> str:
    """The family an input is kept or dropped with (see the module docstring)."""
    model = getattr(metric, "model", None)
    if getattr(metric, "needs_models", False) and isinstance(model, str) and model:
        return f"encoder:{model}"
    return type(metric).__module__.rsplit(".", 1)[-1]


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
    measured_at: str = ""

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
        return CostTable(
            tuple(c for c in self.inputs if c.column in keep),
            self.rows,
            dict(self.machine),
            self.method,
            self.measured_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": COST_UNIT,
            "rows": self.rows,
            "machine": dict(self.machine),
            "method": self.method,
            "measured_at": self.measured_at,
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
        return cls(
            tuple(
                InputCost.from_dict(x, f"cost.inputs[{i}]") for i, x in enumerate(data["inputs"])
            ),
            rows,
            dict(machine),
            str(data.get("method") or ""),
            str(data.get("measured_at") or ""),
        )


def cost_record(
    costs: CostTable,
    columns: Sequence[str],
    used: Sequence[str],
    selection: Mapping[str, Any] | None,
    inputs_rule: str,
) -> dict[str, Any]:
    """A judge file's ``cost`` field (format in :mod:`qaeval_core.judge.judge`): the costs of
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
    """Per input, in order: warm-up (load) seconds, then seconds over ``items``."""
    out = []
    for column, metric in specs:
        t0 = time.perf_counter()
        metric.score_batch(list(_WARMUP))
        load = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = metric.score_batch(list(items))
        seconds = time.perf_counter() - t0
        if len(res) != len(items):
            raise RuntimeError(f"{column}: {len(res)} results for {len(items)} items.")
        out.append({"column": column, "load_s": load, "seconds": seconds})
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
    from qaeval_core.metrics._support.loading import cache_dir

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


def measure_costs(
    specs: Sequence[tuple[str, Metric]],
    items: Sequence[Item],
    *,
    sample: int = 300,
    seed: int = 0,
    isolate: bool = True,
    timeout: float | None = 1800,
) -> CostTable:
    """Time every input on (a seeded sample of at most ``sample`` of) ``items``, family by
    family; see the module docstring. ``isolate=False`` measures in this process (faster,
    but caches filled earlier in it make inputs look cheaper: for tests and quick looks)."""
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
    timed: dict[str, tuple[str, dict[str, Any]]] = {}
    machine: dict[str, Any] = {}
    fallbacks: list[str] = []
    for family, members in families.items():
        rows = []
        if isolate:
            try:
                rows, machine = _measure_isolated(members, items, timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                # A metric registered only in this process (a plugin imported by hand) cannot be
                # rebuilt in a fresh one: measure it here and say so in the method.
                fallbacks.append(f"{family} measured in-process ({str(exc)[:120]})")
        if not rows:
            rows, machine = _time_family(members, items), machine_info()
        for r in rows:
            timed[r["column"]] = (family, r)
    n = len(items)
    costs = tuple(
        InputCost(
            column,
            timed[column][0],
            round(timed[column][1]["seconds"] * 1000.0 / n, 6),
            round(timed[column][1]["load_s"], 6),
        )
        for column, _ in specs
    )
    method = (
        f"each family in a fresh process, per-string caches empty; warm-up call on 2 synthetic "
        f"items (load_s), then one score_batch over {n} calibration rows"
        if isolate
        else f"in the calibrating process; warm-up call (load_s), then one score_batch over {n} "
        "rows"
    )
    if fallbacks:
        method += "; " + "; ".join(fallbacks)
    return CostTable(
        costs,
        n,
        machine,
        method,
        datetime.now(UTC).isoformat(timespec="seconds"),
    )


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
