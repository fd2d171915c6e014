"""``qaeval report`` on the demo store: the HTML page and the JSON numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaeval_core.cli.main import main as cli_main
from qaeval_core.workflows import score_dataset

DEMO = "demo-nq301"


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('report') / 'demo.sqlite'}"
    assert cli_main(["demo", "--no-score", "--db", url]) == 0  # scored below, by the test
    score_dataset(url, DEMO, ["em", "f1"])
    return url


def test_report_writes_html_and_json(demo_url: str, tmp_path: Path, capsys) -> None:
    html_path, json_path = tmp_path / "out" / "report.html", tmp_path / "numbers.json"
    code = cli_main(
        [
            "report",
            "--db",
            demo_url,
            "--dataset",
            DEMO,
            "-o",
            str(html_path),
            "--json",
            str(json_path),
            "--n-boot",
            "100",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "298 item(s), 635 label(s), 2 metric(s)" in out
    page = html_path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "qaeval analysis: demo-nq301" in page
    assert "Krippendorff" in page and "Worst disagreements" in page
    assert "<script src=" not in page  # plotly.js inlined: the page works offline
    numbers = json.loads(json_path.read_text(encoding="utf-8"))
    assert numbers["counts"]["items"] == 298
    assert numbers["counts"]["items_by_label_count"] == {"0": 0, "1": 0, "2": 259, "3+": 39}
    assert set(numbers["settings"]["metric_configs"]) == {"em", "f1"}
    assert numbers["settings"]["n_boot"] == 100
    assert {r["metric_id"] for r in numbers["metrics"]} == {"em", "f1"}
    assert numbers["leaderboard"] and numbers["ranking"]

    # Same seed, same numbers (CI can diff the JSON).
    again = tmp_path / "again.json"
    cli_main(
        [
            "report",
            "--db",
            demo_url,
            "-d",
            DEMO,
            "-o",
            str(tmp_path / "b.html"),
            "--json",
            str(again),
            "--n-boot",
            "100",
        ]
    )
    assert again.read_text(encoding="utf-8") == json_path.read_text(encoding="utf-8")


def test_report_metric_filter_and_errors(demo_url: str, tmp_path: Path, capsys) -> None:
    json_path = tmp_path / "em.json"
    code = cli_main(
        [
            "report",
            "--db",
            demo_url,
            "-d",
            DEMO,
            "-o",
            str(tmp_path / "em.html"),
            "--json",
            str(json_path),
            "--metric",
            "em",
            "--n-boot",
            "0",
        ]
    )
    assert code == 0
    numbers = json.loads(json_path.read_text(encoding="utf-8"))
    assert set(numbers["settings"]["metric_configs"]) == {"em"}

    code = cli_main(["report", "--db", demo_url, "-d", "nope", "-o", str(tmp_path / "x.html")])
    assert code == 1
    assert (
        "No dataset named 'nope' (known datasets: demo-nq301, demo-nq301-loop)"
        in capsys.readouterr().err
    )
    code = cli_main(
        ["report", "--db", demo_url, "-d", DEMO, "-o", str(tmp_path / "x.html"), "-m", "bleu"]
    )
    assert code == 1
    assert "No scores of metric(s) bleu" in capsys.readouterr().err
    code = cli_main(
        [
            "report",
            "--db",
            demo_url,
            "-d",
            DEMO,
            "-o",
            str(tmp_path / "x.html"),
            "--score-policy",
            "median",
        ]
    )
    assert code == 1
    assert "--score-policy must be one of mean, final, soft" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
