"""A judge fitted with the answers people taught it (issue 24, item 2): leave-one-out inputs,
the knowledge snapshot in the judge file, and ``qaeval calibrate --with-knowledge``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _calibration_data import fake_cost_measuring
from _paths import TEST_DATA

from qaeval_core import store
from qaeval_core.calibrate import feature_scores, fit_judge
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.cli.main import main
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge import Judge, JudgeKnowledge, config_checksum
from qaeval_core.knowledge import AnswerKnowledge, knowledge_similarity, suggest_knowledge
from qaeval_core.metrics.base import get_metric
from qaeval_core.questions import question_groups
from qaeval_core.schema import Item
from qaeval_core.workflows import answer_knowledge as wf


def _toy(n_questions: int = 30, seed: int = 0) -> tuple[list[Item], list[int]]:
    """Six models per question; each answers with the reference, an alias no reference
    contains (correct) or a wrong guess; labels on the 3-point scale."""
    rng = np.random.default_rng(seed)
    items, labels = [], []
    for q in range(n_questions):
        for m in range(6):
            kind = str(rng.choice(["ref", "alias", "wrong"]))
            cand = {"ref": f"it is Ref{q}", "alias": f"Nick name {q}", "wrong": f"Bad guess {q}"}
            items.append(
                Item(
                    question=f"Question {q}?",
                    references=(f"Ref{q}",),
                    candidate=cand[kind],
                    qa_model=f"m{m}",
                )
            )
            labels.append(0 if kind == "wrong" else 2)
    return items, labels


def _snapshot(items: list[Item], labels: list[int]) -> JudgeKnowledge:
    found = suggest_knowledge(items, labels)
    questions = dict(zip(found["question_key"], found["question"], strict=True))
    return JudgeKnowledge(
        AnswerKnowledge.from_frame(found),
        questions,
        dataset="toy",
        knowledge_version=4,
        n_labels=len(labels),
    )


@pytest.fixture(scope="module")
def fitted() -> tuple[Judge, Judge]:
    """The same labels fitted without and with knowledge (stacker only, few bootstraps)."""
    items, labels = _toy()
    scores, _, specs = feature_scores(items, [get_metric("f1"), get_metric("contains")])
    y = np.array(labels) == 2
    groups = question_groups(items)
    plain, _ = fit_judge(
        scores, y, specs, groups=groups, candidates=["stacker"], cv=CrossValidation(n_boot=50)
    )
    taught, _ = fit_judge(
        scores,
        y,
        specs,
        groups=groups,
        candidates=["stacker"],
        cv=CrossValidation(n_boot=50),
        knowledge=_snapshot(items, labels),
        knowledge_scores=knowledge_similarity(items, labels),
    )
    return plain, taught


NEW = pd.DataFrame(
    {
        "question": ["Question 3?", "Question 3?", "question 4?", "Question 99?"],
        "references": [["Ref3"], ["Ref3"], ["Ref4"], ["Ref99"]],
        "candidate": ["nick name 3", "bad guess 3", "Ref4", "nick name 99"],
    }
)


def test_own_label_never_teaches_its_row() -> None:
    """Leave-one-out: an alias only one row's label supports gives that row nothing; a sibling
    whose label also supports it does, and an unlabelled row sees everything."""
    items = [
        Item(question="Q?", references=("Paris",), candidate="City of Light", qa_model="a"),
        Item(question="Q?", references=("Paris",), candidate="Lutetia", qa_model="b"),
        Item(question="Q?", references=("Paris",), candidate="lutetia", qa_model="c"),
        Item(question="Q?", references=("Paris",), candidate="city of light", qa_model="d"),
    ]
    sim = knowledge_similarity(items, [2, 2, 2, None])
    assert sim.loc[0, "alias_similarity"] < 1.0  # its own label is the only source
    assert sim.loc[1:3, "alias_similarity"].tolist() == [1.0, 1.0, 1.0]


def test_a_question_whose_labels_suggest_nothing_gets_zeros() -> None:
    """Labels that suggest nothing (a correct answer containing the reference), with an
    accepted list: no knowledge, zeros (the empty suggestion table once lost its columns)."""
    items = [
        Item(question="Q?", references=("Paris",), candidate="It is Paris", qa_model="a"),
        Item(question="Q?", references=("Paris",), candidate="Lyon", qa_model="b"),
    ]
    sim = knowledge_similarity(items, [2, None], accepted={("q:q?", "alias", "lyon")})
    assert sim.to_numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_knowledge_helps_and_round_trips_to_1e9(fitted, tmp_path: Path) -> None:
    plain, taught = fitted
    assert plain.knowledge is None and "knowledge" not in plain.to_config()
    assert taught.input_columns == ["f1", "contains", "alias_similarity", "wrong_similarity"]
    path = taught.save(tmp_path / "judge.json")
    loaded = Judge.from_config(path)
    assert loaded.knowledge == taught.knowledge
    assert loaded.to_config() == taught.to_config()
    direct, again = taught.judge(NEW), loaded.judge(NEW)
    np.testing.assert_allclose(again["judge_probability"], direct["judge_probability"], atol=1e-9)
    # New rows are compared with the whole snapshot (question text matched case-blind).
    alias, wrong = direct["judge_alias_similarity"], direct["judge_wrong_similarity"]
    assert (alias[0], wrong[1]) == (1.0, 1.0) and max(alias[1], wrong[0]) < 1.0
    assert (alias[3], wrong[3]) == (0.0, 0.0)  # a question the snapshot does not know
    assert direct["judge_correct"].tolist()[:3] == [True, False, True]
    assert plain.judge(NEW)["judge_correct"].tolist()[0] is False  # no alias known


def test_applying_a_knowledge_judge_loads_no_training_code_or_store(fitted, tmp_path) -> None:
    config = fitted[1].save(tmp_path / "judge.json")
    data = tmp_path / "frame.json"
    NEW.to_json(data, orient="records")
    code = f"""
import json, sys
import pandas as pd
from qaeval_core.judge import Judge
out = Judge.from_config({str(config)!r}).judge(pd.read_json({str(data)!r}, orient="records"))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("qaeval_core.calibrate",
    "qaeval_core.store", "qaeval_core.workflows", "sqlalchemy")))))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


def _edited(judge: Judge, edit: Any, *, reseal: bool) -> dict[str, Any]:
    config = json.loads(json.dumps(judge.to_config()))
    edit(config["knowledge"])
    if reseal:
        config["checksum"] = config_checksum(config)
    return config


def test_a_tampered_snapshot_is_refused(fitted) -> None:
    taught = fitted[1]

    def add_alias(k: dict) -> None:
        k["questions"][0]["aliases"].append("anything goes")

    with pytest.raises(ConfigError, match="fails its checksum"):
        Judge.from_config(_edited(taught, add_alias, reseal=False))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda k: k["questions"][0].update(aliases="x"), r"questions\[0\]\.aliases must be"),
        (lambda k: k["questions"][0].update(aliases=[], wrong=[]), "neither aliases nor wrong"),
        (lambda k: k.update(columns=["alias_similarity", "oops"]), "knowledge.columns"),
        (lambda k: k.update(columns=["alias_similarity"]), "the model reads columns"),
        (lambda k: k.update(questions=[]), "questions must be a non-empty list"),
        (lambda k: k.update(knowledge_version=-1), "knowledge_version must be"),
        (lambda k: k["questions"].append(dict(k["questions"][0])), "appears twice"),
    ],
)
def test_a_malformed_snapshot_is_a_clear_error(fitted, edit, message) -> None:
    with pytest.raises(ConfigError, match=message):
        Judge.from_config(_edited(fitted[1], edit, reseal=True))


def test_files_without_knowledge_load_and_write_as_before(fitted) -> None:
    v1 = Judge.from_config(TEST_DATA / "judge_v1" / "judge.json")
    assert v1.knowledge is None and v1.input_columns == v1.columns
    plain = fitted[0]
    config = plain.to_config()
    assert Judge.from_config(config).to_config() == config


def test_knowledge_needs_its_inputs_given_together(fitted) -> None:
    items, labels = _toy(n_questions=5)
    scores, _, specs = feature_scores(items, [get_metric("f1")])
    with pytest.raises(InputError, match="together"):
        fit_judge(scores, np.array(labels) == 2, specs, knowledge=_snapshot(items, labels))


# -- a stored dataset: the workflow and the command ---------------------------------------------


def _rows(n_questions: int = 12, seed: int = 1) -> list[dict[str, Any]]:
    items, labels = _toy(n_questions, seed)
    return [
        {
            "id": f"r{i}",
            "question": it.question,
            "references": list(it.references),
            "candidate": it.candidate,
            "model": it.qa_model,
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": lab}]},
        }
        for i, (it, lab) in enumerate(zip(items, labels, strict=True))
    ]


def _accept_all(url: str, dataset: str) -> int:
    store.add_user(url, "res", "researcher", "pw-res-long")
    found = wf.question_suggestions(url, dataset)
    for _, row in found.iterrows():
        wf.decide(url, dataset, "res", row, "accepted")
    return len(found)


def test_calibration_inputs_leave_each_rows_label_out(db_url: str) -> None:
    rows = [
        {
            "id": "a",
            "question": "Q?",
            "references": ["Paris"],
            "candidate": "City of Light",
            "model": "m1",
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": 2}]},
        },
        {
            "id": "b",
            "question": "Q?",
            "references": ["Paris"],
            "candidate": "Lutetia",
            "model": "m2",
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": 2}]},
        },
        {
            "id": "c",
            "question": "Q?",
            "references": ["Paris"],
            "candidate": "lutetia",
            "model": "m3",
            "human": {"scale": "three", "raters": [{"rater": "ann", "label": 2}]},
        },
    ]
    store.import_items(db_url, "ds", rows, source="test")
    assert _accept_all(db_url, "ds") == 2
    items = store.load_items(db_url, "ds")
    snapshot, inputs = wf.calibration_knowledge(db_url, "ds", items, [2, 2, 2])
    # "City of Light" is in the snapshot (for new rows) but its own row gets nothing from it.
    assert set(snapshot.answers.aliases["q:q?"]) == {"City of Light", "Lutetia"}
    assert inputs["alias_similarity"].tolist()[0] < 1.0
    assert inputs["alias_similarity"].tolist()[1:] == [1.0, 1.0]
    assert snapshot.dataset == "ds" and snapshot.knowledge_version == 2
    assert wf.knowledge_counts(db_url, "ds") == (2, 1)


def test_calibrate_with_knowledge_end_to_end(
    sqlite_url: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    db = sqlite_url
    store.import_items(db, "toy", _rows(), source="test")
    out = tmp_path / "judge.json"
    args = [
        "calibrate",
        "-d",
        "toy",
        "-m",
        "f1,contains",
        "--inputs",
        "all",
        "--candidates",
        "stacker",
        "--with-knowledge",
        "-o",
        str(out),
        "--db",
        db,
    ]
    assert main(args) == 1  # nothing accepted yet: a one-line error, no judge
    assert "no accepted taught answers" in capsys.readouterr().err and not out.exists()

    n = _accept_all(db, "toy")
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "Taught answers: the judge reads alias_similarity" in printed
    judge = Judge.from_config(out)
    assert judge.knowledge is not None
    assert judge.knowledge.dataset == "toy" and judge.knowledge.knowledge_version == n
    n_alias, n_wrong, _ = judge.knowledge.counts()
    assert n_alias + n_wrong == n
    assert judge.fitted_on["knowledge_inputs"] == ["alias_similarity", "wrong_similarity"]
    # Nothing knowledge-dependent was stored as a metric score.
    assert set(store.score_config_rows(db, "toy")["metric_id"]) == {"f1", "contains"}

    new = tmp_path / "new.jsonl"
    NEW.assign(id=[f"n{i}" for i in range(len(NEW))]).to_json(new, orient="records", lines=True)
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(new), "--config", str(out), "-o", str(scored)]) == 0
    frame = pd.read_json(scored, lines=True)
    direct = judge.judge(NEW)
    np.testing.assert_allclose(frame["judge_probability"], direct["judge_probability"], atol=1e-9)
    assert frame["judge_alias_similarity"].tolist()[0] == 1.0

    # On the stored dataset (stored metric scores), the knowledge inputs come from the items.
    from qaeval_core.workflows import judge_dataset

    stored, _ = judge_dataset(db, "toy", judge)
    items = {int(it.meta["item_id"]): it for it in store.load_items(db, "toy")}
    fresh = judge.judge([items[int(i)] for i in stored["item_id"]])
    np.testing.assert_allclose(stored["judge_probability"], fresh["judge_probability"], atol=1e-9)
