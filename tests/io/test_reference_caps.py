"""References are capped per item at import, with the row number (issue 21, item 16): one
imported item with 10 million aliases froze the browser that showed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaeval_core import io
from qaeval_core.cli.main import main as cli_main
from qaeval_core.errors import ValidationError
from qaeval_core.io import cells


def _row(i: int, **fields: object) -> dict[str, object]:
    return {"id": f"q{i}", "question": f"question {i}?", "references": ["x"], "candidate": "x"} | (
        fields
    )


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_the_caps_are_named_and_sensible() -> None:
    assert io.MAX_LIST_ITEMS == cells.MAX_LIST_ITEMS == 1_000
    assert io.MAX_LIST_CHARS == cells.MAX_LIST_CHARS == io.MAX_TEXT_CHARS == 100_000


def test_too_many_references_is_a_row_error_and_nothing_is_read(tmp_path: Path) -> None:
    many = [f"alias {k}" for k in range(io.MAX_LIST_ITEMS + 1)]
    source = _jsonl(tmp_path / "a.jsonl", [_row(1), _row(2, references=many), _row(3)])
    for read in (io.read_items, io.scan_items):
        with pytest.raises(ValidationError) as info:
            read(source)
        assert [e.row for e in info.value.errors] == [2]
        assert "references has 1,001 entries; the limit is 1,000 per item" in str(info.value)
    ok = _jsonl(tmp_path / "ok.jsonl", [_row(1, references=many[:-1])])
    assert len(io.read_items(ok)[0].references) == io.MAX_LIST_ITEMS


def test_a_huge_alias_list_is_refused_before_its_entries_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked: list[str] = []
    as_text = cells.as_text

    def counting(value: object, what: str, **kwargs: object) -> str:
        checked.append(what)
        return as_text(value, what, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cells, "as_text", counting)
    with pytest.raises(ValidationError, match="references has 200,000 entries"):
        io.parse_records([_row(1, references=["Paris"] * 200_000)])
    assert not any(w.startswith("references") for w in checked)


def test_references_over_the_total_size_are_refused(tmp_path: Path) -> None:
    long = ["a" * 40_000, "b" * 40_000, "c" * 40_000]  # each under the per-text limit
    source = _jsonl(tmp_path / "big.jsonl", [_row(1), _row(2), _row(3, references=long)])
    with pytest.raises(ValidationError) as info:
        io.read_items(source)
    assert [str(e) for e in info.value.errors] == [
        "row 3: references hold 120,000 characters in all; the limit is 100,000 per item"
    ]
    fits = _jsonl(tmp_path / "fits.jsonl", [_row(1, references=long[:2])])
    assert io.read_items(fits)[0].references == long[:2]


def test_slash_separated_aliases_and_choices_are_capped_too(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    aliases = "/".join(f"a{k}" for k in range(1_500))
    path.write_text(f"id,question,references,candidate\nq1,what?,{aliases},a1\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="row 1: references has 1,500 entries"):
        io.read_items(path)
    rows = [_row(1, choices=[f"c{k}" for k in range(1_001)])]
    with pytest.raises(ValidationError, match="row 1: choices has 1,001 entries"):
        io.parse_records(rows)


def test_the_cli_import_refuses_it_with_the_row_and_stores_nothing(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    many = [f"alias {k}" for k in range(5_000)]
    source = _jsonl(tmp_path / "a.jsonl", [_row(1), _row(2, references=many)])
    assert cli_main(["import", str(source), "-d", "capped", "--db", sqlite_url]) != 0
    err = capsys.readouterr().err
    assert "row 2: references has 5,000 entries; the limit is 1,000 per item" in err
    assert "nothing was imported" in err
