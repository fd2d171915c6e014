"""``qaeval score FILE``: the same row checks and the same row-numbered error on the local and
the Ray engine (issue 21, item 17). Ray once ended a number among the candidates, or a string
among the reference lists, in a ~300-line Arrow traceback with no row number and nothing
written, while the local engine scored the same file.

The checks and the one-type-per-column copy are tested without Ray; one test runs a local Ray
(as tests/test_ray_engine.py does) on the valid malformed kinds and compares with local scores.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from _paths import DEMO_DATA

from qaeval_core.cli.main import main
from qaeval_core.errors import RowError, ValidationError
from qaeval_core.io import read_records, score_rows

NQ_ROWS = DEMO_DATA

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="ray is not installed (the optional extra: pip install 'qaeval[distributed]')",
)

#: Malformed kinds the local engine reads as the import would (text from a number, aliases
#: from a string, an empty answer), at their 1-based rows.
SCORABLE = {
    3: ("candidate", 1945),
    5: ("references", "Paris/Paris, France"),
    7: ("candidate", None),
}
#: Malformed kinds refused on both engines, with their message.
REFUSED = {
    9: ("references", [], "references is empty (need at least one gold answer)"),
    11: ("question", {"text": "who?"}, "question must be text, got an object"),
}


def _rows(n: int = 16) -> list[dict]:
    with NQ_ROWS.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(n), fh, strict=False)]
    return [{k: r[k] for k in ("id", "question", "references", "candidate")} for r in rows]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _file(path: Path, kinds: dict[int, tuple]) -> Path:
    rows = _rows()
    for row, (column, value, *_) in kinds.items():
        rows[row - 1][column] = value
    return _write(path, rows)


# -- the checks (no Ray) -----------------------------------------------------------------------


def test_the_scorable_kinds_are_read_as_the_scorers_read_them() -> None:
    assert score_rows.check_record({"question": "q", "references": ["a"], "candidate": 1945}) == {
        "question": "q",
        "references": ["a"],
        "candidate": "1945",
    }
    got = score_rows.check_record({"query": 7, "answers": "a / b", "prediction": None})
    assert got == {"query": "7", "answers": ["a", "b"]}  # aliases; a null answer is empty


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"references": ["a"], "candidate": "x"}, "missing field 'question'"),
        ({"question": "q", "candidate": "x"}, "missing field 'references'"),
        ({"question": "q", "references": None, "candidate": "x"}, "references is null"),
        ({"question": "q", "references": [], "candidate": "x"}, "references is empty"),
        ({"question": "q", "references": [["a"]], "candidate": "x"}, r"references\[1\] must be"),
        ({"question": "q", "references": ["a"], "candidate": ["x"]}, "candidate must be text"),
        ({"question": True, "references": ["a"], "candidate": "x"}, "question must be text"),
        ({"question": "q", "references": ["a"] * 1001, "candidate": "x"}, "1,001 entries"),
    ],
)
def test_a_bad_row_is_refused_with_every_reason(record: dict, message: str) -> None:
    with pytest.raises(score_rows.BadValue, match=message):
        score_rows.check_record(record)


def test_mixed_columns_are_found_and_the_copy_reads_in_arrow(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.json as pj

    rows = _rows()
    rows[2]["candidate"] = 1945
    rows[4]["references"] = "Paris/Paris, France"
    rows[5]["extra"], rows[6]["extra"] = {"a": 1}, "text"  # a mixed column that is no field
    source = _write(tmp_path / "mixed.jsonl", rows)
    with pytest.raises(pa.ArrowInvalid):  # what Ray's reader met
        pj.read_json(source)
    scan = score_rows.scan_jsonl(source)
    assert scan.rows == 16 and scan.mixed == {"candidate", "references", "extra"}
    copy = tmp_path / "copy.jsonl"
    with copy.open("w", encoding="utf-8") as fh:
        assert score_rows.write_uniform(source, fh, scan.mixed) == 16
    table = pj.read_json(copy).to_pylist()
    assert table[2]["candidate"] == "1945"
    assert table[4]["references"] == ["Paris", "Paris, France"]
    assert table[5]["extra"] == '{"a": 1}' and table[6]["extra"] == "text"
    assert [r["id"] for r in table] == [r["id"] for r in rows]


def test_every_bad_row_is_listed_by_number(tmp_path: Path) -> None:
    source = _file(tmp_path / "bad.jsonl", REFUSED)
    expected = [RowError(row, message) for row, (_, _, message) in REFUSED.items()]
    with pytest.raises(ValidationError, match="2 invalid row.s.; nothing was scored") as info:
        score_rows.scan_jsonl(source)
    assert info.value.errors == expected
    records, _ = read_records(source)
    with pytest.raises(ValidationError) as local:
        score_rows.check_records(records, str(source))
    assert local.value.errors == expected


def test_the_local_engine_refuses_the_same_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    source = _file(tmp_path / "bad.jsonl", REFUSED)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(source), "-m", "em", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "2 invalid row(s); nothing was scored" in err
    assert "row 9: references is empty" in err and "row 11: question must be text" in err
    assert not out.exists()
    ok = _file(tmp_path / "ok.jsonl", SCORABLE)
    assert main(["score", str(ok), "-m", "em", "-o", str(out)]) == 0
    assert len(pd.read_json(out, lines=True)) == 16


# -- on a local Ray ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,  # one for the actor pool, one for the read tasks (1 deadlocks)
        include_dashboard=False,
        logging_level="WARNING",
        runtime_env={"env_vars": {"QAEVAL_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()


@needs_ray
def test_ray_refuses_the_same_rows_before_dispatch_and_writes_nothing(
    local_ray: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QAEVAL_DEBUG", "1")  # the error itself, not its one-line print
    source = _file(tmp_path / "bad.jsonl", {**REFUSED, **SCORABLE})
    outputs = {"local": tmp_path / "local.jsonl", "ray": tmp_path / "ray.jsonl"}
    errors = {}
    for engine, out in outputs.items():
        with pytest.raises(ValidationError) as info:
            main(["score", str(source), "-m", "em", "-o", str(out), "--engine", engine])
        errors[engine] = info.value.errors
        assert not out.exists()
    assert errors["ray"] == errors["local"]
    assert [e.row for e in errors["ray"]] == [9, 11]


@needs_ray
def test_ray_scores_what_the_local_engine_scores(local_ray: object, tmp_path: Path) -> None:
    source = _file(tmp_path / "mixed.jsonl", SCORABLE)
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert main(["score", str(source), "-m", "em,f1", "-o", str(local)]) == 0
    args = ["score", str(source), "-m", "em,f1", "-o", str(on_ray), "--engine", "ray"]
    assert main([*args, "--batch-size", "8"]) == 0
    a, b = pd.read_json(local, lines=True), pd.read_json(on_ray, lines=True)
    assert b["id"].tolist() == a["id"].tolist()
    for column in ("em", "em_correct", "f1", "f1_correct"):
        assert b[column].tolist() == a[column].tolist(), column
    written = [json.loads(line) for line in on_ray.read_text("utf-8").splitlines()]
    assert written[2]["candidate"] == "1945" and written[6]["candidate"] is None
    assert not list(tmp_path.glob(".qaeval-uniform-*"))  # the copy is removed
