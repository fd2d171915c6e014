"""lm-evaluation-harness ``--log_samples`` files: ``samples_<task>_<date>.jsonl``.

One JSON line per (doc, filter), as ``lm_eval/evaluator.py`` builds it and
``EvaluationTracker.save_results_samples`` writes it: ``doc_id``, ``doc``, ``target`` (``str()``
of the target, a list's repr for multi-answer tasks), ``arguments``, ``resps``,
``filtered_resps`` (one entry per request), ``filter``, ``metrics`` (the names of the
per-sample scores, then each score at the top level), ``doc_hash``, ``prompt_hash``,
``target_hash``. The model is ``model_name`` of ``results_<date>.json`` next to it (same date),
else the folder (lm-eval names it after the sanitized model).

Mapping (docs/formats.md): question ``doc.question`` (else ``doc.query``/``problem``/``input``,
else the prompt); references ``doc.answer`` when it is a list (nq_open), ``doc.answer.aliases``
(triviaqa), ``doc.answers`` (list, or squad's ``{text: [...]}``), else ``target`` parsed as a
literal; candidate ``filtered_resps[0]``; each filter is its own candidate (``variant``);
``qid`` is ``task:doc_hash``, the same for every model that saw that doc.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io.files import describe_kind, jsonl_line
from qaeval_core.io.formats._common import (
    Entry,
    converted,
    head,
    list_of,
    literal,
    load_json,
    no_references,
    object_of,
    record,
    texts,
)

__all__ = ["NAME", "TITLE", "auxiliary", "detect", "read", "version"]

NAME = "lm-eval"
TITLE = "lm-evaluation-harness --log_samples (samples_<task>_<date>.jsonl)"

_SAMPLE_KEYS = {"doc_id", "doc", "filtered_resps"}
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")
_RESULTS_START = re.compile(rb'^\s*\{\s*"results"\s*:')
_QUESTION_KEYS = ("question", "query", "problem", "input")
#: Keys of a logged sample that are not per-sample scores (older logs lack ``metrics``).
_NOT_SCORES = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}


def _first_object(path: Path) -> dict[str, Any] | None:
    for raw in head(path).split(b"\n")[:50]:
        value = jsonl_line(1, raw)
        if value is None:
            continue
        return value if isinstance(value, dict) else None
    return None


def _is_results(path: Path) -> bool:
    """lm-eval's ``results_<date>.json``: its dump starts with the ``results`` key."""
    return path.name.startswith("results_") and bool(_RESULTS_START.match(head(path, 4096)))


def auxiliary(path: Path) -> bool:
    """The results file: detected (so importing it says where the samples are), no log."""
    return path.suffix.lower() == ".json" and _is_results(path)


def _results(path: Path) -> dict[str, Any]:
    """The ``results_<date>.json`` beside a samples file (same date), or ``{}``."""
    match = _SAMPLES_NAME.match(path.name)
    results = path.parent / f"results_{match['date']}.json" if match else None
    if results is None or not results.is_file():
        return {}
    try:
        info = load_json(results)
    except ConfigError:
        return {}
    return info if isinstance(info, dict) else {}


def version(path: Path) -> str | None:
    """``lm_eval_version`` of the results file beside the samples (or of that file)."""
    info = _results(path) if path.suffix.lower() != ".json" else {}
    value = info.get("lm_eval_version")
    return str(value) if isinstance(value, str | int | float) else None


def detect(path: Path) -> bool:
    """A JSON lines file whose first object is a logged sample (or lm-eval's results file,
    which :func:`read` refuses with directions to the samples files)."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _is_results(path)
    if suffix not in (".jsonl", ".ndjson") or not path.is_file():
        return False
    first = _first_object(path)
    return first is not None and first.keys() >= _SAMPLE_KEYS


def _run_info(path: Path) -> tuple[str, str]:
    """(model, task) of a samples file: its results file's ``model_name``, else the
    ``pretrained=`` of its ``model_args``, else the folder."""
    match = _SAMPLES_NAME.match(path.name)
    task = match["task"] if match else path.stem.removeprefix("samples_")
    model = path.parent.name or "unknown"
    info = _results(path)
    name = info.get("model_name")
    config = info.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(name, str) and name:
        model = name
    elif isinstance(args, str) and "pretrained=" in args:
        model = args.split("pretrained=")[1].split(",")[0]
    return model, task


def _references(doc: Any, target: Any) -> list[str]:
    if isinstance(doc, dict):
        answer = doc.get("answer")
        if isinstance(answer, dict) and isinstance(answer.get("aliases"), list):
            return texts(answer["aliases"])
        if isinstance(answer, list):
            return texts(answer)
        answers = doc.get("answers")
        if isinstance(answers, dict) and isinstance(answers.get("text"), list):
            return texts(answers["text"])
        if isinstance(answers, list):
            return texts(answers)
    return texts(literal(target))


def _question(sample: dict[str, Any]) -> str | None:
    doc = sample.get("doc")
    if isinstance(doc, dict):
        for key in _QUESTION_KEYS:
            if isinstance(doc.get(key), str) and doc[key].strip():
                return doc[key]
    args = sample.get("arguments")
    if isinstance(args, dict):  # {"gen_args_0": {"arg_0": prompt, "arg_1": kwargs}}
        first = args.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return first["arg_0"]
    return None


def _candidate(sample: dict[str, Any]) -> str | None:
    resps = sample.get("filtered_resps")
    value = resps[0] if isinstance(resps, list) and resps else None
    if isinstance(value, list) and value and isinstance(value[0], str):
        value = value[0]  # no take_first filter: several generations, the first is judged
    return value if isinstance(value, str) else None


def _scores(sample: dict[str, Any]) -> dict[str, Any]:
    names = sample.get("metrics")
    if isinstance(names, list):
        return {n: sample.get(n) for n in names if isinstance(n, str)}
    return {k: v for k, v in sample.items() if k not in _NOT_SCORES}


def _convert(row: int, sample: dict[str, Any], model: str, task: str) -> Entry:
    object_of(sample.get("doc"), "doc")
    list_of(sample.get("filtered_resps"), "filtered_resps")
    object_of(sample.get("arguments"), "arguments")
    candidate = _candidate(sample)
    if candidate is None:
        return RowError(
            row,
            "no generated answer: filtered_resps holds scores (a loglikelihood or multiple-"
            "choice task); only generate_until tasks have answers to judge",
        )
    question = _question(sample)
    if question is None:
        return RowError(row, "no question: the doc has no question/query field and no prompt")
    doc = sample.get("doc")
    references = _references(doc, sample.get("target"))
    if not references:
        return no_references(row, "the doc has no answer and the target is empty")
    doc_id = sample.get("doc_id", row)
    if not isinstance(doc_id, str | int) or isinstance(doc_id, bool):
        kind = describe_kind(doc_id)
        return RowError(row, f"wrong field type: doc_id is {kind}, expected a number")
    doc_hash = sample.get("doc_hash")
    context = doc.get("context") if isinstance(doc, dict) else None
    return row, record(
        harness=NAME,
        model=model,
        task=task,
        key=doc_id,
        question=question,
        references=references,
        candidate=candidate,
        scores=_scores(sample),
        variant=str(sample["filter"]) if sample.get("filter") is not None else None,
        qid=f"{task}:{doc_hash}" if isinstance(doc_hash, str) and doc_hash else None,
        context=context if isinstance(context, str) else None,
        extra={"doc_id": doc_id, "doc_hash": doc_hash, "filter": sample.get("filter")},
    )


def read(path: Path, model: str | None = None) -> Iterator[Entry]:
    """The samples of one file, in file order (row = line number); ``model`` names the model
    instead of the results file / folder."""
    if path.suffix.lower() == ".json":
        raise ConfigError(
            f"{path} is lm-evaluation-harness's results file (the aggregate scores). Import the "
            "samples_<task>_<date>.jsonl files next to it (written with --log_samples)."
        )
    found, task = _run_info(path)
    model = model or found
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw[:3] == b"\xef\xbb\xbf":
                raw = raw[3:]
            value = jsonl_line(number, raw)
            if value is None:
                continue
            if isinstance(value, RowError):
                yield value
                continue
            yield converted(number, _convert, value, model, task)
