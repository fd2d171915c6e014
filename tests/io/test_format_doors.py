"""Harness logs through every door (issue 32 items 1-5, issue 31 item 5).

The real fixtures under tests/data/formats/ go through ``qaeval import`` and the library the
Data page calls (uploads staged as files): folders of logs, ``--on-invalid skip`` with its
rejects file, ``--model``, the summary of what was detected, wrong-typed fields refused by row,
and a ``.eval`` whose member inflates past the cap refused with bounded memory.
"""

from __future__ import annotations

import io as stdio
import json
import shutil
import struct
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest
from _paths import TEST_DATA

from qaeval_core import io, store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.errors import ConfigError, RowError, ValidationError
from qaeval_core.io.formats import inspect_log, log_files

FIX = TEST_DATA / "formats"
OC = FIX / "opencompass" / "20250101_000000" / "predictions"
HELM_SMALL = FIX / "helm" / "natural_qa:mode=closedbook,model=acme_qa-small"


def _one(pattern: str) -> Path:
    (found,) = sorted(FIX.glob(pattern))
    return found


def _items(url: str, dataset: str) -> list[tuple[Any, ...]]:
    frame = store.list_items(url, dataset)
    return sorted(
        (r["external_id"], r["question"], tuple(r["references"]), r["candidate"], r["qa_model"])
        for r in frame.to_dict("records")
    )


def _import(url: str, *args: str) -> int:
    return cli_main(["import", *args, "--db", url])


def test_an_opencompass_model_folder_imports(sqlite_url: str, capsys) -> None:
    assert _import(sqlite_url, str(OC / "qa-large"), "-d", "oc") == 0
    out = capsys.readouterr().out
    assert "Detected: opencompass" in out and "Model(s): qa-large (5 row(s))" in out
    assert len(_items(sqlite_url, "oc")) == 5
    assert log_files(OC) == [OC / "qa-large" / "nq_open.json", OC / "qa-small" / "nq_open.json"]


def test_format_named_on_a_folder_gives_one_line_not_a_traceback(sqlite_url: str, capsys) -> None:
    assert _import(sqlite_url, str(OC / "qa-large"), "--format", "opencompass", "-d", "x") == 0
    capsys.readouterr()
    assert _import(sqlite_url, str(OC), "--format", "helm", "-d", "y") != 0
    err = capsys.readouterr().err
    assert "is a folder with no helm log in it" in err and "Traceback" not in err
    assert _import(sqlite_url, str(OC), "--format", "jsonl", "-d", "y") != 0
    assert "is read from one file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("log", "refused_row", "why", "kept"),
    [
        (HELM_SMALL, 5, "instance id1004 has no reference tagged 'correct'", 4),
        ("lighteval_flat/details/*/*/*/*.parquet", 5, "gold is empty", 4),
        (OC / "qa-small", 6, 'example 5 has no "gold"', 5),
    ],
)
def test_on_invalid_skip_imports_the_valid_rows_and_writes_the_rejects(
    sqlite_url: str, tmp_path: Path, capsys, log: Any, refused_row: int, why: str, kept: int
) -> None:
    path = log if isinstance(log, Path) else _one(log)
    assert _import(sqlite_url, str(path), "-d", "all") != 0  # the default: all or nothing
    assert "1 invalid row(s); nothing was imported" in capsys.readouterr().err
    assert store.list_datasets(sqlite_url) == []
    rejects = tmp_path / "rejects.jsonl"
    args = [str(path), "-d", "some", "--on-invalid", "skip", "--rejects", str(rejects)]
    assert _import(sqlite_url, *args) == 0
    out = capsys.readouterr().out
    assert f"{kept} item(s) added" in out and "Refused: 1 row(s)" in out
    assert len(_items(sqlite_url, "some")) == kept
    (reject,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert reject["row"] == refused_row and why in reject["reason"]
    assert set(reject) == {"file", "row", "id", "reason"}


def test_skip_needs_a_rejects_file_and_an_all_bad_log_still_imports_nothing(
    sqlite_url: str, tmp_path: Path, capsys
) -> None:
    assert _import(sqlite_url, str(HELM_SMALL), "-d", "x", "--on-invalid", "skip") != 0
    assert "needs --rejects" in capsys.readouterr().err
    bad = tmp_path / "samples_t_2024-01-01T00-00-00.000000.jsonl"
    bad.write_text(json.dumps({"doc_id": 0, "doc": "text", "filtered_resps": ["a"]}) + "\n")
    with pytest.raises(ValidationError, match="row 1: wrong field type: doc is a string"):
        io.scan_items(bad, on_invalid="skip")
    with pytest.raises(ConfigError, match="on_invalid must be one of refuse, skip"):
        io.scan_items(bad, on_invalid="maybe")


def test_two_logs_with_one_model_name_share_a_dataset_with_model(sqlite_url: str, capsys) -> None:
    eval_log, json_log = FIX / "inspect" / "trivia_qa.eval", FIX / "inspect" / "trivia_qa.json"
    changed = json.loads(json_log.read_text())
    for sample in changed["samples"]:
        sample["output"]["completion"] = "something else"  # another run, same 'mockllm/model'
    other = Path(str(sqlite_url).removeprefix("sqlite:///")).parent / "other_run.json"
    other.write_text(json.dumps(changed))
    assert _import(sqlite_url, str(eval_log), "-d", "nq") == 0
    assert _import(sqlite_url, str(other), "-d", "nq") != 0
    assert "6 invalid row(s)" in capsys.readouterr().err  # same ids, different content
    assert _import(sqlite_url, str(other), "-d", "nq", "--model", "run-b") == 0
    out = capsys.readouterr().out
    assert "Model(s) (named on import: run-b): run-b (6 row(s))" in out
    items = _items(sqlite_url, "nq")
    assert len(items) == 12 and {i[4] for i in items} == {"mockllm/model", "run-b"}
    frame = store.list_items(sqlite_url, "nq")
    assert frame["meta"].map(lambda m: m["qid"]).nunique() == 3  # still joined by question


def test_import_says_what_it_detected_before_writing(sqlite_url: str, capsys) -> None:
    samples = _one("lm_eval/acme__qa-small/samples_nq_local_*.jsonl")
    assert _import(sqlite_url, str(samples), "-d", "lm") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Detected: lm-eval") and "harness version: 0.4.13" in lines[0]
    assert "Task(s): nq_local (24 row(s))" in out
    assert "Model(s): acme/qa-small (24 row(s))" in out
    assert "remove_whitespace (12 row(s))" in out  # the filters
    assert out.index("Detected:") < out.index("item(s) added")
    assert _import(sqlite_url, str(FIX / "inspect" / "trivia_qa.eval"), "-d", "i") == 0
    assert "harness version: inspect_ai 0.3.285, log format 2" in capsys.readouterr().out


def test_uploads_are_read_like_files() -> None:
    """The Data page's door: bytes staged as files give the CLI's items, ``.eval`` included."""
    samples = _one("lm_eval/acme__qa-small/samples_nq_local_*.jsonl")
    results = _one("lm_eval/acme__qa-small/results_*.json")
    cases = [
        ([FIX / "inspect" / "trivia_qa.eval"], FIX / "inspect" / "trivia_qa.eval"),
        ([samples, results], samples),
        (sorted(HELM_SMALL.iterdir()), HELM_SMALL),
    ]
    for uploaded, on_disk in cases:
        files = [(p.name, p.read_bytes()) for p in uploaded]
        with io.staged_uploads(files) as path:
            web = [vars(i) for i in io.scan_items(path, on_invalid="skip").items()]
        cli = [vars(i) for i in io.scan_items(on_disk, on_invalid="skip").items()]
        assert web == cli and web, on_disk
    eval_bytes = (FIX / "inspect" / "trivia_qa.eval").read_bytes()
    assert len(io.read_items(eval_bytes, name="trivia_qa.eval")) == 6
    twice = io.staged_uploads([("a.jsonl", b""), ("a.jsonl", b"")])
    with pytest.raises(ConfigError, match="given twice"):
        twice.__enter__()


def _lm_sample(**changes: Any) -> dict[str, Any]:
    line = _one("lm_eval/acme__qa-small/samples_nq_local_*.jsonl").read_text().splitlines()[0]
    return {**json.loads(line), **changes}


def _inspect_sample(**changes: Any) -> dict[str, Any]:
    log = json.loads((FIX / "inspect" / "trivia_qa.json").read_text())
    return {**log["samples"][0], **changes}


def _helm_state(**changes: Any) -> dict[str, Any]:
    state = json.loads((HELM_SMALL / "scenario_state.json").read_text())
    return {**state["request_states"][0], **changes}


def _write_lm(tmp: Path, bad: dict[str, Any]) -> Path:
    path = tmp / "samples_t_2024-01-01T00-00-00.000000.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in (_lm_sample(), bad)) + "\n")
    return path


def _write_inspect_json(tmp: Path, bad: dict[str, Any]) -> Path:
    log = json.loads((FIX / "inspect" / "trivia_qa.json").read_text())
    log["samples"] = [log["samples"][0], bad]
    path = tmp / "log.json"
    path.write_text(json.dumps(log))
    return path


def _write_inspect_eval(tmp: Path, bad: dict[str, Any]) -> Path:
    path, source = tmp / "log.eval", FIX / "inspect" / "trivia_qa.eval"
    with zipfile.ZipFile(source) as src:
        header = inspect_log._json_member(
            src, src.getinfo("header.json"), source, inspect_log.MAX_MEMBER_BYTES
        )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(header))
        zf.writestr("samples/a_epoch_1.json", json.dumps(_inspect_sample(id="a")))
        zf.writestr("samples/b_epoch_1.json", json.dumps(bad))
    return path


def _write_helm(tmp: Path, bad: dict[str, Any]) -> Path:
    state = json.loads((HELM_SMALL / "scenario_state.json").read_text())
    state["request_states"] = [state["request_states"][0], bad]
    folder = tmp / "run"
    folder.mkdir()
    (folder / "scenario_state.json").write_text(json.dumps(state))
    return folder


def _write_lighteval(tmp: Path, column: str, value: Any) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = _one("lighteval/details/acme/qa-small/*/*.parquet")
    rows = pq.read_table(src).slice(0, 2).to_pylist()
    target = tmp / "details" / "acme" / "m" / "2024" / src.name
    target.parent.mkdir(parents=True)
    cols = {k: [repr(r[k]) if k == column else r[k] for r in rows] for k in rows[0]}
    # The first row keeps str() of its value (as lighteval <= 0.10 wrote); the second is bad.
    cols[column][1] = value
    pq.write_table(pa.table(cols), target)
    return target


HOSTILE = [
    ("lm-eval doc a string", lambda t: _write_lm(t, _lm_sample(doc="a doc"))),
    ("lm-eval filtered_resps a string", lambda t: _write_lm(t, _lm_sample(filtered_resps="x"))),
    ("lm-eval arguments a list", lambda t: _write_lm(t, _lm_sample(arguments=[1], doc={}))),
    ("lm-eval doc_id an object", lambda t: _write_lm(t, _lm_sample(doc_id={"a": 1}))),
    ("inspect output a string", lambda t: _write_inspect_json(t, _inspect_sample(output="x"))),
    ("inspect scores a list", lambda t: _write_inspect_json(t, _inspect_sample(scores=[1]))),
    (
        "inspect attachments a list",
        lambda t: _write_inspect_json(t, _inspect_sample(attachments=[])),
    ),
    (
        "inspect .eval choices a string",
        lambda t: _write_inspect_eval(t, _inspect_sample(output={"choices": "x"})),
    ),
    ("helm instance a string", lambda t: _write_helm(t, _helm_state(instance="x"))),
    ("helm result a list", lambda t: _write_helm(t, _helm_state(result=[1]))),
    (
        "helm references an object",
        lambda t: _write_helm(
            t, _helm_state(instance={"id": "i", "input": {"text": "q"}, "references": {"a": 1}})
        ),
    ),
    (
        "helm completions an object",
        lambda t: _write_helm(
            t, _helm_state(result={"success": True, "completions": {"text": "x"}})
        ),
    ),
    ("lighteval doc a string", lambda t: _write_lighteval(t, "doc", "not a doc")),
    ("lighteval model_response a string", lambda t: _write_lighteval(t, "model_response", "x")),
]


@pytest.mark.parametrize(("case", "write"), HOSTILE, ids=[c for c, _ in HOSTILE])
def test_wrong_typed_fields_are_refused_by_row(tmp_path: Path, case: str, write) -> None:
    path = write(tmp_path)
    with pytest.raises(ValidationError) as err:
        io.scan_items(path)
    assert [e.row for e in err.value.errors] == [2], (case, str(err.value))
    assert "wrong field type" in err.value.errors[0].reason or "type" in str(err.value)
    scan = io.scan_items(path, on_invalid="skip")  # and the good row still imports
    assert scan.n_items == 1 and [r.row for r in scan.rejects] == [2]


def _bomb(path: Path, inflated: int, *, lie: bool = False) -> Path:
    """A ``.eval`` whose one sample member inflates to ``inflated`` bytes of JSON whitespace;
    ``lie``: the member's header declares 100 bytes."""
    header = {"version": 2, "status": "success", "eval": {"model": "m", "task": "t"}}
    member = b"{" + b" " * (inflated - 2) + b"}"
    buf = stdio.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(header))
        zf.writestr("samples/1_epoch_1.json", member)
    data = buf.getvalue()
    if lie:  # rewrite the declared size (local header and central directory) to 100
        name = b"samples/1_epoch_1.json"
        with zipfile.ZipFile(stdio.BytesIO(data)) as zf:
            local = zf.getinfo(name.decode()).header_offset
        central = data.rindex(b"PK\x01\x02", 0, data.rindex(name))
        size = struct.pack("<I", 100)
        data = data[: local + 22] + size + data[local + 26 :]
        data = data[: central + 24] + size + data[central + 28 :]
    path.write_bytes(data)
    return path


def test_a_zip_bomb_eval_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    cap = 1 << 20
    bomb = _bomb(tmp_path / "bomb.eval", 40 * cap)  # 40 MB inflated, a few KB on disk
    assert bomb.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match="inflates to more than 1048576 bytes"):
            list(inspect_log.read(bomb, max_member_bytes=cap))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * cap  # never the 40 MB the member inflates to
    liar = _bomb(tmp_path / "liar.eval", 40 * cap, lie=True)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match="damaged|inflates"):
            list(inspect_log.read(liar, max_member_bytes=cap))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * cap
    small = _bomb(tmp_path / "fine.eval", 1000)  # under the cap: read (and refused by row)
    first = next(inspect_log.read(small, max_member_bytes=cap))
    assert isinstance(first, RowError) and "no question" in first.reason


def test_a_copied_folder_of_logs_imports_every_model(sqlite_url: str, tmp_path: Path) -> None:
    root = tmp_path / "out"
    shutil.copytree(FIX / "lm_eval", root)
    assert _import(sqlite_url, str(root), "-d", "lm") == 0
    models = {i[4] for i in _items(sqlite_url, "lm")}
    assert models == {"acme/qa-small", "acme/qa-large"}
