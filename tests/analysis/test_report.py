"""The report: strict JSON numbers, an offline HTML page, and escaped data text."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _report_frames import EVIL, report_frames

from qaeval_core.analysis.agreement import krippendorff_alpha
from qaeval_core.analysis.report import build_report, render_html, to_jsonable, write_report
from qaeval_core.errors import QAEvalError


@pytest.fixture
def frames() -> dict[str, pd.DataFrame]:
    return report_frames()


def test_numbers_are_strict_json_and_match_the_library(frames) -> None:
    report = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        dataset="nq",
        thresholds={"noisy": 0.5, EVIL: 0.5},
        n_boot=50,
    )
    numbers = json.loads(report.to_json())
    assert numbers["counts"]["items"] == 38
    assert numbers["counts"]["raters"] == 2
    assert numbers["aggregation"]["adjudicated"] == 1
    nq_labels = frames["labels"][frames["labels"].item_id < 38]
    overall = [
        r for r in numbers["agreement"] if r["grouping"] == "overall" and r["level"] == "nominal"
    ][0]
    assert overall["alpha"] == pytest.approx(krippendorff_alpha(nq_labels))
    stats = {(r["metric_id"], r["statistic"]) for r in numbers["metrics"]}
    assert ("noisy", "kendall_tau_b") in stats
    assert {r["qa_model"] for r in numbers["leaderboard"]} == {EVIL, "m1", "m2"}
    assert numbers["worst_disagreements"]
    # the same seed gives the same numbers
    again = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        dataset="nq",
        thresholds={"noisy": 0.5, EVIL: 0.5},
        n_boot=50,
    )
    assert again.to_json() == report.to_json()


def test_html_is_offline_and_escapes_data(frames, tmp_path: Path) -> None:
    report = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        thresholds={"noisy": 0.5, EVIL: 0.5},
        n_boot=20,
    )
    html_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    write_report(report, html_path=html_path, json_path=json_path)
    page = html_path.read_text(encoding="utf-8")
    assert EVIL not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert 'src="http' not in page and "src='http" not in page  # plotly.js is inlined
    assert page.count("class='qaeval-figure-spec'") >= 5  # the charts, drawn by one loader
    assert page.count("id='qaeval-plotlyjs'") == 1  # the library, once
    assert json.loads(json_path.read_text(encoding="utf-8"))["dataset"] is None


def test_report_without_scores_or_labels() -> None:
    items = pd.DataFrame({"item_id": [1, 2]})
    labels = pd.DataFrame(columns=["item_id", "rater", "value"])
    report = build_report(items, labels, n_boot=10)
    numbers = json.loads(report.to_json())
    assert numbers["counts"]["items_by_label_count"] == {"0": 2, "1": 0, "2": 0, "3+": 0}
    assert "metrics" not in numbers
    assert "<html" in render_html(report)


def test_unknown_dataset_lists_the_known_ones(frames) -> None:
    with pytest.raises(QAEvalError, match="known: nq, other"):
        build_report(frames["items"], frames["labels"], dataset="squad", n_boot=10)


def test_to_jsonable_handles_missing_and_numpy_values() -> None:
    value = {"a": np.float64("nan"), "b": pd.NA, "c": np.int64(3), "d": [np.bool_(True)]}
    assert to_jsonable(value) == {"a": None, "b": None, "c": 3, "d": [True]}
    json.dumps(to_jsonable(pd.DataFrame({"x": [1.0, np.nan]})), allow_nan=False)


def _html_table(page: str, after: str) -> dict[str, list[str]]:
    """The first table after ``after`` as ``{header: cells}``."""
    table = page[page.index(after) :]
    table = table[: table.index("</table>")]
    headers = re.findall(r"<th>([^<]*)</th>", table)
    rows = [re.findall(r"<td>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    return {h: [row[k] for row in rows] for k, h in enumerate(headers)}


def test_html_tables_show_counts_as_whole_numbers_and_headers_in_words(frames) -> None:
    """Issue 21, item 10: "298.000" for a count and ``n_items`` as a header."""
    report = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        dataset="nq",
        thresholds={"noisy": 0.5, EVIL: 0.5},
        n_boot=20,
    )
    page = render_html(report)
    tables = page[: page.index("<h2>Charts</h2>")]
    assert "<tr><td>items</td><td>38</td></tr>" in tables
    assert "<tr><td>raters</td><td>2</td></tr>" in tables
    alpha = _html_table(tables, "<h2>Agreement</h2>")
    for column in ("Items", "Labels"):  # counts, without decimals
        assert all(re.fullmatch(r"\d+", cell) for cell in alpha[column]), alpha[column]
    assert all(re.fullmatch(r"-?\d\.\d{3}", cell) for cell in alpha["Alpha"])
    headers = re.findall(r"<th>([^<]*)</th>", tables)
    assert "Items" in headers and "Metric ID" in headers and "CI low" in headers
    assert not [h for h in headers if "_" in h], headers  # no code names
    assert re.search(r"<td>0\.\d{3}</td>", tables)  # rates keep three decimals


def test_html_embeds_plotlyjs_once_compressed(frames) -> None:
    """The library is most of the page: embedded once, packed to well under its raw size
    (the demo's report: 5.0 MB before, 2.0 MB after)."""
    from plotly.offline import get_plotlyjs

    report = build_report(
        frames["items"],
        frames["labels"],
        frames["adjudications"],
        frames["scores"],
        thresholds={"noisy": 0.5},
        n_boot=20,
    )
    page = render_html(report)
    raw = get_plotlyjs()
    assert raw[:2000] not in page  # not inlined as text
    assert len(page.encode("utf-8")) < 0.5 * len(raw.encode("utf-8"))
    packed = re.search(r"id='qaeval-plotlyjs'>\s*([A-Za-z0-9+/=]+)\s*</script>", page)
    assert packed is not None
    assert gzip.decompress(base64.b64decode(packed.group(1))).decode("utf-8") == raw
    assert page.count('"template"') == 0 or page.count("qaeval-template") == 2  # one template
    assert render_html(report) == page  # the same report gives the same bytes
