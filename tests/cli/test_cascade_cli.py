"""``qaeval calibrate --llm`` then ``qaeval score --config``: the cascade end to end, with an
LLM behind an OpenAI-compatible endpoint on loopback that knows the toy facts (the real
packaged model is exercised in ``test_llm_judge.py``)."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pandas as pd
import pytest
from _calibration_data import fake_cost_measuring

from qaeval_core.cli.main import main
from qaeval_core.judge import Judge

#: (question, reference, an alias no reference string matches, a wrong answer)
FACTS = [
    ("Who wrote Hamlet?", "William Shakespeare", "the Bard of Avon", "Christopher Marlowe"),
    ("What is the capital of France?", "Paris", "the City of Light", "Lyon"),
    (
        "Who was the first man on the moon?",
        "Neil Armstrong",
        "Apollo 11's commander",
        "Buzz Aldrin",
    ),
    ("Which planet is the largest?", "Jupiter", "the fifth planet from the Sun", "Saturn"),
    (
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci",
        "the painter of The Last Supper",
        "Raphael",
    ),
]
RIGHT = [x.lower() for _, ref, alias, _ in FACTS for x in (ref, alias)]


def _write_dataset(path: Path, n: int, seed: int, labels: bool = True, tag: str = "") -> Path:
    """A third right by the reference, a third right by an alias no lexical input can see, a
    third wrong: the cheap judge doubts the alias and wrong rows alike, the LLM tells them apart."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            question, ref, alias, wrong = FACTS[i % len(FACTS)]
            kind = int(rng.integers(3))
            candidate = (ref, alias, wrong)[kind]
            row = {
                "id": f"r{i}",
                "question": f"{question} ({tag}{i // 5})",
                "references": [ref],
                "candidate": candidate,
            }
            if labels:
                row["label"] = int(kind < 2)
            fh.write(json.dumps(row) + "\n")
    return path


class _KnowingLLM(BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_POST(self) -> None:  # http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        candidate = body["messages"][-1]["content"].split("Candidate answer:")[1].lower()
        type(self).asked.append(candidate)
        yes = 0.92 if any(r in candidate for r in RIGHT) else 0.08
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


@pytest.fixture
def llm_url():
    server = HTTPServer(("127.0.0.1", 0), _KnowingLLM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _KnowingLLM.asked = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_calibrate_with_an_llm_tier_then_score_by_tiers(
    tmp_path: Path, llm_url, monkeypatch, capsys
):
    fake_cost_measuring(monkeypatch, tmp_path / "costs")
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
    db = str(tmp_path / "s.sqlite")
    assert (
        main(
            [
                "import",
                str(_write_dataset(tmp_path / "d.jsonl", n=160, seed=0)),
                "-d",
                "toy",
                "--db",
                db,
            ]
        )
        == 0
    )
    out = tmp_path / "judge.json"
    args = ["calibrate", "-d", "toy", "-o", str(out), "--db", db, "--metrics", "em,f1"]
    code = main([*args, "--llm", "toy-llm", "--llm-url", llm_url, "--human-share", "0.1"])
    assert code == 0
    printed = capsys.readouterr()
    assert "Cascade" in printed.out and "the LLM share kept" in printed.out
    asked_in_calibration = len(_KnowingLLM.asked)
    assert asked_in_calibration == 160  # every calibration row once
    judge = Judge.from_config(out)
    assert judge.cascade is not None and judge.cascade.human_share == 0.1
    assert judge.cascade.llm_share > 0 and judge.cascade.coef_llm > 0
    assert judge.cascade.feature.params["url"] == llm_url

    new = _write_dataset(tmp_path / "new.jsonl", n=60, seed=5, labels=False, tag="new ")
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(new), "--config", str(out), "-o", str(scored)]) == 0
    frame = pd.read_json(scored, lines=True)
    assert set(frame["judge_tier"]) <= {"cheap", "llm", "people"}
    llm_rows = int((frame["judge_tier"] != "cheap").sum())
    assert 0 < llm_rows == len(_KnowingLLM.asked) - asked_in_calibration  # only the band
    before = len(_KnowingLLM.asked)
    assert main(["score", str(new), "--config", str(out), "-o", str(scored)]) == 0
    assert len(_KnowingLLM.asked) == before  # the verdicts are cached
    assert "decided by:" in capsys.readouterr().out

    dry = main(["score", str(new), "--config", str(out), "--dry-run"])
    assert dry == 0 and "60 rows" in capsys.readouterr().out


def test_llm_options_need_llm(tmp_path: Path):
    db = str(tmp_path / "s.sqlite")
    code = main(
        ["calibrate", "-d", "toy", "-o", str(tmp_path / "j.json"), "--db", db, "--llm-share", "0.2"]
    )
    assert code != 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--target-accuracy", "0.9"], "--target-accuracy is not available with an LLM tier"),
        (["--human-share", "0.12"], "--human-share must be one of 0, 0.05, 0.1"),
        (["--llm-share", "0.25"], "--llm-share must be one of 0, 0.1, 0.2"),
        (["--llm-prompt", "chatty"], "--llm-prompt must be one of naqt, lave"),
        (["--llm-url", "localhost:8080"], "--llm-url must be the http:// or https:// address"),
    ],
)
def test_bad_llm_flags_fail_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    """The LLM tier's object (calibrate.options.LLMTierPolicy) refuses them in the library's
    words, shown with the flag, before the calibration reads a label."""
    from qaeval_core import workflows

    def no_work(*_args, **_kwargs):
        raise AssertionError("calibrated before the flags were checked")

    monkeypatch.setattr(workflows, "calibrate_dataset", no_work)
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-o",
            str(tmp_path / "j.json"),
            "--llm",
            "toy-llm",
            *flags,
            "--db",
            str(tmp_path / "s.sqlite"),
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code != 0
    assert message in err and "Traceback" not in err
