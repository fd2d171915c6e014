"""A-VERT: target groups, normalisation, decisions on the paper's sky example, reranker path.

The paper's example (section 3.1.1): for "what color is the sky?" the correct group holds
"the sky is blue", "it is blue", "blue, on a clear day"; the wrong group "The color of the sky
is the effect of refraction", "Probably green", "that is a great question, let us ask a
meteorologist!".
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _tiny_models import tiny_cross_encoder

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.avert import (
    REFUSAL_TARGETS,
    AVert,
    build_groups,
    enhance_choice,
    enhance_open,
    normalise_groups,
)
from qaeval_core.metrics.avert_distractors import (
    load_distractor_pool,
    select_distractors,
    top_distractors,
)
from qaeval_core.schema import Item
from qaeval_core.text.squad import normalize_answer

SKY_Q = "what color is the sky?"
SKY_CORRECT = ("the sky is blue", "it is blue", "blue, on a clear day")
SKY_WRONG = (
    "The color of the sky is the effect of refraction",
    "Probably green",
    "that is a great question, let us ask a meteorologist!",
)


def sky(candidate: str) -> Item:
    return Item(SKY_Q, SKY_CORRECT, candidate, wrong_answers=SKY_WRONG)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("avert-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(path))
        yield path


# -- groups (pure) ----------------------------------------------------------------------------
def test_open_enhancements() -> None:
    assert enhance_open(["blue"]) == [
        "blue",
        "The answer is : blue . Let me explain why",
        "Therefore, the answer is : blue",
    ]
    assert enhance_open(["blue"], enhance=False) == ["blue"]


def test_choice_enhancements_list_all_options() -> None:
    targets = enhance_choice(["red", "blue", "green"], 1)
    assert "B : blue" in targets
    assert "Therefore, the correct answer is option B: blue" in targets
    assert "The answer is option B: blue" in targets
    listing = "Option A. red. Is not correct. Option B. blue. Is correct. Option C. green."
    assert any(t.startswith("The answer is the second one, option B. blue.") for t in targets)
    assert any(t.startswith(f"Analyzing the options: {listing}") for t in targets)


def test_groups_from_choices_by_text_and_by_letter() -> None:
    by_text = build_groups(Item("q", ("blue",), "c", choices=("red", "Blue", "green")))
    by_letter = build_groups(Item("q", ("B",), "c", choices=("red", "Blue", "green")))
    for g in (by_text, by_letter):
        assert g.wrong_source == "choices"
        assert "B : Blue" in g.targets["correct"]
        assert "A : red" in g.targets["wrong"] and "C : green" in g.targets["wrong"]
        assert not any("option B" in t and "Is correct" not in t for t in g.targets["wrong"])
        assert g.targets["refusal"] == list(REFUSAL_TARGETS)


def test_groups_from_wrong_answers_distractors_or_nothing() -> None:
    g = build_groups(sky("x"))
    assert g.wrong_source == "wrong_answers" and "Probably green" in g.targets["wrong"]
    g = build_groups(Item("q", ("1945",), "x"), ["1961"], refusal=False)
    assert g.wrong_source == "distractors" and set(g.targets) == {"correct", "wrong"}
    g = build_groups(Item("q", ("1945",), "x"))
    assert g.wrong_source == "none" and "wrong" not in g.targets


def test_distractors_most_similar_excluding_matches() -> None:
    refs = ["Paris"]
    ref_vec = np.array([[1.0, 0.0]])
    pool = ["Lyon", "the city of Paris", "1945", "Marseille"]
    pool_vec = np.array([[0.9, 0.1], [1.0, 0.0], [0.0, 1.0], [0.8, 0.2]])
    assert select_distractors(refs, ref_vec, pool, pool_vec, 2) == ["Lyon", "Marseille"]
    assert select_distractors(refs, ref_vec, pool, pool_vec, 0) == []


def test_normalise_groups() -> None:
    shares = normalise_groups({"correct": 0.6, "wrong": 0.2, "refusal": -0.1})
    assert shares == pytest.approx({"correct": 0.75, "wrong": 0.25, "refusal": 0.0})
    assert sum(normalise_groups({"a": 0.0, "b": 0.0}).values()) == pytest.approx(1.0)


def test_cross_encoder_needs_a_model() -> None:
    with pytest.raises(ConfigError, match="needs model=<cross-encoder"):
        AVert(ranker="cross-encoder").score_batch([sky("blue")])
    with pytest.raises(ConfigError, match="must contain"):
        AVert(instruction="no placeholder").score_batch([sky("blue")])


# -- decisions with the real embedding model ---------------------------------------------------
@pytest.mark.slow
def test_sky_example(cache_dir) -> None:
    cands = {
        "On a clear day the sky looks blue because air scatters short wavelengths.": "correct",
        "Blue.": "correct",
        "The sky is blue.": "correct",
        "Probably green, I guess.": "wrong",
        "Green.": "wrong",
        "That is a great question! Let us ask a meteorologist.": "wrong",
        "I am sorry, but I cannot answer that question.": "refusal",
        "": None,
    }
    res = AVert().score_batch([sky(c) for c in cands])
    for (cand, group), ok, score, det in zip(
        cands.items(), res.decisions, res.scores, res.details, strict=True
    ):
        assert bool(ok) == (group == "correct"), (cand, det)
        assert 0.0 <= score <= 1.0
        if group is None:
            assert score == 0.0 and "empty response" in det["reason"]
            continue
        assert det["group"] == group
        assert sum(det["shares"].values()) == pytest.approx(1.0, abs=1e-5)
        assert score == pytest.approx(det["shares"]["correct"], abs=1e-5)
        assert (det["margin"] >= 0) == bool(ok)


@pytest.mark.slow
@pytest.mark.xfail(
    reason="MiniLM embeds 'The sky is green.' closer to 'the sky is blue' than to 'Probably "
    "green'; the paper reports that rerankers beat embedding models on such cases",
    strict=False,
)
def test_sky_example_hard_negative(cache_dir) -> None:
    assert not AVert().score_batch([sky("The sky is green.")]).decisions[0]


def _pool_targets() -> set[str]:
    """Every wrong target the shipped pool can give (its answers and their enhancements)."""
    return set(enhance_open(load_distractor_pool().answers))


@pytest.mark.slow
def test_distractors_come_from_the_fixed_pool_not_the_batch(cache_dir) -> None:
    """Issue 21: version 1 took them from the other items of the batch, so the same item
    scored 0.884 alone and 0.648 inside a 6-row file."""
    items = [
        Item("What year did World War II end?", ("1945",), "It ended in 1945.", dataset="d"),
        Item("When was Barack Obama born?", ("1961",), "He was born in 1961.", dataset="d"),
        Item("When did the Berlin Wall fall?", ("1989",), "In 1989.", dataset="d"),
        Item("Who wrote Hamlet?", ("Shakespeare",), "William Shakespeare.", dataset="d"),
    ]
    res = AVert(k_distractors=2).score_batch(items)
    assert res.decisions.tolist() == [True, True, True, True]
    pool = _pool_targets()
    for it, det in zip(items, res.details, strict=True):
        assert det["wrong_source"] == "distractors"
        assert det["best_targets"]["wrong"] in pool
        assert it.references[0] not in det["best_targets"]["wrong"]
    # the pool's most similar answers to a year are years
    assert re.search(r"\b1\d{3}\b", res.details[0]["best_targets"]["wrong"])
    # neither another item that answers "1961" nor the order changes an item's score
    alone = [AVert(k_distractors=2).score_batch([it]).scores[0] for it in items]
    np.testing.assert_allclose(res.scores, alone, atol=1e-5)
    # items with their own wrong answers never depended on the batch
    own = [sky("Blue."), sky("Probably green.")]
    batch = AVert().score_batch(own).scores
    single = [AVert().score_batch([it]).scores[0] for it in own]
    np.testing.assert_allclose(batch, single, atol=1e-6)


def test_the_shipped_pool_and_a_pool_file(tmp_path: Path) -> None:
    shipped = load_distractor_pool()
    assert len(shipped.answers) > 500 and "Richard Nixon" in shipped.answers
    # an answer of the item's own question is never its distractor
    q = "which president supported the creation of the environmental protection agency (epa)"
    assert normalize_answer(q) in shipped.owners["Richard Nixon"]
    text = tmp_path / "pool.txt"
    text.write_text("1939\n1961\n\nCharles Dickens\n", encoding="utf-8")
    assert load_distractor_pool(str(text)).answers == ("1939", "1961", "Charles Dickens")
    lines = tmp_path / "pool.jsonl"
    lines.write_text(
        '{"answer": "1939", "questions": ["When did WW2 begin?"]}\n{"answer": "1961"}\n',
        encoding="utf-8",
    )
    pool = load_distractor_pool(str(lines))
    sims = np.array([0.9, 0.8])
    pick = top_distractors(["1945"], sims, pool.answers, pool.owners, "when did ww2 begin", 2)
    assert pick == ["1961"]  # 1939 answers this very question
    assert top_distractors(["1945"], sims, pool.answers, pool.owners, "other", 2) == [
        "1939",
        "1961",
    ]
    # the content identifies the scores, not the path
    copy = tmp_path / "copy.txt"
    copy.write_bytes(text.read_bytes())
    base = AVert(distractor_pool=str(text)).config_hash()
    assert AVert(distractor_pool=str(copy)).config_hash() == base
    assert "distractor_pool" not in AVert(distractor_pool=str(text)).config()["params"]
    copy.write_text("1939\n", encoding="utf-8")
    assert AVert(distractor_pool=str(copy)).config_hash() != base  # edited: read again
    assert AVert().config_hash() != base
    with pytest.raises(ConfigError, match="cannot read the distractor pool"):
        AVert(distractor_pool=str(tmp_path / "missing.txt")).config()
    (tmp_path / "bad.jsonl").write_text('{"text": "1939"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 1"):
        load_distractor_pool(str(tmp_path / "bad.jsonl"))


@pytest.mark.slow
def test_cross_encoder_ranker_with_a_tiny_model(tmp_path: Path, cache_dir) -> None:
    texts = [SKY_Q, *SKY_CORRECT, *SKY_WRONG, *REFUSAL_TARGETS, "the answer is therefore let"]
    folder = tiny_cross_encoder(tmp_path / "tiny-ce", texts)
    metric = AVert(ranker="cross-encoder", model=str(folder))
    res = metric.score_batch([sky("blue"), sky("probably green"), sky("")])
    for ok, score, det in zip(res.decisions[:2], res.scores[:2], res.details[:2], strict=True):
        assert det["ranker"] == "cross-encoder"
        assert all(0.0 <= v <= 1.0 for v in det["maxima"].values())  # sigmoid scores
        assert sum(det["shares"].values()) == pytest.approx(1.0, abs=1e-5)
        others = max(v for k, v in det["shares"].items() if k != "correct")
        assert bool(ok) == (det["shares"]["correct"] >= others)
        assert score == pytest.approx(det["shares"]["correct"], abs=1e-5)
    assert res.scores[2] == 0.0 and not res.decisions[2]
    # without wrong answers the distractors are chosen with the embedding model, not the reranker
    plain = [
        Item("What year did the war end?", ("1945",), "in 1945", dataset="d"),
        Item("Who wrote Hamlet?", ("Shakespeare",), "Shakespeare", dataset="d"),
    ]
    res = metric.score_batch(plain)
    assert [d["wrong_source"] for d in res.details] == ["distractors", "distractors"]
    assert all(d["best_targets"]["wrong"] in _pool_targets() for d in res.details)
