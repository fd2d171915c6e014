"""Driving the Calibrate page through AppTest: log in, open it, fit a small judge."""

from __future__ import annotations

from _apptest import logged_in as log_in
from streamlit.testing.v1 import AppTest

PAGE = "views/calibrate.py"


def logged_in(name: str) -> AppTest:
    return log_in(name, timeout=180)


def open_page(at: AppTest) -> AppTest:
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def fit(at: AppTest) -> AppTest:
    at.multiselect(key="calibrate_metrics").set_value(["em", "f1", "contains"])
    at.multiselect(key="calibrate_candidates").set_value(["threshold", "fusion"])
    at.number_input(key="calibrate_folds").set_value(3)
    at.number_input(key="calibrate_max_labels").set_value(200)
    at.number_input(key="calibrate_boot").set_value(200)
    at.button(key="calibrate_fit").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at
