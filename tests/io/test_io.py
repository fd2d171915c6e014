"""Reading, validating and writing item files (qaeval_core.io); no store involved."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _paths import SHARED_DATA, TEST_DATA

from qaeval_core import io
from qaeval_core.errors import ConfigError, ValidationError
from qaeval_core.schema import content_hash

SHARED_DATA = SHARED_DATA

DATA = TEST_DATA


def labels_of(item: io.ItemRow) -> dict[str, int]:
    return {label.rater: label.value for label in item.labels}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def ok_row(i: int, **extra: object) -> dict:
    return {
        "id": f"i{i}",
        "question": f"question {i}",
        "references": ["a"],
        "candidate": "a",
    } | extra


# -- shared data ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rows", "items", "labels"),
    [
        ("kamalloo_nq301", 1490, 1490, 3196),
        ("answer_matching_mmlu_pro", 862, 802, 1604),
        ("pedants_ae_augmented_train", 15077, 15077, 15077),
    ],
)
def test_shared_data_files_import_as_they_are(name: str, rows: int, items: int, labels: int):
    path = SHARED_DATA / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    parsed = io.read_items(path)
    assert sum(len(r.rows) for r in parsed) == rows
    assert len(parsed) == items
    assert sum(len(r.labels) for r in parsed) == labels
    assert all(lab.value in (0, 1, 2) for r in parsed for lab in r.labels)


def test_mmlu_rows_repeating_an_id_merge_their_raters():
    path = SHARED_DATA / "answer_matching_mmlu_pro.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    parsed = {r.external_id: r for r in io.read_items(path)}
    item = parsed["answer_matching_mmlu_pro-10646-deepseek/deepseek-chat-v3-0324"]
    assert item.rows == [59, 60]
    assert labels_of(item) == {"2907": 2, "strat1shash": 2}


# -- the shared-data form ------------------------------------------------------------------


def test_shared_form_labels_map_to_three_point_scale():
    items = {r.external_id: r for r in io.read_items(DATA / "shared_form.jsonl")}
    assert list(items) == ["q1-a", "q1-b", "q2-a", "q3-a", "q4-a"]
    a = items["q1-a"]
    assert a.rows == [1]
    assert a.references == ["Paris", "Paris, France"]
    assert a.qa_model == "sysA | sysB"
    assert labels_of(a) == {"ann1": 2, "ann2": 0}  # ann3 null: not rated
    assert a.meta == {"dataset": "toy", "qid": "1", "source_human": {"label": 1}}
    # only an adjudicated label: it becomes rater "gold"; a numeric answer becomes text
    assert labels_of(items["q2-a"]) == {"gold": 2}
    assert items["q2-a"].candidate == "4"
    assert items["q2-a"].rows == [4]  # the blank line 3 still counts
    # 1-5 ratings: >=4 -> 2, 3 -> 1, <=2 -> 0; binary used when there is no rating
    assert labels_of(items["q3-a"]) == {"r1": 2, "r2": 1, "r3": 0, "r4": 2}
    assert items["q3-a"].meta == {"dataset": "toy", "source_human": {"score": 3.5}}
    # an empty answer with a human judgment is data, not an error
    assert items["q4-a"].candidate == ""
    assert labels_of(items["q4-a"]) == {"gold": 0}


def test_item_hashes_and_default_ids():
    [with_id, without_id] = io.parse_records(
        [ok_row(1), {"question": "q", "references": "a", "candidate": "b"}]
    )
    assert with_id.content_key == content_hash("question 1", ["a"], "a", None, None)
    assert with_id.content_hash != with_id.content_key  # the id is part of the stored hash
    assert without_id.external_id == content_hash("q", ["a"], "b")[:16]


def test_label_scales_and_simple_label_columns():
    rows = [
        ok_row(1, label=1),
        ok_row(2, label="0"),
        ok_row(3, label=True),
        ok_row(4, label=2, label_scale="three"),
        ok_row(5, human={"scale": "three", "raters": [{"rater": "x", "label": 1, "rule": 4}]}),
    ]
    items = io.parse_records(rows)
    assert [labels_of(i) for i in items] == [
        {"gold": 2},
        {"gold": 0},
        {"gold": 2},
        {"gold": 2},
        {"x": 1},
    ]
    assert items[4].labels[0].rule == 4
    three = io.parse_records([ok_row(1, label=1)], label_scale="three")
    assert labels_of(three[0]) == {"gold": 1}
    with pytest.raises(ValidationError, match=r"row 1: label 2 is not binary.*label_scale='three'"):
        io.parse_records([ok_row(1, label=2)])


# -- other layouts -------------------------------------------------------------------------


def test_csv_common_layout_aliases_json_cells_and_slash_aliases():
    items = io.read_items(DATA / "common_layout.csv")
    assert [i.rows for i in items] == [[1], [2], [3]]
    first, second, third = items
    assert first.references == ["Paris", "City of Light"]
    assert first.candidate == "paris"
    assert first.qa_model == "sysA"
    assert first.context == "France is a country."
    assert first.choices is None
    assert labels_of(first) == {"ann1": 2, "ann2": 0}
    assert first.meta == {"extra_col": "x1"}
    assert second.references == ["blue", "azure"]
    assert second.qa_model == "sysA | sysB"
    assert second.choices == ["blue", "green"]
    assert second.labels == []
    assert third.references == ["8"]
    assert third.meta is None


def test_alias_separator_can_be_turned_off():
    items = io.read_items(DATA / "common_layout.csv", alias_separator=None)
    assert items[0].references == ["Paris / City of Light"]


def test_long_format_rows_merge_into_one_item_with_several_raters():
    items = io.read_items(DATA / "long_format.tsv", label_scale="three")
    assert [i.external_id for i in items] == ["a1", "a2"]
    assert items[0].rows == [1, 2]
    assert items[0].references == ["Leonardo da Vinci"]
    assert items[0].candidate == "da Vinci"
    assert labels_of(items[0]) == {"alice": 2, "bob": 1}
    assert labels_of(items[1]) == {"alice": 0}


def test_mapping_overrides_aliases(tmp_path: Path):
    path = write_jsonl(
        tmp_path / "m.jsonl",
        [{"q_text": "q", "answer": "the model's answer", "truth": ["x"], "tags": "t"}],
    )
    [item] = io.read_items(
        path, mapping={"q_text": "question", "answer": "candidate", "truth": "references"}
    )
    assert (item.question, item.candidate, item.references) == ("q", "the model's answer", ["x"])
    assert item.meta == {"tags": "t"}
    with pytest.raises(ConfigError, match="fields are id, question"):
        io.read_items(path, mapping={"q_text": "questoin"})


def test_column_mapping_is_read_from_pairs_as_people_type_them():
    """One parser for the CLI's --map pairs and the Data page's comma-separated field."""
    assert io.column_mapping([" q_text = question", "answer=candidate"]) == {
        "q_text": "question",
        "answer": "candidate",
    }
    assert io.column_mapping([]) == {}
    for bad in ("oops", "=references", "truth=", " = "):
        with pytest.raises(ConfigError, match=r"^mapping expects COLUMN=FIELD pairs") as caught:
            io.column_mapping([bad])
        assert caught.value.param == "mapping"
    with pytest.raises(ConfigError, match="mapping names column 'a' twice") as caught:
        io.column_mapping(["a=question", "a =candidate"])  # the page kept the last one silently
    assert caught.value.param == "mapping"


def test_parquet_and_json_inputs(tmp_path: Path):
    rows = [
        ok_row(1, references="a", choices=["a", "b"], human=None),
        ok_row(2, references="x/y", human={"label": 0}),
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "f.parquet")
    (tmp_path / "f.json").write_text(json.dumps(rows), encoding="utf-8")
    for name in ("f.parquet", "f.json"):
        items = io.read_items(tmp_path / name)
        assert [i.external_id for i in items] == ["i1", "i2"]
        assert items[0].choices == ["a", "b"]
        assert items[1].references == ["x", "y"]
        assert labels_of(items[1]) == {"gold": 0}
    raw = (tmp_path / "f.parquet").read_bytes()
    assert len(io.read_items(raw, name="upload.parquet")) == 2


def test_unknown_suffix_and_missing_or_empty_files(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"suffix '\.xlsx'.*fmt=jsonl"):
        io.read_items(tmp_path / "data.xlsx")
    with pytest.raises(ConfigError, match="No such file"):
        io.read_items(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="no rows"):
        io.read_items(tmp_path / "empty.jsonl")
    with pytest.raises(ConfigError, match="not-parquet.*Parquet"):
        (tmp_path / "not-parquet.parquet").write_text("hello")
        io.read_items(tmp_path / "not-parquet.parquet")


# -- validation ----------------------------------------------------------------------------


def bad_file(tmp_path: Path) -> Path:
    """One valid row, then one row per error class (line numbers = row numbers)."""
    long = "x" * (io.MAX_TEXT_CHARS + 1)
    lines = [
        json.dumps(ok_row(1)),  # 1 ok
        json.dumps({"id": "i2", "question": "q", "references": ["a"]}),  # 2 missing candidate
        json.dumps(ok_row(3, question={"text": "q"})),  # 3 wrong type
        json.dumps(ok_row(4, candidate="   ")),  # 4 empty candidate without a label
        json.dumps(ok_row(5, references={"a": 1})),  # 5 references not a list
        json.dumps(ok_row(6, references=[])),  # 6 references empty
        json.dumps(ok_row(1, candidate="different")),  # 7 duplicate id, other content
        "__BYTES__",  # 8 undecodable bytes
        json.dumps(ok_row(9, candidate=long)),  # 9 answer over the size limit
        '{"id": "i10", "question": ',  # 10 malformed JSON
        json.dumps(["not", "an", "object"]),  # 11 not an object
        json.dumps(ok_row(12, label="maybe")),  # 12 label not a number
        json.dumps(ok_row(13, question=long)),  # 13 question over the size limit
    ]
    data = "\n".join(lines).encode("utf-8")
    data = data.replace(b'"__BYTES__"', b"").replace(
        b"__BYTES__", b'{"id": "i8", "question": "caf\xe9", "references": ["a"], "candidate": "a"}'
    )
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    return path


EXPECTED = {
    2: "missing field 'candidate'",
    3: "question must be text, got an object",
    4: "candidate is empty",
    5: "references must be a list of strings (or one string), got an object",
    6: "references is empty",
    7: "duplicate id 'i1' (first at row 1) with different content",
    8: "undecodable bytes: 0xe9",
    9: f"candidate has {io.MAX_TEXT_CHARS + 1:,} characters; the limit is 100,000",
    10: "invalid JSON",
    11: "expected a JSON object, got a list",
    12: "label 'maybe' is not a number",
    13: "question has 100,001 characters",
}


def test_every_bad_row_is_reported_with_its_row_number(tmp_path: Path):
    with pytest.raises(ValidationError) as info:
        io.read_items(bad_file(tmp_path))
    err = info.value
    assert [e.row for e in err.errors] == sorted(EXPECTED)
    for e in err.errors:
        assert EXPECTED[e.row] in e.reason, (e.row, e.reason)
    assert "12 invalid row(s); nothing was imported" in str(err)
    assert "row 8: undecodable bytes" in str(err)


def test_csv_errors_use_data_row_numbers(tmp_path: Path):
    data = (
        b"question,references,candidate\n"
        b"q1,a,a\n"
        b"q2,,b\n"  # 2 empty references
        b"q3,a,caf\xe9\n"  # 3 undecodable
        b"q4,a\n"  # 4 wrong number of values
        b"q5,a,\n"  # 5 empty candidate
    )
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    with pytest.raises(ValidationError) as info:
        io.read_items(path)
    assert [(e.row, e.reason.split(":")[0].split(" (")[0]) for e in info.value.errors] == [
        (2, "references is empty"),
        (3, "undecodable bytes"),
        (4, "has 2 values but the header has 3"),
        (5, "candidate is empty"),
    ]


def test_latin1_fixture_names_the_bad_row():
    with pytest.raises(ValidationError, match=r"row 2: undecodable bytes: 0xe9"):
        io.read_items(DATA / "latin1_row.jsonl")


def test_conflicting_labels_of_one_rater_are_an_error():
    rows = [
        {
            "id": "a",
            "question": "q",
            "references": ["r"],
            "candidate": "c",
            "rater": "x",
            "label": 1,
        },
        {
            "id": "a",
            "question": "q",
            "references": ["r"],
            "candidate": "c",
            "rater": "x",
            "label": 0,
        },
    ]
    with pytest.raises(ValidationError, match=r"row 2: rater 'x' labels id 'a' 0 here but 2"):
        io.parse_records(rows)


def test_more_type_errors():
    rows = [
        ok_row(1, human={"raters": [{"label": 1}]}),
        ok_row(2, human={"raters": [{"rater": "a", "label": 1, "rule": 9}]}),
        ok_row(3, human={"raters": [{"rater": "a", "rating": 7}]}),
        ok_row(4, human="not json"),
        ok_row(5, references=["a", None]),
        ok_row(6, model={"name": "x"}),
        ok_row(7, label_scale="five", label=1),
        {"id": "x" * 301, "question": "q", "references": ["a"], "candidate": "a"},
    ]
    with pytest.raises(ValidationError) as info:
        io.parse_records(rows)
    reasons = {e.row: e.reason for e in info.value.errors}
    assert "has no rater name" in reasons[1]
    assert "rule must be a rule number 1-7" in reasons[2]
    assert "must be a 1-5 rating" in reasons[3]
    assert "human must be an object" in reasons[4]
    assert "references[2] is null" in reasons[5]
    assert "model must be text, got an object" in reasons[6]
    assert "label_scale must be one of binary, three" in reasons[7]
    assert "id has 301 characters; the limit is 300" in reasons[8]


# -- writing -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".tsv", ".parquet"])
def test_written_items_read_back_identical(tmp_path: Path, suffix: str):
    items = io.read_items(DATA / "shared_form.jsonl")
    records = [
        {
            "id": r.external_id,
            "question": r.question,
            "references": r.references,
            "candidate": r.candidate,
            "context": r.context,
            "choices": r.choices,
            "wrong_answers": r.wrong_answers,
            "model": r.qa_model,
            "meta": r.meta,
            "human": {
                "scale": "three",
                "raters": [{"rater": lab.rater, "label": lab.value} for lab in r.labels],
            },
        }
        for r in items
    ]
    path = io.write_records(records, tmp_path / f"out{suffix}")
    again = io.read_items(path)
    assert [(r.external_id, r.content_hash, labels_of(r)) for r in again] == [
        (r.external_id, r.content_hash, labels_of(r)) for r in items
    ]
    assert [r.meta for r in again] == [r.meta for r in items]


def test_write_rejects_unknown_suffix_and_leaves_no_partial_file(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"suffix '\.xlsx'"):
        io.write_records([{"a": 1}], tmp_path / "out.xlsx")
    assert list(tmp_path.iterdir()) == []


def test_csv_export_encodes_lists_as_json(tmp_path: Path):
    path = io.write_records(
        [{"references": ["a/b", "c"], "flag": True, "none": None}], tmp_path / "o.csv"
    )
    assert path.read_text().splitlines() == ["references,flag,none", '"[""a/b"", ""c""]",true,']


# -- streaming (issue 13): scan_items validates like read_items, items() yields the same rows --

_STREAM_ROWS = [
    {"id": "a", "question": "q", "references": ["r"], "candidate": "c", "rater": "x", "label": 1},
    {"id": "b", "question": "q2", "references": "r2", "candidate": "c2"},
    {"id": "a", "question": "q", "references": ["r"], "candidate": "c", "rater": "y", "label": 0},
    {"question": "no id", "references": ["r"], "candidate": "c"},
]


@pytest.mark.parametrize("name", ["long_format.tsv", "shared_form.jsonl", "common_layout.csv"])
def test_scan_items_streams_what_read_items_reads(name: str):
    kwargs = {"label_scale": "three"} if name.endswith(".tsv") else {}
    scan = io.scan_items(DATA / name, **kwargs)
    items = io.read_items(DATA / name, **kwargs)
    assert list(scan.items()) == items
    assert scan.n_items == len(items) and scan.rows == sum(len(r.rows) for r in items)
    assert scan.raters == {lab.rater for r in items for lab in r.labels}


def test_scan_items_merges_repeated_ids_and_reads_bytes(tmp_path: Path):
    data = ("\ufeff" + "\n".join(json.dumps(r) for r in _STREAM_ROWS) + "\n\n").encode()
    scan = io.scan_items(data, name="up.jsonl")
    assert scan.repeated == {"a"} and scan.rows == 4 and scan.n_items == 3
    assert list(scan.items()) == io.read_items(data, name="up.jsonl")
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    assert list(io.scan_items(path).items()) == io.read_items(path)


def test_scan_items_reports_the_same_errors(tmp_path: Path):
    bad = [
        *_STREAM_ROWS,
        {"id": "a", "question": "other", "references": ["r"], "candidate": "c"},
        {
            "id": "a",
            "question": "q",
            "references": ["r"],
            "candidate": "c",
            "rater": "x",
            "label": 0,
        },
        {"id": "z", "question": "", "references": [], "candidate": "c"},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in bad) + "\n[1]\n{oops\n")
    with pytest.raises(ValidationError) as streamed:
        io.scan_items(path)
    with pytest.raises(ValidationError) as whole:
        io.read_items(path)
    assert str(streamed.value) == str(whole.value)
    assert "duplicate id 'a' (first at row 1) with different content" in str(streamed.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="contains no rows"):
        io.scan_items(empty)
    with pytest.raises(ConfigError, match="No such file"):
        io.scan_items(tmp_path / "missing.jsonl")


def test_a_file_changed_between_the_passes_is_refused(tmp_path: Path):
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _STREAM_ROWS) + "\n")
    scan = io.scan_items(path)
    path.write_text(json.dumps(_STREAM_ROWS[0]) + "\n{broken\n")
    with pytest.raises(ConfigError, match="changed while it was being imported"):
        list(scan.items())
