"""Explicit outcomes (issue 16, part 2): refusals, hedges, failed extraction and metric errors
are named in ``judge_reason``, a refusal is never correct, and a metric that raises on one row
fails that row only."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from _paths import SHARED_DATA

from qaeval_core.analysis.accuracy_report import add_model_accuracies, judge_outcome_table
from qaeval_core.analysis.report import Report
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge import FeatureSpec, Judge
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.outcomes import answer_reason, extraction_failure
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, run_jobs
from qaeval_core.text.answer_rules import hedge, refusal

SHARED_DATA = SHARED_DATA


# -- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "Unknown.",
        "I'm not sure.",
        "N/A",
        "",
        "  ...  ",
        "I'm sorry, but I don't have information about the specific episode in which Rachel "
        "leaves.",
        "As an AI language model, I cannot browse the internet. Please check the official website.",
        "There is no information available about who played Toby in the film.",
        "It is not possible to determine the answer from the information given.",
        "I am unable to answer this question; it cannot be determined.",
    ],
)
def test_refusals_written_by_hand_are_not_attempted(text: str) -> None:
    assert refusal(text, ["Paris"]) is not None
    item = Item(question="What is the capital of France?", references=["Paris"], candidate=text)
    assert answer_reason(item).reason == "not_attempted"


@pytest.mark.parametrize(
    "text",
    [
        "I don't know why, but the answer is Paris",
        "I'm not sure, but I think it is Lyon.",
        "Unknown, probably Paris",
        "The exact date is unknown, but it was around 1850.",
        "As an AI language model I have no real-time data. However, as of 2021 the population "
        "was 2 million.",
        "Paris, but I'm not sure",
        "Through her experiments she discovered two previously unknown elements.",
        "none of the 5 cases were people wounded",
        "A",
        "I believe it is Jupiter, probably.",
    ],
)
def test_attempts_are_not_refusals(text: str) -> None:
    assert refusal(text, ["Paris"]) is None


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("** **[1]", "empty after cleaning"),  # markup and a citation marker
        ("<p></p>", "empty after cleaning"),
        ("** **[2][3]", "empty after cleaning"),
        ("**Unknown.**", "Unknown."),  # markdown around a refusal
        ("<b>I don't know</b>", "I don't know"),
        ("Unknown.[1]", "Unknown."),
        ("I don\u2019t know.", "I don't know."),  # a typographic apostrophe
        ("I don\u00e2\u20ac\u2122t know.", "I don't know."),  # the same as mojibake
    ],
)
def test_refusals_and_empty_answers_are_read_on_the_cleaned_answer(
    text: str, evidence: str
) -> None:
    assert refusal(text, ["Paris"]) == evidence
    item = Item(question="What is the capital of France?", references=["Paris"], candidate=text)
    assert answer_reason(item).reason == "not_attempted"


@pytest.mark.parametrize("text", ["A", "**B**", "The", "[Paris](https://x.org)", "**Paris**[1]"])
def test_answers_that_clean_or_normalise_to_little_are_attempts(text: str) -> None:
    """A choice letter is an answer though SQuAD drops "a" as an article."""
    assert refusal(text, ["Paris"]) is None


def test_a_reference_that_reads_like_a_refusal_makes_it_an_attempt() -> None:
    assert refusal("Unknown.", ["Paris"]) == "Unknown."
    assert refusal("Unknown.", ["unknown"]) is None


# -- hedges -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        ("1945 or 1946", "1945 or 1946"),
        ("It ended in 1945 or maybe 1946.", "1945 or maybe 1946"),
        ("About 4 or 6 feet", "4 or 6"),
        ("It is either Paris or Lyon.", "either Paris or Lyon"),
        ("Either Paris or Lyon", "Either Paris or Lyon"),
        ("Paris, or possibly Lyon", "Paris, or possibly Lyon"),
        ("Paris, but it could also be Lyon.", "could also be Lyon"),
        ("The answer is (B) or (C).", "(B) or (C)"),
        ("I would pick option B or D", "option B or D"),
    ],
)
def test_hedges_written_by_hand_are_found(text: str, evidence: str) -> None:
    found = hedge(text, ["Paris"])
    assert found is not None and evidence in found
    item = Item(question="q?", references=["Paris"], candidate=text)
    assert answer_reason(item).reason == "hedged"


@pytest.mark.parametrize(
    "text",
    [
        "37°C or 98°F",  # one value in two units
        "a) 1783.5 J or 17.6 L⋅atm",
        "It takes approximately one year, or 365.25 days.",
        "pups or puppies",  # aliases, not alternatives
        "Coercion of either a representative, or the state itself",
        "Paris",
        "vitamin A or B",
    ],
)
def test_one_answer_said_two_ways_is_not_a_hedge(text: str) -> None:
    assert hedge(text, ["x"]) is None


MONA_LISA = "Who painted the Mona Lisa?"


@pytest.mark.parametrize(
    ("question", "text", "evidence"),
    [
        (MONA_LISA, "Michelangelo or Leonardo da Vinci", "Michelangelo or Leonardo da Vinci"),
        (
            MONA_LISA,
            "It was painted by Leonardo da Vinci or Michelangelo, in Florence.",
            "Leonardo da Vinci or Michelangelo",
        ),
        (MONA_LISA, "Leonardo or Raphael", "Leonardo or Raphael"),  # part of the reference
        ("which city is the capital of france", "Paris or Lyon", "Paris or Lyon"),
    ],
)
def test_two_names_for_one_asked_entity_are_a_hedge(
    question: str, text: str, evidence: str
) -> None:
    """Issue 21: "Michelangelo or Leonardo da Vinci" named two painters for one painting and
    was judged correct; only "either X or Y" was caught."""
    refs = ["Leonardo da Vinci"] if question == MONA_LISA else ["Paris"]
    assert hedge(text, refs, question) == evidence
    item = Item(question=question, references=refs, candidate=text)
    assert answer_reason(item) == ("hedged", evidence)


@pytest.mark.parametrize(
    ("question", "refs", "text"),
    [
        (MONA_LISA, ["Leonardo da Vinci"], "Leonardo da Vinci"),
        ("", ["Leonardo da Vinci"], "Michelangelo or Leonardo da Vinci"),  # no question
        # the question asks for several things, a manner, or offers the alternatives
        (
            "Who were the painters of the Sistine Chapel?",
            ["Michelangelo"],
            "Michelangelo or Raphael",
        ),
        (
            "Name two painters of the Renaissance",
            ["Leonardo da Vinci"],
            "Michelangelo or Leonardo da Vinci",
        ),
        ("Which beats scissors, rock or paper?", ["rock"], "Rock or Paper"),
        ("How did Paris get its name?", ["Parisii"], "Parisii or Lutetia"),
        # references that contain the alternatives, or offer alternatives themselves
        ("Which country won?", ["Trinidad and Tobago"], "Trinidad or Tobago"),
        ("Which country won?", ["Trinidad and Tobago"], "Trinidad and Tobago"),
        ("What beats scissors?", ["Rock or Paper"], "Rock or Paper"),
        ("What beats scissors?", ["Rock", "Paper"], "Rock or Paper"),  # both are references
        # aliases: spelling variants, prefixes, initials, a shared word, an apposition
        ("What overlaps with Haredi Judaism?", ["Chasidic Judaism"], "Hasidic or Chasidic Judaism"),
        ("Which regulation applies?", ["RDN"], "RD or RDN"),
        ("Which country?", ["United States"], "US or United States"),
        (
            "What was the earthquake named?",
            ["the Great Sichuan earthquake"],
            "2008 Sichuan earthquake or Great Sichuan earthquake",
        ),
        (
            "Where was the agreement formalised?",
            ["Bulla Aurea"],
            "in the Bulla Aurea, or Golden Bull",
        ),
        ("What is the neighborhood?", ["City Point"], "City Point (or Oyster Point)"),
        # lower-case alternatives are too often synonyms or modifiers
        ("What are canine offspring called?", ["pups"], "pups or puppies"),
        ("What is the hunted species called?", ["prey"], "game or prey"),
        # idioms and numbers that are not names
        ("Who founded the city?", ["Romulus"], "Romulus or so the legend says"),
        ("What is the value?", ["0.5"], "Around half or 0.51"),
    ],
)
def test_or_between_aliases_or_asked_alternatives_is_not_a_hedge(
    question: str, refs: list[str], text: str
) -> None:
    assert answer_reason(Item(question=question, references=refs, candidate=text)).reason is None


def test_alternatives_one_reference_lists_are_the_answer() -> None:
    assert hedge("One or two knots", ["One or two knots at each end"]) is None
    assert hedge("One or two knots", ["a knot"]) is not None


# -- extraction failed --------------------------------------------------------------------------
def test_a_long_answer_without_the_kind_asked_for_is_extraction_failed() -> None:
    long_answer = " ".join(["The show ran on a major network and was popular with viewers"] * 3)
    assert extraction_failure("how many seasons of the office are there", long_answer)
    assert extraction_failure("how many seasons are there", long_answer + " for 9 seasons") is None
    assert extraction_failure("how many seasons are there", "several") is None  # short
    # A long scenario with "when" in it asks for something else (MMLU-Pro legal stems).
    stem = "A man sued when the mill burned. What will the court most likely hold?"
    assert extraction_failure(stem, long_answer) is None


# -- real rows of the shared data ---------------------------------------------------------------
def _shared(name: str) -> list[dict]:
    path = SHARED_DATA / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"shared data {path} is not here")
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def _item(row: dict) -> Item:
    return Item(
        question=str(row["question"]),
        references=[str(r) for r in row["references"]],
        candidate=str(row["candidate"]),
    )


def test_refusals_and_empty_answers_of_the_shared_data_are_not_attempted() -> None:
    nq = [r for r in _shared("kamalloo_nq301") if r["candidate"].strip() == "Unknown."]
    mmlu = [r for r in _shared("answer_matching_mmlu_pro") if not str(r["candidate"]).strip()]
    assert len(nq) == 21 and len(mmlu) == 3
    for row in nq + mmlu:
        assert answer_reason(_item(row)).reason == "not_attempted", row["id"]
    # and people labelled every one of them incorrect (where they gave a label)
    assert {r["human"]["label"] for r in nq + mmlu} <= {0, None}


def test_hedges_of_the_shared_data_are_found_and_near_misses_are_not() -> None:
    rows = {str(r["candidate"]).strip(): r for r in _shared("pedants_ae_augmented_train")}
    for text in ("4 or 6", "Around eight or nine slices.", "late 18th or early 19th century"):
        assert answer_reason(_item(rows[text])).reason == "hedged", text
    for text in (
        "pups or puppies",
        "37°C or 98°F",
        "Earth takes approximately one year or about 365.25 days to orbit around sun.",
        "Coercion of either a representative, or the state itself",
    ):
        assert answer_reason(_item(rows[text])).reason is None, text


def test_no_attempted_answer_of_the_labelled_shared_data_is_called_a_refusal() -> None:
    """Every not_attempted verdict on the two evaluation sets is a row people call incorrect."""
    for name in ("kamalloo_nq301", "answer_matching_mmlu_pro"):
        for row in _shared(name):
            if answer_reason(_item(row)).reason == "not_attempted":
                assert row["human"]["label"] in (0, None), row["id"]


# -- a metric that raises on one row ------------------------------------------------------------
@register
class _Fragile(Metric):
    """Token overlap with the first reference; raises on candidates containing 'BOOM'."""

    id = "_test_fragile"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        out = []
        for it in items:
            if "BOOM" in it.candidate:
                raise RuntimeError("cannot read this answer")
            ref = set(it.references[0].lower().split())
            cand = set(it.candidate.lower().split())
            out.append(len(ref & cand) / max(1, len(ref)))
        scores = np.array(out, dtype=float)
        return MetricResult(scores, self.decide(scores))


@register
class _Broken(Metric):
    """Raises a configuration error whatever it is given."""

    id = "_test_broken"

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        raise ConfigError("model file missing")


def _items(cands: list[str]) -> list[Item]:
    return [Item(question="q?", references=["paris"], candidate=c) for c in cands]


def test_a_metric_raising_on_one_row_fails_that_row_only() -> None:
    items = _items(["paris", "london", "BOOM paris", "it is paris"])
    res = run_jobs([ScoringJob("f", _Fragile(), items)])["f"]
    assert res.scores.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert res.decisions.tolist() == [True, False, False, True]
    assert "RuntimeError: cannot read this answer" in res.details[2]["error"]
    assert all("error" not in res.details[i] for i in (0, 1, 3))
    # batched the same way: the failing batch alone is retried
    again = run_jobs([ScoringJob("f", _Fragile(), items)], batch_size=2)["f"]
    assert again.scores.tolist() == res.scores.tolist()


def test_a_metric_that_cannot_score_anything_still_raises() -> None:
    with pytest.raises(ConfigError, match="model file missing"):
        run_jobs([ScoringJob("b", _Broken(), _items(["paris", "x"]))])
    with pytest.raises(RuntimeError, match="cannot read"):
        run_jobs([ScoringJob("f", _Fragile(), _items(["BOOM"] * 3))])
    # the first few retries all failing: the metric is broken, not the rows
    with pytest.raises(RuntimeError, match="cannot read"):
        run_jobs([ScoringJob("f", _Fragile(), _items(["BOOM"] * 6 + ["paris"]))])


# -- the judge ----------------------------------------------------------------------------------
def _judge(**kwargs) -> Judge:
    """A stacker on the fragile overlap that calls nearly everything with overlap correct."""
    metric = _Fragile()
    X = pd.DataFrame({"frag": [0.0, 0.1, 0.2, 0.8, 0.9, 1.0] * 5})
    y = X["frag"].to_numpy() > 0.5
    model = StackerClassifier(Cs=(1.0,)).fit(X, y)
    return Judge([FeatureSpec.from_metric(metric, "frag")], model, **kwargs)


def test_the_judge_reports_judge_error_on_the_failing_row_only() -> None:
    frame = pd.DataFrame(
        {
            "question": "q?",
            "references": [["paris"]] * 4,
            "candidate": ["paris", "london", "BOOM paris", "paris it is"],
        }
    )
    out = _judge().judge(frame)
    assert out["judge_reason"].tolist() == ["matched", "not_matched", "judge_error", "matched"]
    assert out["judge_correct"].tolist() == [True, False, False, True]
    assert out["judge_outcome"].tolist() == ["correct", "incorrect", "uncertain", "correct"]


def test_a_hedge_is_not_correct_by_default_and_lenient_scoring_is_opt_in() -> None:
    """Issue 21: hedged answers were correct by default (NAQT counts them incorrect); the
    Michelangelo answer was correct even in strict mode, because it was not seen as a hedge."""
    frame = pd.DataFrame(
        {
            "question": ["What is the capital?"] * 3 + [MONA_LISA],
            "references": [["paris"]] * 3 + [["Leonardo da Vinci"]],
            "candidate": [
                "paris",
                "paris or possibly lyon",
                "lyon",
                "Michelangelo or Leonardo da Vinci",
            ],
        }
    )
    judge = _judge()
    lenient = judge.with_forced_incorrect(("not_attempted",)).judge(frame)
    assert lenient["judge_correct"].tolist() == [True, True, False, True]  # the combiner's
    for policy in (judge, judge.with_forced_incorrect(("not_attempted", "hedged"))):
        out = policy.judge(frame)
        assert out["judge_reason"].tolist() == ["matched", "hedged", "not_matched", "hedged"]
        assert out["judge_correct"].tolist() == [True, False, False, False]
        assert out["judge_outcome"].tolist() == ["correct", "incorrect", "incorrect", "incorrect"]
        assert out["judge_probability"].tolist()[3] == 0.0
    assert lenient["judge_reason"].tolist() == out["judge_reason"].tolist()  # reported alike
    with pytest.raises(InputError, match="answer-level reasons"):
        judge.with_forced_incorrect(["judge_error"])


def test_a_refusal_the_combiner_calls_correct_is_forced_incorrect() -> None:
    judge = _judge()
    item = Item(question="q?", references=["i do not know"], candidate="I am sorry, I cannot say")
    refused = Item(question="q?", references=["sorry cannot say"], candidate="Sorry, I cannot say.")
    scores = pd.DataFrame({"frag": [1.0, 1.0]})
    raw = judge.with_forced_incorrect(()).judge_scores(scores, [item, refused])
    assert raw["judge_correct"].tolist() == [True, True]
    out = judge.judge_scores(scores, [item, refused])
    assert out["judge_reason"].tolist() == ["not_attempted", "not_attempted"]
    assert out["judge_correct"].tolist() == [False, False]
    assert out["judge_probability"].tolist() == [0.0, 0.0]
    assert out["judge_outcome"].tolist() == ["incorrect", "incorrect"]
    # the combiner's own score is kept (the trace shows it)
    assert (out["judge_score"] == raw["judge_score"]).all()


def test_without_items_the_reason_spells_out_the_verdict() -> None:
    out = _judge().judge_scores(pd.DataFrame({"frag": [1.0, 0.0]}))
    assert out["judge_reason"].tolist() == ["matched", "not_matched"]
    assert out["judge_correct"].tolist() == [True, False]


# -- report and leaderboard numbers -------------------------------------------------------------
def test_outcome_table_counts_reasons_and_accuracy_with_and_without_refusals() -> None:
    frame = pd.DataFrame(
        {
            "qa_model": ["a", "a", "a", "b", "a | b"],
            "judge_reason": ["matched", "not_attempted", "not_matched", "hedged", "matched"],
            "judge_correct": [True, False, False, True, True],
        }
    )
    table = judge_outcome_table(frame).set_index("model")
    assert table.loc["a", "n_items"] == 4 and table.loc["b", "n_items"] == 2
    assert table.loc["a", "not_attempted"] == 1 and table.loc["a", "matched"] == 2
    assert table.loc["a", "judge_accuracy"] == pytest.approx(2 / 4)
    assert table.loc["a", "judge_accuracy_attempted"] == pytest.approx(2 / 3)
    assert table.loc["a", "not_attempted_share"] == pytest.approx(1 / 4)
    assert table.loc["(all)", "n_items"] == 5 and table.loc["(all)", "hedged"] == 1
    report = Report(title="t", numbers={})
    empty = pd.DataFrame(columns=["model"])
    add_model_accuracies(report, empty, pd.DataFrame(), calibration="c", frame=frame)
    assert report.numbers["judge_outcomes"][-1]["model"] == "(all)"
    assert any(heading.startswith("Judge outcomes") for heading, _, _ in report.sections)
    json.loads(report.to_json())  # NaN-free strict JSON


# -- lists of alternatives (issue 33, item 2) ---------------------------------------------------
AUSTEN = "who wrote pride and prejudice"


@pytest.mark.parametrize(
    ("text", "evidence"),
    [
        # three alternatives: the case of the issue, with and without the serial comma
        (
            "Jane Austen, Charlotte Bronte or Emily Bronte",
            "Jane Austen, Charlotte Bronte or Emily Bronte",
        ),
        (
            "It was either Jane Austen, Charlotte Bronte, or Emily Bronte.",
            "Jane Austen, Charlotte Bronte or Emily Bronte",
        ),
        ("Jane Austen/Charlotte Bronte/Emily Bronte", "Jane Austen/Charlotte Bronte/Emily Bronte"),
        # four: the reference last
        (
            "Charlotte Bronte, Emily Bronte, Anne Bronte or Jane Austen",
            "Charlotte Bronte, Emily Bronte, Anne Bronte or Jane Austen",
        ),
        # five
        (
            "It is likely Jane Austen, Mary Shelley, George Eliot, Charlotte Bronte,"
            " or Emily Bronte",
            "Jane Austen, Mary Shelley, George Eliot, Charlotte Bronte or Emily Bronte",
        ),
        ("Austen/Shelley/Eliot/Bronte", "Austen/Shelley/Eliot/Bronte"),
    ],
)
def test_a_list_of_names_for_one_asked_entity_is_a_hedge(text: str, evidence: str) -> None:
    """Issue 33: "Jane Austen, Charlotte Bronte or Emily Bronte" was judged correct; only
    two-way "X or Y" was caught."""
    refs = ["Jane Austen"] if "Jane" in text else ["Austen"]
    assert hedge(text, refs, AUSTEN) == evidence
    item = Item(question=AUSTEN, references=refs, candidate=text)
    assert answer_reason(item) == ("hedged", evidence)


@pytest.mark.parametrize(
    ("question", "refs", "text"),
    [
        (AUSTEN, ["Jane Austen"], "Jane Austen, in 1813"),
        (AUSTEN, ["Jane Austen"], "Jane Austen, Charlotte Bronte and Emily Bronte"),  # no "or"
        # a reference that is itself a list
        ("What are the colours of the flag?", ["red, white and blue"], "Red, White or Blue"),
        ("Who sang Highway to Hell?", ["AC/DC"], "AC/DC"),
        (
            "Who were the band's members?",
            ["Lennon/McCartney/Harrison"],
            "Lennon/McCartney/Harrison",
        ),
        # the question asks for several things, or offers the alternatives
        (
            "Who were the novelists of the period?",
            ["Jane Austen"],
            "Jane Austen, Charlotte Bronte or Emily Bronte",
        ),
        ("Name three novelists", ["Jane Austen"], "Jane Austen, Charlotte Bronte or Emily Bronte"),
        ("Which did Austen write: Emma, Dracula or Ivanhoe?", ["Emma"], "Emma, Dracula or Ivanhoe"),
        # no name is a reference (wrong, and the combiner says so), or all are aliases
        (AUSTEN, ["Jane Austen"], "Mary Shelley, Charlotte Bronte or Emily Bronte"),
        (MONA_LISA, ["Leonardo da Vinci"], "Leonardo, Da Vinci or Leonardo da Vinci"),
        # lower-case lists are too often synonyms
        ("What is the animal called?", ["puppy"], "puppy, pup or whelp"),
        (AUSTEN, [], "Jane Austen, Charlotte Bronte or Emily Bronte"),  # no reference
    ],
)
def test_lists_the_guards_keep_are_not_a_hedge(question: str, refs: list[str], text: str) -> None:
    assert answer_reason(Item(question=question, references=refs, candidate=text)).reason is None


def test_a_hedged_list_is_not_correct_by_default() -> None:
    """The judge's verdict: forced incorrect whatever the combiner says (as two-way hedges)."""
    frame = pd.DataFrame(
        {
            "question": [AUSTEN] * 2,
            "references": [["Jane Austen"]] * 2,
            "candidate": ["Jane Austen", "Charlotte Bronte, Emily Bronte or Jane Austen"],
        }
    )
    judge = _judge()
    assert judge.with_forced_incorrect(("not_attempted",)).judge(frame)["judge_correct"].all()
    out = judge.judge(frame)
    assert out["judge_reason"].tolist() == ["matched", "hedged"]
    assert out["judge_correct"].tolist() == [True, False]
