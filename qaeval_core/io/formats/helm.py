"""HELM run folders: ``scenario_state.json`` (+ ``run_spec.json``, ``per_instance_stats.json``).

``helm-run`` writes one folder per run spec (``benchmark/runner.py``): ``scenario_state.json``
is ``asdict_without_nones(ScenarioState)``, i.e. ``adapter_spec`` and ``request_states``, each
a ``RequestState`` with ``instance`` (``input.text``, ``references`` of ``output.text`` and
``tags``, ``id``, ``split``, ``perturbation``), ``train_trial_index``, ``output_mapping``,
``request`` (``model``, ``prompt``) and ``result`` (``success``, ``completions[].text``);
``per_instance_stats.json`` lists per instance and trial the metric ``stats`` (``name.name``,
``mean``). Give the folder or its ``scenario_state.json``.

Mapping (docs/formats.md): question ``instance.input.text``; references the references tagged
``correct``; candidate ``result.completions[0].text`` (for multiple choice, the option its
letter maps to in ``output_mapping``); model ``request.model``; task the run spec's name without
its ``model=`` argument, so two models' runs of one scenario share their questions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io.formats._common import (
    Entry,
    converted,
    head,
    list_of,
    load_json,
    no_references,
    object_of,
    record,
)

__all__ = ["NAME", "TITLE", "detect", "read"]

NAME = "helm"
TITLE = "HELM run folder (scenario_state.json)"

_STATE = "scenario_state.json"
_START = re.compile(rb'^\s*\{\s*"adapter_spec"\s*:')
_MODEL_ARG = re.compile(r"(?:^|,)model(?:_deployment)?=[^,]*")


def _state_file(path: Path) -> Path:
    return path / _STATE if path.is_dir() else path


def detect(path: Path) -> bool:
    """A run folder holding ``scenario_state.json``, or that file (by its first key)."""
    state = _state_file(path)
    if state.suffix.lower() != ".json" or not state.is_file():
        return False
    start = head(state, 8192)
    return bool(_START.match(start)) and (state.name == _STATE or b'"request_states"' in start)


def _task(folder: Path) -> str:
    """The run spec's name without the model (``natural_qa:mode=closedbook``)."""
    name = folder.name
    spec = folder / "run_spec.json"
    if spec.is_file():
        try:
            data = load_json(spec)
        except ConfigError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            name = data["name"]
    scenario, sep, args = name.partition(":")
    args = _MODEL_ARG.sub("", args).strip(",")
    return f"{scenario}{sep}{args}" if args else scenario


def _stats(folder: Path) -> dict[tuple[str, int], dict[str, float]]:
    path = folder / "per_instance_stats.json"
    if not path.is_file():
        return {}
    data = load_json(path)
    out: dict[tuple[str, int], dict[str, float]] = {}
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict) or entry.get("perturbation"):
            continue
        trial = entry.get("train_trial_index") or 0
        stats = entry.get("stats")
        if not isinstance(trial, int) or not isinstance(stats, list):
            continue  # a wrong-typed entry: its scores are left out, never a traceback
        key = (str(entry.get("instance_id")), trial)
        for stat in stats:
            name = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(name, dict) or name.get("perturbation"):
                continue
            if not isinstance(stat.get("mean"), int | float):
                continue
            out.setdefault(key, {})[str(name.get("name"))] = float(stat["mean"])
    return out


def _convert(
    row: int, state: dict[str, Any], spec: dict[str, Any], task: str, stats, named: str | None
) -> Entry:
    instance = object_of(state.get("instance"), "instance")
    instance_id = str(instance.get("id") or row)
    if state.get("reference_index") is not None or state.get("request_mode") == "calibration":
        return RowError(
            row,
            f"instance {instance_id}: a per-option request (multiple_choice_separate), scored "
            "by likelihood; HELM logged no generated answer to judge",
        )
    question = object_of(instance.get("input"), "instance.input").get("text")
    if not isinstance(question, str) or not question.strip():
        return RowError(row, f"instance {instance_id}: no input text")
    refs = [r for r in list_of(instance.get("references"), "instance.references")]
    refs = [r for r in refs if isinstance(r, dict)]
    outputs = [object_of(r.get("output"), "reference output").get("text") for r in refs]
    correct = [
        o
        for r, o in zip(refs, outputs, strict=True)
        if "correct" in list_of(r.get("tags"), "reference tags") and isinstance(o, str)
    ]
    if not correct:
        return no_references(row, f"instance {instance_id} has no reference tagged 'correct'")
    result = object_of(state.get("result"), "result")
    completions = list_of(result.get("completions"), "result.completions")
    if not result.get("success", bool(completions)) or not completions:
        return RowError(row, f"instance {instance_id}: the request failed: {result.get('error')}")
    text = str(object_of(completions[0], "result.completions[0]").get("text") or "")
    mapping = object_of(state.get("output_mapping"), "output_mapping")
    candidate = str(mapping.get(text.strip(), text.strip())) if mapping else text.strip()
    trial = state.get("train_trial_index") or 0
    if not isinstance(trial, int):
        return RowError(row, f"instance {instance_id}: train_trial_index is not a number")
    perturbation = object_of(instance.get("perturbation"), "instance.perturbation").get("name")
    request = object_of(state.get("request"), "request")
    model = (
        named
        or request.get("model")
        or spec.get("model")
        or spec.get("model_deployment")
        or "unknown"
    )
    variant = (
        "/".join(p for p in (f"trial {trial}" if trial else "", perturbation or "") if p) or None
    )
    return row, record(
        harness=NAME,
        model=str(model),
        task=task,
        key=instance_id,
        question=question,
        references=[str(c) for c in correct if c],
        candidate=candidate,
        scores=stats.get((instance_id, trial)) if not perturbation else None,
        variant=variant,
        choices=[str(o) for o in outputs if o] if mapping else None,
        extra={
            "instance_id": instance_id,
            "train_trial_index": trial,
            "split": instance.get("split"),
        },
    )


def read(path: Path, model: str | None = None) -> Iterator[Entry]:
    """The request states of one run, in file order (row = position in ``request_states``);
    ``model`` names the model instead of ``request.model``."""
    state_file = _state_file(path)
    folder = state_file.parent
    data = load_json(state_file)
    if not isinstance(data, dict) or not isinstance(data.get("request_states"), list):
        raise ConfigError(f"{state_file}: no request_states list (not a HELM scenario state).")
    spec = data.get("adapter_spec") if isinstance(data.get("adapter_spec"), dict) else {}
    task, stats = _task(folder), _stats(folder)
    for row, state in enumerate(data["request_states"], start=1):
        if not isinstance(state, dict):
            yield RowError(row, "a request state is not an object")
            continue
        yield converted(row, _convert, state, spec, task, stats, model)
