"""An item's detail panel lists each metric once, its configuration in words (issue 21, item 9).

After a robust fit (the Calibrate page's "Read answers as a person does" scores every input
again at the robust profile) every metric was listed twice in the Explorer's and the
Disagreements page's item details, told apart only by a config hash.
"""

from __future__ import annotations

from pathlib import Path

from app.components.analysis_widgets import score_table
from qaeval_core import analysis, store, workflows
from qaeval_core.analysis.formatting import config_label
from qaeval_core.metrics.base import get_metric, with_profile
from qaeval_core.store import session as store_session

ROWS = [
    {
        "id": f"q{i}",
        "question": f"who wrote book {i}?",
        "references": [f"Author {i}"],
        "candidate": f"**Author {i}**[1]",
    }
    for i in range(3)
]


def test_one_row_per_metric_with_the_latest_configuration_in_words(tmp_path: Path) -> None:
    url = store_session.upgrade(f"sqlite:///{tmp_path / 's.sqlite'}")
    store.import_items(url, "ds", ROWS, source="test")
    workflows.score_dataset(url, "ds", ["f1", "em"])  # the default settings first
    robust = [with_profile(get_metric(m), "robust") for m in ("f1", "em")]
    workflows.score_dataset(url, "ds", robust)  # then what a robust fit stores
    item_id = int(store.load_items(url, "ds")[0].meta["item_id"])

    detail = analysis.item_detail(url, item_id)
    assert len(detail.scores) == 4  # both configurations are stored

    table, others = score_table(detail.scores)
    assert sorted(table["Metric"]) == ["em", "f1"]  # one row per metric
    assert set(table["Settings"]) == {"default settings, robust reading"}  # the latest one
    assert "config_hash" not in table.columns and "Configuration" not in table.columns
    hashes = set(detail.scores["config_hash"])
    assert not any(str(cell) in hashes for cell in table.to_numpy().ravel())
    assert sorted(others) == ["em (default settings)", "f1 (default settings)"]


def test_config_label_names_known_settings_and_never_shows_a_hash() -> None:
    f1 = get_metric("f1")
    assert config_label("f1", f1.config_hash()) == "default settings"
    assert config_label("f1", with_profile(f1, "robust").config_hash()) == (
        "default settings, robust reading"
    )
    assert config_label("f1", get_metric("f1", threshold=0.8).config_hash()) == "custom settings"
    assert config_label("no_such_metric", "0123abcd") == "custom settings"


def test_config_label_names_the_default_calibrations_shape_reading() -> None:
    """A robust fit stores the answer-shape inputs on the reader text with LaTeX as written
    (issue 33): that is the robust reading in words too, not "custom settings"."""
    reader = get_metric("brevity", normalize="robust", robust_text="reader_latex")
    assert config_label("brevity", reader.config_hash()) == "default settings, robust reading"


def test_config_label_names_the_earlier_shape_reading() -> None:
    """Scores stored before LaTeX was kept (``robust_text="reader"``) stay named, not custom."""
    earlier = get_metric("brevity", normalize="robust", robust_text="reader")
    assert config_label("brevity", earlier.config_hash()) == (
        "earlier default settings, robust reading"
    )
