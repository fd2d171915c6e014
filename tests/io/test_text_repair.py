"""Mojibake (issue 14, problem 9): the shipped demo data is clean, and ``--fix-text`` repairs an
import with ftfy, keeping the originals. Also: ``qaeval demo`` arrives scored (problem 8)."""

from __future__ import annotations

import json
from pathlib import Path

import ftfy
from _paths import DEMO_DATA

from qaeval_core import io, store
from qaeval_core.analysis import load_frames
from qaeval_core.cli.demo import DEMO_DATASET, DEMO_METRICS
from qaeval_core.cli.main import main as cli_main

DATA = DEMO_DATA
#: The 13 demo rows that shipped with mojibake ("2.45Â billion", "30â€“31").
REPAIRED = [f"kamalloo-nq301-{i}" for i in (*range(11, 18), *range(249, 255))]


def test_the_demo_data_has_no_mojibake() -> None:
    rows = {r["id"]: r for r in map(json.loads, DATA.read_text(encoding="utf-8").splitlines())}
    for row in rows.values():
        text = json.dumps(row, ensure_ascii=False)
        assert ftfy.fix_text(text) == text, row["id"]
        assert "Â" not in text and "â€" not in text, row["id"]
    assert all(i in rows for i in REPAIRED)
    assert "2.45\xa0billion" in json.dumps(rows["kamalloo-nq301-11"], ensure_ascii=False)
    assert "30–31" in json.dumps(rows["kamalloo-nq301-249"], ensure_ascii=False)


def write_mojibake(path: Path) -> Path:
    rows = [
        {
            "id": "a",
            "question": "how many people?",
            "references": ["2.45Â\xa0billion"],
            "candidate": "about 2.45Â\xa0billion",
            "label": 1,
        },
        {
            "id": "b",
            "question": "when?",
            "references": ["30â€“31 May"],
            "candidate": "May 30",
            "label": 0,
        },
        {"id": "c", "question": "“quoted” &amp; ok", "references": ["x"], "candidate": "x"},
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return path


def test_fix_text_repairs_on_import_and_keeps_the_originals(
    sqlite_url: str, tmp_path: Path
) -> None:
    source = write_mojibake(tmp_path / "m.jsonl")
    assert cli_main(["import", str(source), "-d", "raw", "--db", sqlite_url]) == 0
    assert cli_main(["import", str(source), "-d", "fixed", "--fix-text", "--db", sqlite_url]) == 0
    raw = load_frames(sqlite_url, "raw").items.set_index("external_id")
    fixed = load_frames(sqlite_url, "fixed").items.set_index("external_id")
    assert raw.loc["a", "candidate"] == "about 2.45Â\xa0billion"  # off by default
    assert fixed.loc["a", "candidate"] == "about 2.45\xa0billion"
    assert list(fixed.loc["b", "references"]) == ["30–31 May"]
    # Only encoding repairs: curly quotes and HTML entities stay as they came.
    assert fixed.loc["c", "question"] == "“quoted” &amp; ok"
    items = {i.id: i for i in store.load_items(sqlite_url, "fixed")}
    assert items["a"].meta["original_text"] == {
        "references": ["2.45Â\xa0billion"],
        "candidate": "about 2.45Â\xa0billion",
    }
    assert "original_text" not in (items["c"].meta or {})


def test_repair_item_counts_and_read_items_path(tmp_path: Path) -> None:
    source = write_mojibake(tmp_path / "m.jsonl")
    scan = io.scan_items(source, fix_text=True)
    assert scan.repaired == 2
    rows = io.read_items(source)
    fixed = [io.repair_item(r) for r in rows]
    assert [a is b for a, b in zip(rows, fixed, strict=True)] == [False, False, True]


def test_demo_arrives_scored_with_the_fast_metrics(sqlite_url: str) -> None:
    assert cli_main(["demo", "--db", sqlite_url]) == 0
    frames = load_frames(sqlite_url, DEMO_DATASET)
    assert set(frames.metric_ids) == set(DEMO_METRICS)
    assert frames.scores.groupby("metric_id").size().eq(298).all()
    assert "original_text" not in str(frames.items["question"].tolist())
    # Refreshing scores nothing twice and adds no item.
    assert cli_main(["demo", "--db", sqlite_url]) == 0
    assert len(load_frames(sqlite_url, DEMO_DATASET).scores) == len(frames.scores)
