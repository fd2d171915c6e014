"""``llm_judge`` on an endpoint that fails: an item without a usable answer is *no verdict*
(NaN, never 0.0 or 0.5, the reason in ``details["no_verdict"]``), is never cached, and
survives the scoring loop, the store and a judge's cascade as no verdict (issue 31)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _fake_llm import MALFORMED, fake_llm

from qaeval_core.llm.verdict_cache import VerdictCache
from qaeval_core.metrics import llm_judge as llm_judge_module
from qaeval_core.metrics.base import NO_VERDICT, get_metric
from qaeval_core.schema import Item
from qaeval_core.scoring import ScoringJob, metric_label, no_verdicts, run_jobs, score

#: 40 distinct items: every tenth names Shakespeare (P(yes) 0.9 from the fake), the rest 0.2.
ITEMS = [
    Item(
        question=f"Who wrote play number {i}?",
        references=("William Shakespeare",),
        candidate="Shakespeare" if i % 10 == 0 else f"Marlowe {i}",
    )
    for i in range(40)
]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> VerdictCache:
    store = VerdictCache(tmp_path / "verdicts.sqlite")
    monkeypatch.setattr(llm_judge_module, "VerdictCache", lambda: store)
    return store


def _metric(url: str, **kw: object):
    settings = {"model": "m", "url": url, "timeout": 2.0, "max_retries": 0, "concurrency": 1}
    return get_metric("llm_judge", **{**settings, **kw})


def test_an_endpoint_that_dies_mid_run_gives_no_verdict_and_the_rerun_asks_only_the_rest(
    cache,
):
    with fake_llm(die_after=10) as server:
        first = _metric(server.url).score_batch(ITEMS)
        asked = server.requests
        ok = np.isfinite(first.scores)
        assert ok.sum() == 10 and ok[:10].all()  # the answers before the death are verdicts
        missing = [d[NO_VERDICT] for d in first.details[10:]]
        assert all(math.isnan(s) for s in first.scores[10:])  # never 0.0: no one said so
        assert not first.decisions[10:].any()
        assert "could not reach" in missing[0]
        assert missing[-1].startswith("not sent: the endpoint failed 3 times in a row")
        assert asked == 13  # ten answers, three failures in a row, then nothing more sent
        assert len(cache.everything()) == 10  # only verdicts are cached

        server.die_after = None  # the server is fixed: the rerun asks for the 30 others only
        again = _metric(server.url).score_batch(ITEMS)
        assert server.requests == asked + 30
    assert np.isfinite(again.scores).all()
    np.testing.assert_allclose(again.scores[:10], first.scores[:10])
    assert again.scores[20] == pytest.approx(0.9) and again.scores[21] == pytest.approx(0.2)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_answer_is_no_verdict_and_not_cached(cache, name):
    item = ITEMS[0]
    with fake_llm(mode="body", body=MALFORMED[name]) as server:
        result = _metric(server.url).score_batch([item])
        assert math.isnan(result.scores[0]) and not result.decisions[0]
        reason = result.details[0][NO_VERDICT]
        assert "\n" not in reason and len(reason) < 400
        assert not cache.everything()

        server.mode = "ok"  # fixed: the item gets its real verdict, nothing stale came back
        fixed = _metric(server.url).score_batch([item])
    assert fixed.scores[0] == pytest.approx(0.9)


def test_an_answer_that_reads_as_neither_yes_nor_no_is_no_verdict(cache):
    body = b'{"choices": [{"message": {"content": "Perhaps."}}]}'
    with fake_llm(mode="body", body=body) as server:
        result = _metric(server.url).score_batch(ITEMS[:1])
    assert math.isnan(result.scores[0])  # was 0.5, "unreadable", and cached
    assert "Perhaps" in result.details[0][NO_VERDICT]
    assert not cache.everything()


def test_a_hanging_endpoint_costs_a_few_deadlines_not_one_per_item(cache):
    with fake_llm(mode="hang") as server:
        result = _metric(server.url, timeout=0.3).score_batch(ITEMS[:12])
        # Counted by the client: on a loaded machine the server's thread may not yet have
        # counted the last request the client gave up on.
        assert server.requests <= 3
    assert np.isnan(result.scores).all()
    reasons = [d[NO_VERDICT] for d in result.details]
    assert all("within 0.3 s" in r and not r.startswith("not sent") for r in reasons[:3])
    assert all(r.startswith("not sent: the endpoint failed 3 times in a row") for r in reasons[3:])


def test_the_scoring_loop_keeps_no_verdict_and_names_it(cache):
    import pandas as pd

    frame = pd.DataFrame(
        {
            "question": [it.question for it in ITEMS[:4]],
            "references": [list(it.references) for it in ITEMS[:4]],
            "candidate": [it.candidate for it in ITEMS[:4]],
        }
    )
    with fake_llm(die_after=2) as server:
        metric = _metric(server.url)
        out = score(frame, [metric])
        label = metric_label(metric)
        (res,) = run_jobs([ScoringJob("x", _metric(server.url), ITEMS[2:4])]).values()
    assert out[label].isna().tolist() == [False, False, True, True]
    assert out[f"{label}_correct"].isna().tolist() == [False, False, True, True]
    assert out[f"{label}_correct"].iloc[:2].tolist() == [True, False]
    count, reason = no_verdicts(out, [label])[label]
    assert count == 2 and "could not reach" in reason
    assert np.isnan(res.scores).all()  # no retry row by row, no 0.0
    assert all(d["error"].startswith("no verdict: ") for d in res.details)


def test_the_cache_refuses_no_verdict_and_an_old_null_entry_is_asked_again(cache):
    from qaeval_core.llm.prompts import get_prompt
    from qaeval_core.llm.verdict_cache import CachedVerdict, verdict_key

    with pytest.raises(ValueError, match="only verdicts are cached"):
        cache.put("k", CachedVerdict(None, "Perhaps.", 0.1))
    with pytest.raises(ValueError, match="only verdicts are cached"):
        cache.put("k", CachedVerdict(float("nan"), "", 0.1))
    with fake_llm() as server:
        metric = _metric(server.url)
        prompt = get_prompt("naqt")
        key = verdict_key(metric.fingerprint(), prompt.key, prompt.messages(ITEMS[0])[0])
        cache._conn().execute(  # what an older version wrote for an unreadable answer
            "INSERT INTO verdicts (key, probability, text, seconds) VALUES (?, NULL, '', 0.1)",
            (key,),
        )
        result = metric.score_batch(ITEMS[:1])
        assert server.requests == 1
    assert result.scores[0] == pytest.approx(0.9)
    assert cache.get_many([key])[key].probability == pytest.approx(0.9)
