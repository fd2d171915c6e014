"""The triage pages' store and AppTest helpers: the demo dataset with a lexical calibration
(a 20% band) and ``fresh``, 40 unlabelled demo rows (one QA model's name hostile markup).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _apptest import DEMO, build_demo_store, copy_store, finish_store, logged_in
from _calibration_data import fake_cost_measuring
from _paths import DEMO_DATA
from streamlit.testing.v1 import AppTest

from qaeval_core import store, workflows
from qaeval_core.calibrate.options import CostPolicy, CrossValidation, TriagePolicy

DATA = DEMO_DATA


CAL = "nq-lex"


FRESH = "fresh"


EVIL = "<script>alert('x')</script> **bold** ![i](http://127.0.0.1:9/i.png)"


METRICS = ["em", "f1", "contains"]


def demo_rows() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


def build_triage_store(folder: Path) -> Path:
    """The demo store in ``folder`` with the lexical calibration ``CAL`` and the ``FRESH`` rows
    (built once per test module; each test works on a copy, see :func:`private_copy`)."""
    path, url = build_demo_store(folder)
    fit = workflows.calibrate_dataset(
        url,
        DEMO,
        metrics=METRICS,
        candidates=["threshold"],
        cv=CrossValidation(n_splits=3, n_boot=200),
        triage=TriagePolicy(human_share=0.2),
        name=CAL,
        cost_policy=CostPolicy(inputs="all"),
    )
    store.save_calibration(url, CAL, fit.judge.to_config(), dataset=DEMO, created_by="res")
    fresh = []
    for k, row in enumerate(demo_rows()[:40]):
        row = {key: row[key] for key in ("question", "references", "candidate")}
        fresh.append({"id": f"f{k}", **row, "model": EVIL if k % 2 else "model-b"})
    store.import_items(url, FRESH, fresh, source="triage test")
    store.add_user(url, "ann2", "annotator", "pw-ann2")
    finish_store(url)
    return path


def private_copy(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A test's own copy of the triage store, made the app's store. The page's fits measure
    input costs by default: instantly here, in a cache of the test's own."""
    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    return copy_store(demo_file, tmp_path, monkeypatch)


def open_page(page: str, user: str = "res") -> AppTest:
    at = logged_in(user, timeout=180)
    at.switch_page(f"views/{page}").run()
    assert not at.exception, at.exception
    return at


def ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def table(at: AppTest, *columns: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))
