"""Taught answers (researchers): what people's labels teach the judge about each question.

A label on an answer is knowledge about its question (issue 24, item 2): a correct answer that
contains no reference is suggested as another reference ("accept 'X' for this question?"), a
wrong one as a known wrong answer. A researcher accepts or rejects each suggestion; every
decision is kept with who and when (a change of mind is a new decision, never an overwrite),
and a decision made on an outdated view is refused with who decided what. Accepted answers are
laid over every model's answer to the question when scoring (the items never change), and the
page lists the verdicts that changed. All logic is in :mod:`qaeval_core.workflows.answer_knowledge`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.components import auth
from qaeval_core import store
from qaeval_core.analysis.formatting import display_frame
from qaeval_core.errors import QAEvalError
from qaeval_core.workflows import answer_knowledge as knowledge

#: What each kind of suggestion asks, in words.
KIND_TEXT = {"alias": "accept as a reference", "wrong": "record as a known wrong answer"}
DECISION_TEXT = {"accepted": "accepted", "rejected": "rejected"}
#: The scorers the page can rescore with: cheap metrics whose decisions are verdicts.
SCORERS = {"contains": "Contains a reference", "em": "Exact match", "f1": "Token F1"}
#: Option prefix of a saved calibration (a judge) among the scorers.
JUDGE_PREFIX = "judge:"
SUGGESTION_HEADERS = {
    "question": "Question",
    "kind": "Suggestion",
    "answer": "Answer",
    "models": "Given by",
    "n_labels": "Labels behind it",
    "decision": "Decision",
    "decided_by": "Decided by",
    "decided_at": "Decided at (UTC)",
}
#: How many changed verdicts are also written out as sentences under the table.
SHOWN_IN_WORDS = 20
CHANGE_HEADERS = {
    "external_id": "Item",
    "qa_model": "Model",
    "question": "Question",
    "candidate": "Answer",
    "scorer": "Scorer",
    "verdict": "Verdict (before -> after)",
    "by": "Verdict from",
}


def _verdict(value: Any) -> str:
    return "correct" if bool(value) else "incorrect"


def suggestion_table(found: pd.DataFrame) -> pd.DataFrame:
    """The suggestions as the page shows them: words, not codes."""
    out = found.copy()
    out["kind"] = out["kind"].map(KIND_TEXT)
    out["models"] = [", ".join(m) for m in out["qa_models"]]
    out["decision"] = [
        DECISION_TEXT.get(d, "undecided") if d else "undecided" for d in out["decision"]
    ]
    out["decided_at"] = [
        "" if pd.isna(t) else pd.Timestamp(t).strftime("%Y-%m-%d %H:%M") for t in out["decided_at"]
    ]
    return display_frame(out[list(SUGGESTION_HEADERS)], SUGGESTION_HEADERS)


def change_table(changes: pd.DataFrame) -> pd.DataFrame:
    """The verdicts that changed, "before -> after" in words."""
    out = changes[changes["changed"]].copy()
    out["verdict"] = [
        f"{_verdict(b)} -> {_verdict(a)}" for b, a in zip(out["before"], out["after"], strict=True)
    ]
    out["scorer"] = out["scorer"].map(
        lambda s: SCORERS.get(s, "the saved judge" if s == "judge" else s)
    )
    out["by"] = out["by"].map({"known answer": "the answer people judged", "scorer": "the scorer"})
    return display_frame(out[list(CHANGE_HEADERS)], CHANGE_HEADERS)


def change_lines(changes: pd.DataFrame, limit: int = SHOWN_IN_WORDS) -> list[str]:
    """The first ``limit`` changed verdicts as sentences (shown as plain text)."""
    out = changes[changes["changed"]].head(limit)
    return [
        f"{r.external_id} ({r.qa_model or 'no model'}) '{r.candidate}': "
        f"{_verdict(r.before)} -> {_verdict(r.after)}"
        for r in out.itertuples(index=False)
    ]


def _label(row: pd.Series) -> str:
    return f"{str(row['question'])[:60]}: {KIND_TEXT[row['kind']]} '{str(row['answer'])[:60]}'"


def _decide(url: str, dataset: str, user: str, decision: str) -> None:
    picked = st.session_state.get("knowledge_pick")
    seen = st.session_state.get("knowledge_seen", {})
    if picked is None or picked not in seen:
        st.session_state.knowledge_flash = ("warning", "Choose a suggestion first.")
        return
    try:
        made = knowledge.decide(
            url, dataset, user, seen[picked], decision, note=st.session_state.get("knowledge_note")
        )
    except QAEvalError as exc:
        st.session_state.knowledge_flash = ("error", str(exc))
        return
    st.session_state.knowledge_flash = (
        "success",
        f"{DECISION_TEXT[made.decision].capitalize()} '{made.answer}' (decision {made.version}).",
    )
    st.session_state.knowledge_note = ""


def main() -> None:
    user = auth.page_setup(
        "Taught answers",
        auth.RESEARCHERS,
        caption="Answers people labelled, as knowledge about their question: accept or reject "
        "each suggestion; accepted ones rescore every model's answer to that question.",
    )
    url = auth.store_url()
    names = [d.name for d in store.list_datasets(url)]
    if not names:
        st.info("There is no data yet: import a dataset on the Data page.")
        return
    cols = st.columns([2, 1, 1])
    dataset = cols[0].selectbox("Dataset", names, key="knowledge_dataset")
    show = cols[1].segmented_control(
        "Show", ["undecided", "all"], default="undecided", key="knowledge_show"
    )
    judges = {
        f"{JUDGE_PREFIX}{c.name}": f"Saved judge: {c.name}"
        for c in store.list_calibrations(url)
        if c.dataset in (None, dataset)
    }
    options = {**SCORERS, **judges}
    scorer = cols[2].selectbox(
        "Rescore with", list(options), format_func=options.__getitem__, key="knowledge_scorer"
    )
    if flash := st.session_state.pop("knowledge_flash", None):
        getattr(st, flash[0])(flash[1])
    try:
        found = knowledge.question_suggestions(url, dataset)
    except QAEvalError as exc:
        st.error(str(exc))
        return
    shown = found if show == "all" else found[found["decision"].isna()]
    st.subheader("Suggestions")
    if found.empty:
        st.info(
            "No suggestions yet: they come from labelled answers (a correct answer that contains "
            "no reference, or a wrong one)."
        )
    elif shown.empty:
        st.success(f"All {len(found)} suggestion(s) are decided (choose 'all' to see them).")
    else:
        st.caption(
            f"{len(shown)} of {len(found)} suggestion(s). Text is shown as typed (never as markup)."
        )
        st.dataframe(suggestion_table(shown), hide_index=True, width="stretch")
        st.session_state.knowledge_seen = {
            str(r["suggestion_hash"]): r.to_dict() for _, r in shown.iterrows()
        }
        labels = {str(r["suggestion_hash"]): _label(r) for _, r in shown.iterrows()}
        st.selectbox(
            "Suggestion",
            list(labels),
            format_func=labels.__getitem__,
            index=None,
            key="knowledge_pick",
            placeholder="Choose a suggestion",
        )
        st.text_input("Note (optional)", key="knowledge_note")
        buttons = st.columns(2)
        buttons[0].button(
            "Accept",
            key="knowledge_accept",
            type="primary",
            on_click=_decide,
            args=(url, dataset, user.name, "accepted"),
        )
        buttons[1].button(
            "Reject",
            key="knowledge_reject",
            on_click=_decide,
            args=(url, dataset, user.name, "rejected"),
        )
    st.subheader("Verdicts the accepted answers changed")
    try:
        if scorer.startswith(JUDGE_PREFIX):
            changes = knowledge.rescore_dataset(
                url, dataset, calibration=scorer.removeprefix(JUDGE_PREFIX)
            )
        else:
            changes = knowledge.rescore_dataset(url, dataset, [scorer])
    except QAEvalError as exc:
        st.error(str(exc))
        return
    if changes.empty:
        st.info("Nothing accepted yet: accepted answers rescore every answer to their question.")
        return
    n_changed = int(changes["changed"].sum())
    st.caption(
        f"{len(changes)} answer(s) to questions with accepted knowledge rescored; {n_changed} "
        "verdict(s) changed. The items themselves are unchanged."
    )
    if n_changed:
        st.dataframe(change_table(changes), hide_index=True, width="stretch")
        for line in change_lines(changes):
            st.text(line)
        if n_changed > SHOWN_IN_WORDS:
            st.caption(f"The first {SHOWN_IN_WORDS} of {n_changed} in words; all in the table.")


if __name__ == "__main__":
    main()
