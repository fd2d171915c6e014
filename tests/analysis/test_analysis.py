"""The store-backed analysis: frames out of the store, config choice, adjudication, the queue."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pandas as pd
import pytest

from qaeval_core import analysis, store
from qaeval_core.analysis.agreement import krippendorff_alpha
from qaeval_core.cli.main import main as cli_main
from qaeval_core.errors import ConfigError, NotFoundError, PermissionDenied
from qaeval_core.store import session as store_session
from qaeval_core.workflows import score_dataset

DEMO = "demo-nq301"
LEXICAL = ("em", "f1", "contains")
EVIL = "<script>alert(1)</script> **bold** [x](javascript:alert(1))"


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store, scored with EM/F1/contains, built once and copied per test."""
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    url = f"sqlite:///{path}"
    assert cli_main(["demo", "--no-score", "--db", url]) == 0  # scored below, by the test
    score_dataset(url, DEMO, list(LEXICAL))
    store_session.get_engine(url).dispose()  # closes the WAL into the main file
    return path


@pytest.fixture
def demo_url(demo_file: Path, tmp_path: Path) -> str:
    path = tmp_path / "demo.sqlite"
    shutil.copy(demo_file, path)
    url = f"sqlite:///{path}"
    store.add_user(url, "res", "researcher", "pw")
    store.add_user(url, "ann", "annotator", "pw")
    return url


@pytest.fixture
def small_url(sqlite_url: str) -> str:
    """Three items: a 2-2 tie with rules and notes (one evil), an agreement, a 2-1 split."""

    def row(i: int, raters: list[dict]) -> dict:
        return {
            "id": f"q{i}",
            "question": f"question {i} {EVIL}",
            "references": ["Paris"],
            "candidate": f"answer {i}",
            "model": ["m1", "m2"] if i % 2 else "m1",
            "human": {"scale": "three", "raters": raters},
        }

    rows = [
        row(0, [{"rater": "a", "label": 2, "rule": 4, "note": EVIL}, {"rater": "b", "label": 0}]),
        row(1, [{"rater": "a", "label": 2}, {"rater": "b", "label": 2}]),
        row(
            2,
            [
                {"rater": "a", "label": 0, "rule": 2},
                {"rater": "b", "label": 0},
                {"rater": "c", "label": 1, "note": "not sure"},
            ],
        ),
    ]
    store.import_items(sqlite_url, "small", rows)
    store.add_user(sqlite_url, "res", "researcher", "pw")
    store.add_user(sqlite_url, "boss", "admin", "pw")
    store.add_user(sqlite_url, "ann", "annotator", "pw")
    return sqlite_url


def _item_id(url: str, external_id: str) -> int:
    items = store.list_items(url, "small")
    return int(items.loc[items["external_id"] == external_id, "item_id"].iloc[0])


# -- loading ---------------------------------------------------------------------------------
def test_load_frames_reads_items_current_labels_and_one_config_per_metric(demo_url: str) -> None:
    frames = analysis.load_frames(demo_url, DEMO)
    assert len(frames.items) == 298
    assert set(frames.labels["rater"]) == {"annotator1", "annotator2", "annotator3"}
    assert len(frames.labels) == 635
    assert set(frames.labels["role"]) == {"external"}
    assert frames.metric_ids == sorted(LEXICAL)
    assert frames.scores.groupby("metric_id").size().to_dict() == dict.fromkeys(LEXICAL, 298)
    assert frames.configs["used"].all()
    assert frames.adjudications.empty


def test_latest_config_wins_unless_a_hash_is_named(demo_url: str) -> None:
    old = analysis.load_frames(demo_url, DEMO, metrics=["em"])
    old_hash = old.scores["config_hash"].iloc[0]
    item_ids = old.items["item_id"].tolist()
    store.add_scores(
        demo_url,
        [
            {
                "item_id": i,
                "metric_id": "em",
                "config_hash": "newer",
                "value": 1.0,
                "decision": True,
            }
            for i in item_ids
        ],
    )
    frames = analysis.load_frames(demo_url, DEMO)
    em = frames.scores[frames.scores["metric_id"] == "em"]
    assert set(em["config_hash"]) == {"newer"} and len(em) == 298
    configs = frames.configs.set_index("config_hash")
    assert configs.loc["newer", "used"] and not configs.loc[old_hash, "used"]
    pinned = analysis.load_frames(demo_url, DEMO, config_hashes=[old_hash])
    assert pinned.metric_ids == ["em"]
    assert set(pinned.scores["config_hash"]) == {old_hash}
    with pytest.raises(NotFoundError, match="No scores of metric.*bleu.*scored: contains, em"):
        analysis.load_frames(demo_url, DEMO, metrics=["bleu"])
    with pytest.raises(NotFoundError, match="config hash.*nope"):
        analysis.load_frames(demo_url, DEMO, config_hashes=["nope"])
    with pytest.raises(NotFoundError, match="No dataset named 'missing'.*demo-nq301"):
        analysis.load_frames(demo_url, "missing")


def test_all_datasets_at_once(small_url: str) -> None:
    store.import_items(
        small_url,
        "other",
        [
            {
                "id": "x",
                "question": "q",
                "references": ["r"],
                "candidate": "c",
                "labels": {"a": 1, "b": 1},
            }
        ],
    )
    frames = analysis.load_frames(small_url, None)
    assert set(frames.items["dataset"]) == {"small", "other"}
    tables = analysis.agreement_tables(frames, n_boot=20)
    assert set(tables.alpha.loc[tables.alpha["grouping"] == "dataset", "group"]) >= {"small"}


# -- analyses --------------------------------------------------------------------------------
def test_agreement_tables_on_the_demo(demo_url: str) -> None:
    frames = analysis.load_frames(demo_url, DEMO)
    tables = analysis.agreement_tables(frames, n_boot=200)
    overall = tables.alpha[(tables.alpha["grouping"] == "overall")].set_index("level")
    assert overall.loc["nominal", "alpha"] == pytest.approx(krippendorff_alpha(frames.labels))
    assert overall.loc["nominal", "ci_low"] < overall.loc["nominal", "alpha"]
    assert overall.loc["nominal", "alpha"] < overall.loc["nominal", "ci_high"]
    assert set(tables.alpha["grouping"]) >= {"overall", "dataset", "qa_model"}
    counts = dict(zip(tables.label_counts["n_labels"], tables.label_counts["n_items"], strict=True))
    assert counts == {"0": 0, "1": 0, "2": 259, "3+": 39}
    assert len(tables.kappa) == 3 and len(tables.kappa_ordinal) == 3
    assert set(tables.raters["rater"]) == {"annotator1", "annotator2", "annotator3"}
    assert tables.summary["items"] == 298 and tables.summary["disagreements"] == 39


def test_metric_view_and_leaderboard(demo_url: str) -> None:
    frames = analysis.load_frames(demo_url, DEMO)
    view = analysis.metric_view(frames, "f1")
    assert int(view.confusion.to_numpy().sum()) == 298
    assert 0.5 < view.statistics["accuracy"] < 1
    assert view.statistics["n_items"] == 298
    assert len(view.worst) > 0
    assert (view.worst["decision"] != view.worst["human_correct"]).all()
    assert view.worst["confidence"].is_monotonic_decreasing
    assert view.worst["details_text"].str.contains("best_reference").any()
    assert {"question", "candidate", "qa_model"} <= set(view.worst.columns)
    with pytest.raises(NotFoundError, match="loaded: contains, em, f1"):
        analysis.metric_view(frames, "bleu")

    board = analysis.leaderboard(frames)
    assert {"human_accuracy", "human_rank", "em", "em rank", "f1 rank"} <= set(board.wide.columns)
    assert board.wide["qa_model"].is_unique
    assert set(board.ranking["metric_id"]) == set(LEXICAL)
    stats = analysis.metric_statistics(frames, n_boot=50)
    f1_acc = stats.set_index(["metric_id", "statistic"]).loc[("f1", "accuracy"), "estimate"]
    assert f1_acc == pytest.approx(view.statistics["accuracy"])


def test_dataset_report_records_the_configs(demo_url: str) -> None:
    report = analysis.dataset_report(demo_url, DEMO, n_boot=50)
    numbers = json.loads(report.to_json())
    assert set(numbers["settings"]["metric_configs"]) == set(LEXICAL)
    assert numbers["counts"]["items"] == 298


def test_format_details() -> None:
    text = analysis.format_details({"best": "x", "sub": {"p": 0.123456, "r": 1}, "ngrams": [1, 2]})
    assert text == "best: x; sub.p: 0.123; sub.r: 1; ngrams: 1, 2"
    assert analysis.format_details(None) == ""
    assert analysis.label_text(2) == "2 clearly correct"
    assert analysis.rule_text(4) == "4 More details" and analysis.rule_text(pd.NA) == ""


# -- disagreements and adjudication ------------------------------------------------------------
def test_queue_lists_disagreements_side_by_side_ties_first(small_url: str) -> None:
    queue = analysis.disagreement_queue(small_url, "small")
    assert queue["external_id"].tolist() == ["q0", "q2"]
    assert queue["status"].tolist() == ["tie", "disagreement"]
    first = {r["rater"]: r for r in queue.loc[0, "labels"]}
    assert first["a"]["value"] == 2 and first["a"]["rule"] == 4 and first["a"]["note"] == EVIL
    assert first["b"]["value"] == 0 and pd.isna(first["b"]["rule"])
    assert queue.loc[1, "summary"] == (
        "a: 0 clearly incorrect, rule 2 Numerical information; b: 0 clearly incorrect; c: 1 unclear"
    )


def test_adjudicate_appends_history_and_settles_the_queue(small_url: str) -> None:
    q0 = _item_id(small_url, "q0")
    before = analysis.data_version(small_url)
    first = analysis.adjudicate(small_url, q0, "res", 0, "  the answer names the wrong city ")
    assert (first.user, first.value, first.reason) == ("res", 0, "the answer names the wrong city")
    assert first.created_at is not None
    assert analysis.data_version(small_url) != before
    second = analysis.adjudicate(small_url, q0, "boss", 2, "rule 4: more details")
    history = analysis.adjudication_history(small_url, q0)
    assert history["user"].tolist() == ["res", "boss"]
    assert history["value"].tolist() == [0, 2]
    assert history["adjudication_id"].tolist() == [first.id, second.id]

    queue = analysis.disagreement_queue(small_url, "small")
    settled = queue.set_index("external_id").loc["q0"]
    assert settled["status"] == "adjudicated"
    assert (settled["adjudicated"], settled["adjudicated_by"]) == (2, "boss")
    assert queue["status"].tolist() == ["disagreement", "adjudicated"]  # pending first
    assert analysis.disagreement_queue(small_url, "small", pending_only=True)[
        "external_id"
    ].tolist() == ["q2"]

    human = analysis.human_verdicts(analysis.load_frames(small_url, "small"))
    assert human.set_index("item_id").loc[q0, "final"] == 2
    detail = analysis.item_detail(small_url, q0)
    assert detail.final == 2 and len(detail.adjudications) == 2
    assert set(detail.labels["rater"]) == {"a", "b"}
    assert detail.item["question"].endswith(EVIL)


def test_adjudicate_checks_role_value_reason_and_item(small_url: str) -> None:
    q0 = _item_id(small_url, "q0")
    with pytest.raises(PermissionDenied, match=r"'ann' \(annotator\) cannot adjudicate"):
        analysis.adjudicate(small_url, q0, "ann", 2, "I think so")
    with pytest.raises(PermissionDenied, match=r"'a' \(external\)"):
        analysis.adjudicate(small_url, q0, "a", 2, "imported rater")
    with pytest.raises(PermissionDenied, match="no active account"):
        analysis.adjudicate(small_url, q0, "nobody", 2, "who?")
    with pytest.raises(ConfigError, match="must be 0 .* got 3"):
        analysis.adjudicate(small_url, q0, "res", 3, "bad value")
    with pytest.raises(ConfigError, match="Give a reason"):
        analysis.adjudicate(small_url, q0, "res", 2, "   ")
    with pytest.raises(NotFoundError, match="No item with id 999999"):
        analysis.adjudicate(small_url, 999999, "res", 2, "missing")
    assert analysis.adjudication_history(small_url, q0).empty


def test_concurrent_adjudications_are_all_kept(small_url: str) -> None:
    q2 = _item_id(small_url, "q2")
    errors: list[Exception] = []

    def work(n: int) -> None:
        try:
            analysis.adjudicate(small_url, q2, "res" if n % 2 else "boss", n % 3, f"reason {n}")
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    history = analysis.adjudication_history(small_url, q2)
    assert sorted(history["reason"]) == sorted(f"reason {n}" for n in range(16))
    assert history["adjudication_id"].is_monotonic_increasing


def test_item_detail_has_every_score(demo_url: str) -> None:
    frames = analysis.load_frames(demo_url, DEMO)
    item_id = int(frames.items["item_id"].iloc[0])
    detail = analysis.item_detail(demo_url, item_id)
    assert set(detail.scores["metric_id"]) == set(LEXICAL)
    assert len(detail.labels) == 2 and detail.final is not None
    with pytest.raises(NotFoundError):
        analysis.item_detail(demo_url, 10**9)
