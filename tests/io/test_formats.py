"""Harness logs as import formats (``qaeval_core.io.formats``): detection, mapping, refusals.

The fixtures under tests/data/formats/ were written by the tools themselves where they install
(lm-eval, Inspect, lighteval 0.13) and by hand from the tools' source otherwise (README there).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path

import pytest
from _paths import TEST_DATA

from qaeval_core import io, store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.errors import ConfigError, ValidationError
from qaeval_core.io import formats

DATA = TEST_DATA
FIX = DATA / "formats"
SMALL, LARGE = "acme/qa-small", "acme/qa-large"


def _one(pattern: str) -> Path:
    found = sorted(FIX.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


def lm_samples(model: str, task: str = "nq_local") -> Path:
    return _one(f"lm_eval/{model.replace('/', '__')}/samples_{task}_*.jsonl")


def helm_run(model: str) -> Path:
    return FIX / "helm" / f"natural_qa:mode=closedbook,model={model.replace('/', '_')}"


def oc_predictions(model: str) -> Path:
    return FIX / "opencompass" / "20250101_000000" / "predictions" / model / "nq_open.json"


#: What every fixture must detect as (None: no harness format may claim it).
def _expected(path: Path) -> str | None:
    rel = path.relative_to(FIX).as_posix()
    if rel.startswith("lm_eval/"):
        return "lm-eval"  # the samples files, and the results file (refused with directions)
    if rel.startswith(("lighteval/details/", "lighteval_flat/")):
        return "lighteval"
    if rel.startswith("inspect/"):
        return "inspect"
    if rel.startswith("helm/") and (path.is_dir() or path.name == "scenario_state.json"):
        return "helm"
    if rel.startswith("opencompass/") and "/predictions/" in rel:
        return "opencompass"
    return None


def test_no_file_detects_as_two_formats_or_the_wrong_one() -> None:
    fixtures = [p for p in FIX.rglob("*") if p.is_file() or (p / "scenario_state.json").is_file()]
    assert len(fixtures) > 20
    for path in fixtures:
        expected = _expected(path)
        assert formats.detected(path) == ([expected] if expected else []), path
    # the project's other data files (plain JSONL/JSON/CSV/Parquet) are never harness logs
    plain = [p for p in DATA.rglob("*") if p.is_file() and FIX not in p.parents]
    plain = [p for p in plain if p.suffix in (".jsonl", ".json", ".csv", ".parquet", ".eval")]
    assert plain
    for path in plain:
        assert formats.detected(path) == [], path


def test_registry_names_and_errors() -> None:
    assert formats.names() == [
        "lm-eval",
        "lighteval",
        "inspect",
        "helm",
        "opencompass",
        "jsonl",
        "json",
        "csv",
        "tsv",
        "parquet",
    ]
    assert formats.get("Inspect").name == "inspect"
    with pytest.raises(ConfigError, match="Unknown format 'nope': expected one of lm-eval"):
        formats.get("nope")


def test_lm_eval_samples_map_to_items_with_the_harness_score() -> None:
    items = io.read_items(lm_samples(SMALL))
    assert len(items) == 24  # 12 docs x 2 filters, each filter its own candidate
    first = items[0]
    assert first.external_id == "acme/qa-small/nq_local/0/remove_whitespace"
    assert (first.question, first.references, first.candidate) == (
        "what is the capital of france",
        ["Paris"],
        "Paris",
    )
    assert first.qa_model == SMALL  # the results file's model_name, not the folder name
    meta = first.meta or {}
    assert meta["harness"] == "lm-eval" and meta["task"] == "nq_local"
    assert meta["qid"] == f"nq_local:{meta['doc_hash']}" and meta["variant"] == "remove_whitespace"
    by_filter: dict[str, list[float]] = defaultdict(list)
    for item in items:
        by_filter[item.meta["filter"]].append(item.meta["harness_scores"]["exact_match"])
    # the per-sample scores average to the harness's own aggregate in results_*.json
    results = json.loads(_one("lm_eval/acme__qa-small/results_*.json").read_text())
    for name, values in by_filter.items():
        assert sum(values) / len(values) == results["results"]["nq_local"][f"exact_match,{name}"]
    hamlet = next(i for i in items if i.meta["doc_id"] == 1)
    assert hamlet.references == ["William Shakespeare", "Shakespeare"]  # doc.answer, a list
    trivia = io.read_items(lm_samples(SMALL, "triviaqa_local"))
    assert trivia[0].references == ["Mars", "Planet Mars"]  # doc.answer.aliases


def test_lm_eval_refusals_and_fallbacks(tmp_path: Path) -> None:
    lines = lm_samples(SMALL).read_text().splitlines()
    sample = json.loads(lines[0])
    mc = {**sample, "filtered_resps": [[-1.5, False]]}  # a loglikelihood sample
    no_ref = {**sample, "doc": {"question": "q"}, "target": ""}
    literal = {**sample, "doc": {"question": "q2"}, "target": "['a', 'b']"}
    path = tmp_path / "samples_custom_2024-01-01T00-00-00.000000.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in (mc, no_ref)) + "\n")
    with pytest.raises(ValidationError) as err:
        io.read_items(path)
    text = str(err.value)
    assert "row 1: no generated answer" in text and "row 2: no references" in text
    path.write_text(json.dumps(literal) + "\n")
    (item,) = io.read_items(path)
    assert item.references == ["a", "b"]  # target, str() of a list, parsed as a literal
    assert item.qa_model == tmp_path.name and item.meta["task"] == "custom"  # no results file
    results = _one("lm_eval/acme__qa-small/results_*.json")
    with pytest.raises(ConfigError, match="results file .* Import the samples_<task>"):
        io.read_items(results)


def test_a_format_can_be_named_when_the_name_hides_it(tmp_path: Path) -> None:
    renamed = tmp_path / "log.txt"
    shutil.copy(lm_samples(LARGE), renamed)
    with pytest.raises(ConfigError, match="Cannot tell the format"):
        io.read_items(renamed)
    assert len(io.read_items(renamed, fmt="lm-eval")) == 24


def test_inspect_eval_zip_with_zstd_members_reads_like_the_json_log() -> None:
    eval_path, json_path = FIX / "inspect" / "trivia_qa.eval", FIX / "inspect" / "trivia_qa.json"
    with zipfile.ZipFile(eval_path) as zf:
        assert {i.compress_type for i in zf.infolist()} == {93}  # zstd: the pyarrow path
    from_zip, from_json = io.read_items(eval_path), io.read_items(json_path)

    def key(item: io.ItemRow) -> tuple:
        return (item.external_id, item.question, tuple(item.references), item.candidate)

    assert sorted(map(key, from_zip)) == sorted(map(key, from_json))
    by_id = {i.external_id: i for i in from_zip}
    assert set(by_id) == {
        f"mockllm/model/trivia_qa/{s}/epoch {e}"
        for s in ("capital-fr", "hamlet", "amazon")
        for e in (1, 2)
    }
    hamlet = by_id["mockllm/model/trivia_qa/hamlet/epoch 1"]
    assert hamlet.references == ["William Shakespeare", "Shakespeare"]
    assert hamlet.candidate == "Marlowe" and hamlet.meta["harness_scores"] == {"includes": 0.0}
    assert by_id["mockllm/model/trivia_qa/hamlet/epoch 2"].meta["harness_scores"] == {
        "includes": 1.0
    }
    assert hamlet.meta["qid"] == "trivia_qa:hamlet" and hamlet.meta["variant"] == "epoch 1"
    assert hamlet.qa_model == "mockllm/model" and hamlet.meta["task"] == "trivia_qa"


def test_inspect_attachments_and_chat_input_are_resolved(tmp_path: Path) -> None:
    """Hand-made edge case: older Inspect logs store long texts as ``attachment://<hash>``."""
    log = json.loads((FIX / "inspect" / "trivia_qa.json").read_text())
    sample = log["samples"][0]
    question = sample["input"]
    sample["attachments"] = {"abc123": question, "def456": "Paris"}
    sample["input"] = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": [{"type": "text", "text": "attachment://abc123"}]},
    ]
    sample["output"] = {"completion": "attachment://def456", "choices": []}
    log["samples"][1]["target"] = ""
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    with pytest.raises(ValidationError, match="row 2: no references: sample .* empty target"):
        io.read_items(path)
    del log["samples"][1]
    path.write_text(json.dumps(log))
    first = io.read_items(path)[0]
    assert (first.question, first.candidate) == (question, "Paris")


def test_lighteval_details_both_layouts() -> None:
    small = io.read_items(_one("lighteval/details/acme/qa-small/*/*.parquet"))
    large = io.read_items(_one("lighteval/details/acme/qa-large/*/*.parquet"))
    assert [i.qa_model for i in small + large] == [SMALL] * 6 + [LARGE] * 6  # from the path
    first = small[0]
    assert first.question == "what is the capital of france"  # doc.original_query
    assert first.references == ["Paris"] and first.candidate == "Paris"  # text_post_processed
    assert first.meta["task"] == "lighteval|nq_local|0"
    assert first.meta["harness_scores"] == {"em": 1.0}
    # the pair joins by question: same qid, same text, both models
    assert [i.meta["qid"] for i in small] == [i.meta["qid"] for i in large]
    assert [i.question for i in small] == [i.question for i in large]
    flat = _one("lighteval_flat/details/*/*/*/*.parquet")
    with pytest.raises(ValidationError) as err:
        io.read_items(flat)
    assert [e.row for e in err.value.errors] == [5]
    assert "no references: gold is empty" in str(err.value)


def test_lighteval_flat_values_written_as_python_literals(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    flat = _one("lighteval_flat/details/*/*/*/*.parquet")
    table = pq.read_table(flat).slice(0, 4)
    assert table.column("gold").to_pylist()[1] == "['William Shakespeare', 'Shakespeare']"
    target = tmp_path / "details" / "acme" / "qa-small" / "2024" / flat.name
    target.parent.mkdir(parents=True)
    pq.write_table(table, target)
    items = io.read_items(target)
    assert items[1].references == ["William Shakespeare", "Shakespeare"]
    assert items[1].meta["harness_scores"] == {"em": 1.0} and items[1].qa_model == SMALL


def test_helm_run_folder() -> None:
    items = io.read_items(helm_run(LARGE))
    assert len(items) == 5 and {i.qa_model for i in items} == {LARGE}
    first = items[0]
    assert first.meta["task"] == "natural_qa:mode=closedbook"  # the model left out of the name
    assert (first.question, first.references, first.candidate) == (
        "what is the capital of france",
        ["Paris"],
        "It is Paris",
    )
    assert first.meta["harness_scores"] == {"exact_match": 0.0}  # per_instance_stats.json
    assert first.meta["qid"] == "natural_qa:mode=closedbook:id1000"
    assert io.read_items(helm_run(LARGE) / "scenario_state.json")[0].external_id == (
        first.external_id
    )
    with pytest.raises(ValidationError) as err:
        io.read_items(helm_run(SMALL))
    assert [e.row for e in err.value.errors] == [5]
    assert "instance id1004 has no reference tagged 'correct'" in str(err.value)


def test_opencompass_predictions() -> None:
    items = io.read_items(oc_predictions("qa-large"))
    assert len(items) == 5 and items[0].qa_model == "qa-large"
    assert items[0].question == "Question: what is the capital of france\nAnswer:"  # chat turn
    assert items[0].references == ["Paris"] and items[0].candidate == "It is Paris"
    assert items[0].meta["harness_scores"] == {"correct": 0.0}  # results/.../details
    assert items[1].meta["qid"] == "nq_open:1" and items[1].meta["task"] == "nq_open"
    with pytest.raises(ValidationError) as err:
        io.read_items(oc_predictions("qa-small"))
    assert [e.row for e in err.value.errors] == [6]
    assert 'example 5 has no "gold"' in str(err.value)


def test_two_models_logs_join_by_question_in_one_dataset(sqlite_url: str, capsys) -> None:
    for model in (SMALL, LARGE):
        assert cli_main(["import", str(lm_samples(model)), "-d", "nq", "--db", sqlite_url]) == 0
    assert "24 item(s) added" in capsys.readouterr().out
    items = store.list_items(sqlite_url, "nq")
    assert len(items) == 48
    groups: dict[str, set[tuple[str, str]]] = defaultdict(set)
    questions: dict[str, set[str]] = defaultdict(set)
    for rec in items.to_dict("records"):
        groups[rec["meta"]["qid"]].add((rec["qa_model"], rec["meta"]["variant"]))
        questions[rec["meta"]["qid"]].add(rec["question"])
    assert len(groups) == 12  # one question key per doc, across both logs
    for qid, members in groups.items():
        assert {m for m, _ in members} == {SMALL, LARGE}, qid
        assert len(members) == 4 and len(questions[qid]) == 1
    from qaeval_core.calibrate.inputs import question_groups
    from qaeval_core.schema import Item

    keys = question_groups(
        [
            Item(question=r["question"], references=("x",), candidate="y", meta=r["meta"])
            for r in items.to_dict("records")
        ]
    )
    assert len(set(keys)) == 12  # calibration's grouped folds keep a question together


def test_score_file_writes_jsonl_next_to_a_harness_log(tmp_path: Path, capsys) -> None:
    log = tmp_path / "trivia_qa.eval"
    shutil.copy(FIX / "inspect" / "trivia_qa.eval", log)
    assert cli_main(["score", str(log), "-m", "em"]) == 0
    out = tmp_path / "trivia_qa.scored.jsonl"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and {"em", "em_correct", "meta"} <= rows[0].keys()
    assert "Wrote 6 rows" in capsys.readouterr().out
