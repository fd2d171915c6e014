"""What the pages and ``qaeval check`` show of a judge file, read once into typed fields.

Why a reader of its own: five views and the check used to walk the saved JSON by hand
(``config.get("cascade")``, ``(tier.get("feature") or {}).get("metric", {})...``), so a change
of the format (:mod:`qaeval_core.judge.judge` documents it) broke a page silently, and each
walk handled a missing or damaged part its own way. :func:`judge_summary` is the one place
that knows the keys; ``tests/test_one_home.py`` refuses a view or CLI module that reads them.

It is a *summary*, not the judge: it does not verify the checksum or rebuild the combiner
(:meth:`qaeval_core.judge.Judge.from_config` does), because lists of saved calibrations show
every one, old or damaged, without failing the page. A part that is missing is None; a
guarantee that is present but cannot be read is flagged (``guarantee_unreadable``), as the
Calibrate page says "unreadable" rather than hide it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CostSummary",
    "EvaluatedInputs",
    "GuaranteeSummary",
    "MeasuredInput",
    "JudgeSummary",
    "LLMTierSummary",
    "cost_summary",
    "judge_summary",
]


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None or number != number else int(number)


@dataclass(frozen=True)
class GuaranteeSummary:
    """The guaranteed band: accuracy ``target`` on what the judge decides, failing with
    probability at most ``risk``, tested on ``n_labels`` labels."""

    target: float
    risk: float
    n_labels: int


@dataclass(frozen=True)
class LLMTierSummary:
    """The cascade's LLM tier: which LLM (``model``: None when the file does not name one),
    the share of items it reads, and what it cost per item where it was calibrated."""

    model: str | None
    share: float
    seconds_per_item: float


@dataclass(frozen=True)
class MeasuredInput:
    """One input of the judge and what computing it cost (seconds per 1,000 rows, cold load)."""

    column: str
    family: str
    s_per_1000: float
    load_s: float


@dataclass(frozen=True)
class EvaluatedInputs:
    """One input set the cost-aware selection tried: its families, cost, cross-validated
    accuracy, whether it is on the cost/accuracy frontier and whether it was chosen."""

    families: tuple[str, ...]
    cost: float
    cv_accuracy: float
    frontier: bool
    chosen: bool


@dataclass(frozen=True)
class CostSummary:
    """What the judge's inputs cost where it was calibrated (the file's ``cost`` part;
    ``judge_s_per_1000`` None where it was not measured)."""

    judge_s_per_1000: float | None
    judge_load_s: float
    inputs_rule: str
    rows: int | None
    method: str
    cpu: str | None
    cpus: int | None
    measured_at: str
    source: str
    cached_families: tuple[str, ...]
    inputs: tuple[MeasuredInput, ...]
    evaluated: tuple[EvaluatedInputs, ...]


@dataclass(frozen=True)
class JudgeSummary:
    """The parts of a judge file that pages and the check show (see the module docstring)."""

    name: str | None
    combiner: str | None
    n_labels: int | None
    cv_accuracy: float | None
    cv_accuracy_ci: tuple[float, float] | None
    band_share: float | None
    guarantee: GuaranteeSummary | None
    guarantee_unreadable: bool
    llm_tier: LLMTierSummary | None
    cost: CostSummary | None


def _ci(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    low, high = (_float(v) for v in value)
    return None if low is None or high is None else (low, high)


def _guarantee(data: Any) -> tuple[GuaranteeSummary | None, bool]:
    if not isinstance(data, Mapping):
        return None, False
    target, risk = _float(data.get("target")), _float(data.get("risk"))
    n = _int(data.get("n_labels"))
    if target is None or risk is None or n is None:
        return None, True
    return GuaranteeSummary(target, risk, n), False


def _llm_tier(data: Any) -> LLMTierSummary | None:
    if not isinstance(data, Mapping):
        return None
    params = _map(_map(_map(data.get("feature")).get("metric")).get("params"))
    model = params.get("model")
    return LLMTierSummary(
        model=None if model is None else str(model),
        share=_float(data.get("llm_share")) or 0.0,
        seconds_per_item=_float(data.get("llm_seconds_per_item")) or 0.0,
    )


def cost_summary(cost: Mapping[str, Any] | None) -> CostSummary | None:
    """The typed form of a judge's ``cost`` part (also :attr:`Judge.cost` of a fit just made);
    None without one."""
    if not isinstance(cost, Mapping) or not cost:
        return None
    machine = _map(cost.get("machine"))
    inputs = tuple(
        MeasuredInput(
            str(c.get("column")),
            str(c.get("family")),
            _float(c.get("s_per_1000")) or 0.0,
            _float(c.get("load_s")) or 0.0,
        )
        for c in cost.get("inputs") or []
        if isinstance(c, Mapping)
    )
    evaluated = tuple(
        EvaluatedInputs(
            tuple(str(f) for f in r.get("families") or []),
            _float(r.get("cost")) or 0.0,
            _float(r.get("cv_accuracy")) or 0.0,
            bool(r.get("frontier")),
            bool(r.get("chosen")),
        )
        for r in _map(cost.get("selection")).get("evaluated") or []
        if isinstance(r, Mapping)
    )
    cpu = machine.get("cpu")
    return CostSummary(
        judge_s_per_1000=_float(cost.get("judge_s_per_1000")),
        judge_load_s=_float(cost.get("judge_load_s")) or 0.0,
        inputs_rule=str(cost.get("inputs_rule", "")),
        rows=_int(cost.get("rows")),
        method=str(cost.get("method", "")),
        cpu=None if cpu is None else str(cpu),
        cpus=_int(machine.get("cpus")),
        measured_at=str(cost.get("measured_at") or ""),
        source=str(cost.get("source", "cache")),
        cached_families=tuple(str(f) for f in _map(cost.get("cached"))),
        inputs=inputs,
        evaluated=evaluated,
    )


def judge_summary(config: Mapping[str, Any]) -> JudgeSummary:
    """The summary of a parsed judge file (:meth:`Judge.to_config`, or a saved calibration's
    ``config``); never raises on a missing or damaged part (module docstring)."""
    config = _map(config)
    quality, fitted = _map(config.get("quality")), _map(config.get("fitted_on"))
    band = _map(config.get("triage"))
    guarantee, unreadable = _guarantee(config.get("guarantee"))
    name, winner = config.get("name"), quality.get("winner")
    return JudgeSummary(
        name=None if name is None else str(name),
        combiner=None if winner is None else str(winner),
        n_labels=_int(fitted.get("n_labels")),
        cv_accuracy=_float(quality.get("cv_accuracy")),
        cv_accuracy_ci=_ci(quality.get("cv_accuracy_ci")),
        band_share=_float(band.get("share")) if "share" in band else None,
        guarantee=guarantee,
        guarantee_unreadable=unreadable,
        llm_tier=_llm_tier(config.get("cascade")),
        cost=cost_summary(config.get("cost")),
    )
