"""Inspect (inspect_ai) eval logs: the ``.eval`` zip and the ``.json`` log.

A ``.eval`` file is a zip of ``header.json`` (the ``EvalLog`` without samples; a log still
being written has ``_journal/start.json`` instead) and one ``samples/<id>_epoch_<n>.json`` per
sample and epoch (``inspect_ai/log/_recorders/eval.py``). Newer Inspect writes the members
zstd-compressed (zip method 93, which Python's ``zipfile`` reads only from 3.14 on); they are
decompressed here with pyarrow's zstd codec, already a dependency. A ``.json`` log is the whole
``EvalLog``: ``version``, ``status``, ``eval``, ..., ``samples``.

Mapping (docs/formats.md): model ``eval.model``, task ``eval.task``; per sample ``id`` +
``epoch`` (each epoch its own candidate, ``variant`` "epoch N"); question ``input`` (a string,
or the last user message of a message list); references ``target`` (a string or a list);
candidate ``output.completion``, else the text of ``output.choices[0].message``; the scorers'
``scores`` as the harness's per-sample scores (C/I/P/N as 1/0/0.5/0, as Inspect's
``value_to_float``). Strings ``attachment://<hash>`` are looked up in the sample's
``attachments``.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
import zlib
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
    texts,
)

__all__ = ["MAX_MEMBER_BYTES", "NAME", "TITLE", "detect", "read", "version"]

NAME = "inspect"
TITLE = "Inspect eval log (.eval zip or .json)"

_ZSTD = 93
#: The most one ``.eval`` member may inflate to. A sample is kilobytes and a header rarely
#: megabytes; a member declaring or inflating to more is refused before memory grows (a 1 MB
#: zip whose member inflates to 1 GB once took 2.2 GB to refuse).
MAX_MEMBER_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20
_SAMPLE = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_JSON_LOG = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_ATTACHMENT = "attachment://"
#: Inspect's ``value_to_float`` for its letter grades.
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def detect(path: Path) -> bool:
    """A ``.eval`` zip with Inspect's header, or a ``.json`` that starts like an EvalLog."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return bool(_JSON_LOG.match(head(path, 4096)))
    if suffix != ".eval" or not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return bool({"header.json", "_journal/start.json"} & names)


def _too_big(path: Path, info: zipfile.ZipInfo, cap: int) -> ConfigError:
    return ConfigError(
        f"{path}: member {info.filename} inflates to more than {cap} bytes (the limit for one "
        "member of a .eval log); refused."
    )


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, cap: int) -> bytes:
    """A member's bytes, read in chunks and refused past ``cap`` bytes (whatever its header
    declares); zstd members are read raw and decompressed with pyarrow into at most their
    declared size, itself checked against ``cap`` first."""
    if info.file_size > cap:
        raise _too_big(path, info, cap)
    if info.compress_type != _ZSTD:
        try:
            with zf.open(info) as fh:
                parts, size = [], 0
                while chunk := fh.read(min(_CHUNK, cap + 1 - size) or 1):
                    size += len(chunk)
                    if size > cap:
                        raise _too_big(path, info, cap)
                    parts.append(chunk)
                return b"".join(parts)
        except NotImplementedError:
            raise ConfigError(
                f"{path}: member {info.filename} uses zip compression method "
                f"{info.compress_type}, which cannot be read here."
            ) from None
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise ConfigError(f"{path}: {info.filename} is damaged ({exc}).") from None
    import pyarrow as pa

    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if local[:4] != b"PK\x03\x04":
            raise ConfigError(f"{path}: damaged zip (member {info.filename}).")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(min(info.compress_size, cap + 1))
    try:
        data = pa.decompress(raw, decompressed_size=info.file_size, codec="zstd", asbytes=True)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"{path}: cannot decompress {info.filename}: {exc}") from None
    if zlib.crc32(data) != info.CRC:
        raise ConfigError(f"{path}: {info.filename} is damaged (CRC mismatch).")
    return data


def _json_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, cap: int) -> Any:
    try:
        return json.loads(_member(zf, info, path, cap).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: {info.filename} is not readable JSON ({exc}).") from None


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT) :], value)
    return value


def _content_text(content: Any, attachments: dict[str, Any]) -> str | None:
    """A message's text: a string, or the ``text`` parts of a content list (no reasoning)."""
    content = _resolve(content, attachments)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            _resolve(p.get("text"), attachments)
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(p for p in parts if isinstance(p, str)) or None
    return None


def _question(sample: dict[str, Any], attachments: dict[str, Any]) -> str | None:
    value = _resolve(sample.get("input"), attachments)
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat input: the last user turn is the question
        for message in reversed(value):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"), attachments)
    return None


def _candidate(sample: dict[str, Any], attachments: dict[str, Any]) -> str | None:
    output = object_of(sample.get("output"), "output")
    completion = _resolve(output.get("completion"), attachments)
    if isinstance(completion, str) and completion.strip():
        return completion
    choices = list_of(output.get("choices"), "output.choices")
    if choices and isinstance(choices[0], dict):
        message = object_of(choices[0].get("message"), "output.choices[0].message")
        return _content_text(message.get("content"), attachments)
    return completion if isinstance(completion, str) else None


def _scores(sample: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for scorer, score in object_of(sample.get("scores"), "scores").items():
        value = score.get("value") if isinstance(score, dict) else score
        items = value.items() if isinstance(value, dict) else [("", value)]
        for key, v in items:
            name = f"{scorer}.{key}" if key else str(scorer)
            if isinstance(v, str) and v.strip().upper() in _GRADES:
                out[name] = _GRADES[v.strip().upper()]
            elif isinstance(v, bool | int | float) and v == v:
                out[name] = float(v)
    return out


def _convert(row: int, sample: dict[str, Any], model: str, task: str, epochs: int) -> Entry:
    attachments = object_of(sample.get("attachments"), "attachments")
    sample_id, epoch = sample.get("id", row), sample.get("epoch", 1)
    if not isinstance(sample_id, str | int) or isinstance(sample_id, bool):
        return RowError(row, "wrong field type: the sample's id is not text or a number")
    where = f"sample {sample_id!r} epoch {epoch}"
    if sample.get("error"):
        error = sample["error"]
        message = error.get("message", "") if isinstance(error, dict) else error
        return RowError(row, f"{where} ended in an error, no answer: {str(message)[:200]}")
    question = _question(sample, attachments)
    if not question:
        return RowError(row, f"{where}: no question (input is neither text nor a user turn)")
    target = _resolve(sample.get("target"), attachments)
    if isinstance(target, list):
        target = [_resolve(t, attachments) for t in target]
    references = texts(target)
    if not references:
        return no_references(row, f"{where} has an empty target")
    candidate = _candidate(sample, attachments)
    if candidate is None:
        return RowError(row, f"{where}: the output has no text")
    return row, record(
        harness=NAME,
        model=model,
        task=task,
        key=sample_id,
        question=question,
        references=references,
        candidate=candidate,
        scores=_scores(sample),
        variant=f"epoch {epoch}" if epochs > 1 else None,
        extra={"sample_id": sample_id, "epoch": epoch},
    )


def _run(spec: Any) -> tuple[str, str, int]:
    spec = spec if isinstance(spec, dict) else {}
    config = spec.get("config") if isinstance(spec.get("config"), dict) else {}
    epochs = config.get("epochs") if isinstance(config.get("epochs"), int) else 1
    return str(spec.get("model") or "unknown"), str(spec.get("task") or "unknown"), epochs


def _read_eval(path: Path, model: str | None, cap: int) -> Iterator[Entry]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConfigError(f"{path}: not a readable .eval zip ({exc}).") from None
    with zf:
        infos = {i.filename: i for i in zf.infolist()}
        header = infos.get("header.json") or infos.get("_journal/start.json")
        if header is None:
            raise ConfigError(f"{path}: no header.json in this .eval log.")
        head_json = _json_member(zf, header, path, cap)
        found, task, epochs = _run(head_json.get("eval") if isinstance(head_json, dict) else None)
        model = model or found
        samples = [i for name, i in infos.items() if _SAMPLE.match(name)]
        epochs = max(epochs, len({_SAMPLE.match(i.filename)["epoch"] for i in samples}))
        for row, info in enumerate(samples, start=1):
            sample = _json_member(zf, info, path, cap)
            if not isinstance(sample, dict):
                yield RowError(row, f"{info.filename} is not a sample object")
                continue
            yield converted(row, _convert, sample, model, task, epochs)


def version(path: Path) -> str | None:
    """``inspect_ai`` of the log's ``eval.packages`` (and the log format's ``version``)."""
    try:
        if path.suffix.lower() == ".eval":
            with zipfile.ZipFile(path) as zf:
                infos = {i.filename: i for i in zf.infolist()}
                info = infos.get("header.json") or infos.get("_journal/start.json")
                log = _json_member(zf, info, path, MAX_MEMBER_BYTES) if info else None
        else:
            log = load_json(path)
    except (ConfigError, zipfile.BadZipFile, OSError):
        return None
    if not isinstance(log, dict):
        return None
    spec = log.get("eval") if isinstance(log.get("eval"), dict) else {}
    packages = spec.get("packages") if isinstance(spec.get("packages"), dict) else {}
    parts = [f"inspect_ai {packages['inspect_ai']}"] if packages.get("inspect_ai") else []
    if isinstance(log.get("version"), int):
        parts.append(f"log format {log['version']}")
    return ", ".join(parts) or None


def read(
    path: Path, model: str | None = None, *, max_member_bytes: int = MAX_MEMBER_BYTES
) -> Iterator[Entry]:
    """The samples of a log in stored order (row = position of the sample, 1-based);
    ``model`` names the model instead of ``eval.model``; a ``.eval`` member inflating past
    ``max_member_bytes`` is refused."""
    if path.suffix.lower() == ".eval":
        yield from _read_eval(path, model, max_member_bytes)
        return
    log = load_json(path)
    if not isinstance(log, dict):
        raise ConfigError(f"{path}: an Inspect log is a JSON object.")
    found, task, epochs = _run(log.get("eval"))
    model = model or found
    samples = log.get("samples") or []
    if not isinstance(samples, list):
        raise ConfigError(f"{path}: the log's samples are {type(samples).__name__}, not a list.")
    epochs = max(epochs, len({str(s.get("epoch")) for s in samples if isinstance(s, dict)}))
    if not samples:
        raise ConfigError(f"{path}: the log has no samples (was it written with log_samples?).")
    for row, sample in enumerate(samples, start=1):
        if not isinstance(sample, dict):
            yield RowError(row, "a sample is not an object")
            continue
        yield converted(row, _convert, sample, model, task, epochs)
