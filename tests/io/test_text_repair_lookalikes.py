"""``--fix-text`` repairs only provable mojibake (issue 21, item 20): legitimate text that
merely looks like mojibake ("10 Å²", a quoted Portuguese "IRMÃ") is kept, references
included, and the import says which fields of which rows it changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaeval_core import io, store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.io.repair import describe_repairs, repair_text, repaired_fields

#: Legitimate strings; the first five were rewritten by ftfy's default heuristic
#: ("10 Ų", "“IRMÔ", the zero-width no-break space deleted, "MISUT\xa0AJIKKO").
LOOK_ALIKES = [
    "10 Å²",  # square ångströms
    "a cavity of 30 Å³",
    "ELE DISSE “IRMÃ”",  # Portuguese capitals in quotes
    "word\ufeffjoiner",
    "MISUTÂ\xa0AJIKKO",  # ftfy's own known false positive
    "São Paulo",
    "naïve",
    "Æsir",
    "Łódź",
    "façade",
    "Ångström",
    "Wrocław",
    "Über",
    "2.45\xa0billion",
    "30–31 May",
]


def mojibake(text: str) -> str:
    """``text`` as it arrives after UTF-8 bytes were read as Windows-1252 (true mojibake)."""
    return text.encode("utf-8").decode("sloppy-windows-1252")


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_legitimate_look_alike_is_kept_and_its_mojibake_is_repaired(text: str) -> None:
    assert repair_text(text) == text
    broken = mojibake(text)
    assert broken != text
    assert repair_text(broken) == text


@pytest.mark.parametrize(
    ("broken", "fixed"),
    [
        ("Ã…ngstrÃ¶m", "Ångström"),
        ("MÃ¼ller", "Müller"),
        ("WrocÅ‚aw", "Wrocław"),
        ("Ãœber", "Über"),
        ("about 2.45Â\xa0billion", "about 2.45\xa0billion"),
        ("\x93quoted\x94", "“quoted”"),  # C1 controls read as Latin-1
        ("Ð¼Ð¾Ñ\x81ÐºÐ²Ð°", "москва"),
    ],
)
def test_real_mojibake_is_repaired(broken: str, fixed: str) -> None:
    assert repair_text(broken) == fixed


@pytest.mark.parametrize(
    "text",
    [
        "Ã…ngström",  # half repaired already: not one consistent round trip
        "IRMÃ”",  # one two-character coincidence at the end of a capital word
        "ÃŸ",  # could be ß, could be a Portuguese capital and a quote
        "\x1b[31mred\x1b[0m",  # terminal escapes are not mojibake
        "plain ASCII",
    ],
)
def test_what_is_not_provable_is_left_alone(text: str) -> None:
    assert repair_text(text) == text


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return path


def test_the_import_keeps_look_alike_references_and_reports_what_changed_per_row(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": "a", "question": "area?", "references": ["10 Å²", "Æsir"], "candidate": "Å²"},
        {
            "id": "b",
            "question": "who?",
            "references": [mojibake("Müller")],
            "candidate": mojibake("Thomas Müller"),
        },
        {"id": "c", "question": mojibake("naïve?"), "references": ["yes"], "candidate": "yes"},
        {"id": "d", "question": "where?", "references": ["ELE DISSE “IRMÃ”"], "candidate": "x"},
    ]
    source = _write(tmp_path / "m.jsonl", rows)
    scan = io.scan_items(source, fix_text=True)
    assert scan.repairs == [(2, ["references", "candidate"]), (3, ["question"])]
    assert cli_main(["import", str(source), "-d", "fx", "--fix-text", "--db", sqlite_url]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert "Text repaired in 2 row(s)" in out
    assert "row 2 (references, candidate), row 3 (question)" in out
    assert "References changed in row(s) 2: scores compare against the repaired references" in out
    items = {i.id: i for i in store.load_items(sqlite_url, "fx")}
    assert list(items["a"].references) == ["10 Å²", "Æsir"] and items["a"].candidate == "Å²"
    assert list(items["d"].references) == ["ELE DISSE “IRMÃ”"]
    assert list(items["b"].references) == ["Müller"]
    assert items["b"].meta["original_text"]["references"] == [mojibake("Müller")]
    assert items["c"].question == "naïve?"
    assert "original_text" not in (items["a"].meta or {})


def test_repaired_fields_and_the_report_of_no_repair() -> None:
    (row,) = io.parse_records(
        [{"question": mojibake("été?"), "references": ["x"], "candidate": "y"}]
    )
    assert repaired_fields(row) == []
    assert repaired_fields(io.repair_item(row)) == ["question"]
    assert describe_repairs([]) == "Text repaired in 0 row(s): no field held provable mojibake."


def test_the_app_import_lists_the_rows_and_fields_it_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from _apptest import logged_in

    from qaeval_core import store
    from qaeval_core.store import session as store_session

    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    store_session.upgrade(url)
    store.add_user(url, "res", "researcher", "pw-res")
    monkeypatch.setenv("QAEVAL_DATABASE_URL", url)
    rows = [
        {"id": "a", "question": "area?", "references": ["10 Å²"], "candidate": "10 Å²"},
        {"id": "b", "question": "who?", "references": [mojibake("Müller")], "candidate": "x"},
    ]
    at = logged_in("res", timeout=90)
    at.switch_page("views/data.py").run()
    body = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode("utf-8")
    at.get("file_uploader")[0].upload("m.jsonl", body)
    at.text_input(key="import_dataset").input("fx")
    at.checkbox(key="import_fix_text").check()
    at.button(key="import_submit").click().run()
    assert not at.exception, at.exception
    info = " ".join(i.value for i in at.info)
    assert "Text repaired in 1 row(s)" in info and "row 2 (references)" in info
    assert "References changed in row(s) 2" in info
    items = {i.id: i for i in store.load_items(url, "fx")}
    assert list(items["a"].references) == ["10 Å²"] and list(items["b"].references) == ["Müller"]
