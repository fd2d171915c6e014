"""The judge's trace of one item, for researchers (the Explorer's item detail).

Why the saved judge decided as it did (:mod:`qaeval_core.judge.trace`): its ``judge_reason``
with the evidence, the NAQT rule the evidence points to, the matched reference after
normalisation, and how much each input pushed the verdict; for a judge with an LLM tier
(cheap judge -> LLM -> people), which tier decided and the LLM's P(correct) next to the cheap
judge's. Annotators never see it: their pages
stay blind to every automatic score. Computing it runs the judge's metrics on the one item
(a model may load), so it is behind a toggle and cached per (calibration, item text). The item is
read by the store's own conversion (:func:`qaeval_core.store.load_item`, the one
:func:`~qaeval_core.workflows.judge_dataset` reads through ``load_items``), so the judge sees
every field it reads there (choices, wrong answers, the dataset, the question id in ``meta``)
and the trace explains the verdict the dataset's judging gives.

Item text in the trace (the matched reference) is shown as plain text or in a data frame, never
as markdown.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from app.components import safe_text
from app.components import triage_widgets as tw
from qaeval_core import store
from qaeval_core.errors import QAEvalError
from qaeval_core.judge import Judge

__all__ = [
    "TIER_NAMES",
    "item_judge_trace",
    "show_judge_trace",
    "tier_text",
    "trace_picker",
    "trace_section",
]

#: Who decided an item (``judge_tier`` / the trace's ``tier``), in words.
TIER_NAMES = {
    "cheap": "the cheap judge (sure enough; the LLM was not asked)",
    "llm": "the LLM tier (the cheap judge doubted it)",
    "people": "people (still doubtful after the LLM: uncertain)",
}


def item_judge_trace(url: str, calibration: str, item_id: int) -> dict[str, Any]:
    """The saved calibration's judgement of one stored item with its trace:
    ``{"judge_correct", "judge_outcome", "judge_reason", ..., "trace": {...}}``."""
    judge = Judge.from_config(store.get_calibration(url, calibration).config)
    one = store.load_item(url, int(item_id))
    row = judge.judge([one], trace=True).iloc[0]
    out = {k: row[k] for k in ("judge_correct", "judge_outcome", "judge_reason")}
    out["trace"] = json.loads(row["judge_trace"])
    return out


@st.cache_data(show_spinner="Running the judge on this item...", max_entries=64)
def _cached(url: str, calibration: str, item: dict[str, Any]) -> dict[str, Any]:
    """Keyed by the item's shown text too (``item``, the Explorer's ``item_row`` dict)."""
    return item_judge_trace(url, calibration, int(item["item_id"]))


def tier_text(trace: dict[str, Any]) -> str | None:
    """The cascade's line of a trace: which tier decided, the cheap judge's and the LLM's
    P(correct); None for a judge without an LLM tier."""
    tier = trace.get("tier")
    if tier is None:
        return None
    llm = trace.get("llm_probability")
    said = "not asked" if llm is None else f"{float(llm):.3f}"
    return (
        f"Decided by: {TIER_NAMES.get(str(tier), str(tier))} · cheap judge P(correct) "
        f"{float(trace['cheap_probability']):.3f} · LLM P(correct) {said}"
    )


def show_judge_trace(judged: dict[str, Any], *, key: str) -> None:
    """Verdict, reason with its evidence, rule, matched reference and the inputs' pushes."""
    trace = judged["trace"]
    verdict = "correct" if judged["judge_correct"] else "not correct"
    st.text(
        f"Judge: {verdict} · outcome {judged['judge_outcome']} · reason {judged['judge_reason']}"
        f" · score {trace['score']:.3f} · P(correct) {trace['probability']:.3f}"
    )
    tiers = tier_text(trace)
    if tiers is not None:
        st.text(tiers)
    if trace.get("answer_evidence"):
        st.text(f"Evidence: {trace['answer_evidence']}")
    if trace.get("error"):
        st.text(f"Metric error: {trace['error']}")
    rule = trace.get("rule")
    st.text(
        f"NAQT rule {rule['rule']} ({rule['name']}): {rule['evidence']}"
        if rule
        else "NAQT rule: none follows from the evidence alone (it needs judgement)."
    )
    match = trace.get("matched_reference")
    st.text(
        f"Matched reference (normalised): {match['reference']} · {match['how']} · "
        f"token F1 {match['f1']:.2f}"
        if match
        else "Matched reference: none shares a word with the answer."
    )
    rows = [
        {
            "input": name,
            "value": value,
            "push (logit)": (trace.get("contributions") or {}).get(name),
        }
        for name, value in trace["inputs"].items()
    ]
    if rows:
        frame = pd.DataFrame(rows)
        if trace.get("contributions") is not None:
            frame = frame.sort_values("push (logit)", key=lambda s: -s.abs())
        st.dataframe(frame, hide_index=True, key=f"{key}_inputs")
    st.caption(
        "Push: the input's share of the judge's logit (positive: towards correct); exact for a "
        "stacker or threshold judge, empty for combiners that do not decompose."
    )


def trace_section(url: str, calibration: str | None, item: dict[str, Any], *, key: str) -> None:
    """A toggle that shows the judge's trace of ``item`` (needs a saved calibration)."""
    if calibration is None:
        return
    if not st.toggle("Show the judge's trace for this item", key=f"{key}_toggle"):
        return
    try:
        judged = _cached(url, calibration, item)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    show_judge_trace(judged, key=key)


def trace_picker(url: str, dataset: str, item: dict[str, Any], *, key: str) -> None:
    """The trace of an item opened from a table of items (Explorer's tables, Flags): pick the
    saved judge (the dataset's newest preselected), then the toggle (issue 33: the trace was
    reachable from Explorer's "Final labels" only)."""
    calibration = tw.calibration_picker(
        url,
        key=f"{key}_calibration",
        dataset=dataset,
        optional=True,
        label="Judge for the trace",
    )
    trace_section(url, calibration, item, key=key)
