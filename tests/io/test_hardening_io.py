"""Hostile or odd input files (issue 13): formula injection, deep nesting, NUL, rating scales."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from qaeval_core import io, store
from qaeval_core.errors import ConfigError, QAEvalError, ValidationError

DEPTH = 32  # io.MAX_DEPTH, spelled out so the tests run (and fail) without it
FORMULA = "=cmd|' /C calc'!A0"


def row(i: int, **extra: object) -> dict:
    return {"id": f"i{i}", "question": f"q{i}", "references": ["a"], "candidate": "a"} | extra


# -- 6. CSV/TSV formula injection ----------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_csv_cells_starting_a_formula_are_neutralised(tmp_path: Path, suffix: str):
    texts = [FORMULA, "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx", "'=already", "plain", "'quoted"]
    records = [{"text": t, "number": -0.5, "numeric_text": "-0.5"} for t in texts]
    path = io.write_records(records, tmp_path / f"out{suffix}")
    delimiter = "\t" if suffix == ".tsv" else ","
    with open(path, encoding="utf-8", newline="") as fh:
        cells = list(csv.reader(fh, delimiter=delimiter))[1:]
    written = [c[0] for c in cells]
    assert written == [
        "'" + FORMULA,
        "'+1+2",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "''=already",
        "plain",
        "'quoted",
    ]
    assert all(not w.startswith(("=", "+", "-", "@", "\t", "\r")) for w in written)
    assert {(c[1], c[2]) for c in cells} == {("-0.5", "-0.5")}  # numbers stay numbers
    # ... and the reader takes the quote off again: the export reads back exactly
    back, errors = io.read_records(path)
    assert errors == []
    assert [rec["text"] for _, rec in back] == texts


def test_jsonl_keeps_formula_text_exact(tmp_path: Path):
    path = io.write_records([{"note": FORMULA}], tmp_path / "o.jsonl")
    assert json.loads(path.read_text()) == {"note": FORMULA}


def test_store_export_to_csv_neutralises_notes_and_rater_names(db_url: str, tmp_path: Path):
    human = {"scale": "three", "raters": [{"rater": "@evil", "label": 2, "note": FORMULA}]}
    store.import_items(db_url, "d", [row(1, candidate="-x", human=human)])
    out = io.write_records(store.export_store_records(db_url, "d", "labels"), tmp_path / "l.csv")
    with open(out, encoding="utf-8", newline="") as fh:
        (rec,) = csv.DictReader(fh)
    assert (rec["user"], rec["note"]) == ("'@evil", "'" + FORMULA)
    items = io.items_to_records(store.list_items(db_url, "d"), store.current_labels(db_url, "d"))
    out = io.write_records(items, tmp_path / "items.csv")
    with open(out, encoding="utf-8", newline="") as fh:
        (rec,) = csv.DictReader(fh)
    assert rec["candidate"] == "'-x"
    (again,) = io.read_items(out)
    assert again.candidate == "-x"
    assert (again.labels[0].rater, again.labels[0].note) == ("@evil", FORMULA)


# -- 7. deep nesting -----------------------------------------------------------------------


def nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_meta_up_to_the_depth_limit_imports(tmp_path: Path):
    (item,) = io.parse_records([row(1, meta=nested(DEPTH))])
    assert item.meta == nested(DEPTH)


@pytest.mark.parametrize("levels", [DEPTH + 1, 500, 5000])
def test_deep_meta_is_a_row_error_in_every_format(tmp_path: Path, levels: int):
    deep = nested(levels)
    with pytest.raises(ValidationError, match=r"row 2: meta nests objects/lists more than 32"):
        io.parse_records([row(1), row(2, meta=deep)])
    line = '{"id": "x", "question": "q", "references": ["a"], "candidate": "a", "meta": '
    text = line + '{"k": ' * levels + "1" + "}" * levels + "}"
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text(json.dumps(row(1)) + "\n" + text + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"row 2: .*nest") as caught:
        io.read_items(jsonl)
    assert [e.row for e in caught.value.errors] == [2]
    csv_file = tmp_path / "deep.csv"
    cell = '{"k": ' * levels + "1" + "}" * levels
    with open(csv_file, "w", encoding="utf-8", newline="") as fh:
        header = ["id", "question", "references", "candidate", "meta"]
        csv.writer(fh).writerows([header, ["a", "q", "a", "a", "{}"], ["b", "q", "a", "a", cell]])
    with pytest.raises(ValidationError, match=r"row 2: meta nests objects/lists more than 32"):
        io.read_items(csv_file)


def test_deep_json_array_file_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "deep.json"
    path.write_text("[" + "[" * 5000 + "]" * 5000 + "]", encoding="utf-8")
    with pytest.raises(ConfigError, match="nest too deeply"):
        io.read_items(path)


def test_deep_human_or_extra_column_is_a_row_error():
    with pytest.raises(ValidationError, match=r"row 1: human nests"):
        io.parse_records([row(1, human={"raters": [], "x": nested(100)})])
    with pytest.raises(ValidationError, match=r"row 1: extra nests"):
        io.parse_records([row(1, extra=[nested(100)])])


def test_deep_meta_never_reaches_the_store_so_exports_keep_working(db_url: str, tmp_path: Path):
    with pytest.raises(ValidationError, match="row 2: meta nests"):
        store.import_items(db_url, "d", [row(1), row(2, meta=nested(500))])
    store.import_items(db_url, "d", [row(1, meta=nested(DEPTH))])
    for suffix in (".jsonl", ".csv", ".parquet"):
        out = io.write_records(
            store.export_store_records(db_url, "d", "items"), tmp_path / f"x{suffix}"
        )
        assert [r.meta for r in io.read_items(out)] == [nested(DEPTH)]


@pytest.mark.parametrize("levels", [40, 500, 5000])
def test_deep_judge_config_is_a_config_error(levels: int):
    from qaeval_core.judge import Judge
    from qaeval_core.judge.config_file import read_config

    data = {"kind": "qaeval-judge", "schema_version": 2, "checksum": "x", "quality": nested(levels)}
    with pytest.raises(ConfigError, match="nest more than 32 levels"):
        read_config(data, "j.json")
    with pytest.raises(ConfigError, match="nest more than 32 levels"):
        Judge.from_config(data)


# -- 8. NUL characters ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "what"),
    [
        ({"candidate": "a\x00b"}, "candidate"),
        ({"question": "q\x00"}, "question"),
        ({"references": ["ok", "x\x00"]}, "references"),
        ({"context": "\x00"}, "context"),
        ({"id": "i\x00d"}, "id"),
        ({"meta": {"k": ["deep \x00 text"]}}, "meta"),
        ({"meta": {"k\x00": 1}}, "meta"),
        ({"human": {"raters": [{"rater": "r\x00", "label": 1}]}}, "human"),
        ({"human": {"raters": [{"rater": "r", "label": 1, "note": "n\x00"}]}}, "human"),
        ({"rater": "a\x00", "label": 1}, "rater"),
        ({"unmapped\x00": "x"}, "a column name"),
    ],
)
def test_nul_in_any_text_is_a_row_error_on_every_store(db_url: str, extra: dict, what: str):
    rows = [row(1), row(2) | extra]
    with pytest.raises(ValidationError, match=rf"row 2: {what} contains a NUL character"):
        store.import_items(db_url, "d", rows)
    assert store.list_datasets(db_url) == []  # nothing written, on SQLite as on PostgreSQL


def test_nul_in_a_file_names_its_row(tmp_path: Path):
    path = tmp_path / "nul.jsonl"
    path.write_text(
        json.dumps(row(1)) + "\n" + json.dumps(row(2, candidate="a\u0000")) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ValidationError, match=r"row 2: candidate contains a NUL"):
        io.read_items(path)


def test_nul_in_a_note_is_a_clear_error_on_every_store(db_url: str):
    from qaeval_core import store

    store.import_items(db_url, "d", [row(1)])
    store.add_user(db_url, "ann1", "annotator", "pw")
    item_id = int(store.list_items(db_url, "d").item_id[0])
    with pytest.raises(QAEvalError, match="note contains a NUL character"):
        store.save_label(db_url, "ann1", item_id, 2, note="bad\x00note", require_assignment=False)
    assert store.save_label(db_url, "ann1", item_id, 2, note="fine", require_assignment=False)


# -- 10. rating scales ---------------------------------------------------------------------


def smile_row(i: int, *ratings: float) -> dict:
    raters = [{"rater": f"r{n}", "rating": v} for n, v in enumerate(ratings, start=1)]
    return row(i, human={"raters": raters})


def stored(items: list[io.ItemRow]) -> list[dict[str, int]]:
    return [{lab.rater: lab.value for lab in item.labels} for item in items]


def test_zero_to_two_ratings_are_refused_without_a_declared_scale():
    with pytest.raises(
        ValidationError, match=r"row 1: .*must be a 1-5 rating, got 0.*rating_scale="
    ):
        io.parse_records([smile_row(1, 0, 2)])


def test_a_declared_rating_scale_maps_to_the_three_point_scale():
    rows = [smile_row(1, 0, 1), smile_row(2, 2, 2)]
    assert stored(io.parse_records(rows, rating_scale="0-2")) == [
        {"r1": 0, "r2": 1},
        {"r1": 2, "r2": 2},
    ]
    # the default 1-5 mapping is unchanged: >= 4 -> 2, 3 (and 3.5) -> 1, <= 2 -> 0
    assert stored(io.parse_records([smile_row(1, 2, 3, 3.5, 4, 5)])) == [
        {"r1": 0, "r2": 1, "r3": 1, "r4": 2, "r5": 2}
    ]
    with pytest.raises(ValidationError, match=r"row 1: .*must be a 0-2 rating, got 5"):
        io.parse_records([smile_row(1, 5)], rating_scale="0-2")
    with pytest.raises(ConfigError, match="LOW-HIGH such as 1-5 or 0-2, got '2-0'"):
        io.parse_records([smile_row(1, 1)], rating_scale="2-0")


def test_a_row_or_its_human_object_may_declare_its_rating_scale():
    in_human = row(1, human={"rating_scale": "0-2", "raters": [{"rater": "a", "rating": 1}]})
    in_column = smile_row(2, 2) | {"rating_scale": "0-2"}
    items = io.parse_records([in_human, in_column, smile_row(3, 4)])
    assert stored(items) == [{"a": 1}, {"r1": 2}, {"r1": 2}]
    assert all("rating_scale" not in (item.meta or {}) for item in items)
    assert items[0].meta is None  # the declared scale is not kept as data
    with pytest.raises(ValidationError, match="row 1: human.rating_scale must be a range"):
        io.parse_records([row(1, human={"rating_scale": "five", "raters": []})])


def test_cli_import_takes_rating_scale(db_url: str, tmp_path: Path, capsys):
    from qaeval_core.cli.main import main

    path = tmp_path / "smile.jsonl"
    path.write_text("".join(json.dumps(smile_row(i, i % 3)) + "\n" for i in range(3)))
    assert main(["import", str(path), "-d", "smile", "--db", db_url]) != 0
    assert "must be a 1-5 rating" in capsys.readouterr().err
    assert main(["import", str(path), "-d", "smile", "--db", db_url, "--rating-scale", "0-2"]) == 0
    labels = store.current_labels(db_url, "smile")
    assert sorted(labels.value.tolist()) == [0, 1, 2]
    assert store.import_file(db_url, str(path), "smile2", rating_scale="0-2").labels_added == 3


# -- 9. re-importing changed rows ----------------------------------------------------------


def test_reimport_with_changed_meta_or_choices_is_refused_listing_every_row(db_url: str):
    store.import_items(db_url, "d", [row(1, meta={"a": 1}), row(2), row(3, choices=["a", "b"])])
    before = store.list_items(db_url, "d").to_dict("records")
    again = [
        row(1, meta={"a": 2}),
        row(2),
        row(3, choices=["a", "c"], meta={"new": True}),
        row(4),
    ]
    with pytest.raises(ValidationError) as caught:
        store.import_items(db_url, "d", again, source="again.jsonl")
    assert [str(e) for e in caught.value.errors] == [
        "row 1: id 'i1' is already in dataset 'd' with different meta; nothing was changed "
        "(give the changed item a new id, or import into a new dataset)",
        "row 3: id 'i3' is already in dataset 'd' with different choices, meta; nothing was "
        "changed (give the changed item a new id, or import into a new dataset)",
    ]
    assert store.list_items(db_url, "d").to_dict("records") == before  # row 4 not added either
    same = store.import_items(db_url, "d", [row(1, meta={"a": 1}), row(2), row(4)])
    assert (same.items_added, same.items_skipped) == (1, 2)
