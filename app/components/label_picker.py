"""The Annotate page's item card and label picker: one browser component that owns the keyboard.

It draws the item (question, references, choices, candidate answer with reference words
highlighted) next to the label and rule buttons, the note field and the navigation buttons,
and handles every key of the page: the project's label keys (default Y / U / N), 1-9 for the
rules (0 clears), ``Enter`` saves, ``S`` skips, ``B`` / ``F`` step back / forward through one's
labels, ``Q`` jumps to the next unlabelled item, ``R`` flags the item for review, ``/`` moves
to the note field (where ``Enter`` saves). Keys typed in a text field elsewhere on the page are
left alone.

The pick stays in the browser until ``Enter``; then :func:`picker` delivers one message
``{action, item_id, view, nonce, value, rule, note, active, wall}`` to the page's callback,
which must answer with an ``ack`` for that nonce (see :mod:`.label_picker_frontend` for why
this keeps every label on the item it was picked for). ``active`` is the time on the item with
every gap between key presses / pointer moves cut to the project's idle cap; ``wall`` is the
wall time since the item appeared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from app.components import safe_text
from app.components.label_picker_frontend import CSS, JS
from qaeval_core import store
from qaeval_core.schema import LabelValue

__all__ = ["PICKER_KEY", "candidate_segments", "message", "picker", "picker_data"]

#: Session-state key of the component (its trigger value is read in the callback).
PICKER_KEY = "ann_picker"

_COMPONENT = st.components.v2.component("qaeval_label_picker", html="", css=CSS, js=JS)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_TITLES = {
    LabelValue.CORRECT: "Clearly correct",
    LabelValue.UNCLEAR: "Unclear",
    LabelValue.INCORRECT: "Clearly incorrect",
}


def candidate_segments(text: str, words: set[str]) -> list[list[Any]]:
    """``text`` as ``[piece, highlighted]`` runs: whole words found in ``words`` are marked.

    The browser shows each run with ``textContent``, so nothing in the answer becomes markup.
    """
    out: list[list[Any]] = []
    pos = 0
    for m in _WORD.finditer(text):
        if m.group(0).lower() in words:
            if m.start() > pos:
                out.append([text[pos : m.start()], False])
            out.append([m.group(0), True])
            pos = m.end()
    if pos < len(text):
        out.append([text[pos:], False])
    return out


def legend(guide: store.Guidelines) -> str:
    """The one-line key legend under the picker (it follows the project's label keys)."""
    labels = " · ".join(f"{guide.key_for(v)} {_TITLES[v].lower()}" for v in _TITLES)
    last = guide.rules[-1].number if guide.rules else 0
    return (
        f"Keys — {labels} · 1-{last} rule · 0 no rule · Enter save & next · S skip · B back · "
        "F forward · Q next unlabelled · R flag for review · / note (in it, Enter saves)."
    )


def picker_data(
    item: store.QueueItem,
    guide: store.Guidelines,
    *,
    view: int,
    review: bool,
    pick: Mapping[str, Any] | None,
    ack: Mapping[str, Any] | None,
    flash: Mapping[str, Any] | None,
    focus: int,
) -> dict[str, Any]:
    """Everything the browser side draws, as JSON (kept separate so tests can inspect it)."""
    words = safe_text.reference_words(item.references)
    return {
        "view": view,
        "item": {
            "id": item.id,
            "external_id": item.external_id,
            "question": item.question,
            "references": list(item.references),
            "choices": list(item.choices or []),
            "candidate": candidate_segments(item.candidate, words),
        },
        "review": review,
        "pick": dict(pick) if pick else None,
        "labels": [
            {"value": int(v), "key": guide.key_for(v), "title": _TITLES[v]} for v in _TITLES
        ],
        "rules": [
            {"number": r.number, "name": r.name, "description": r.description, "example": r.example}
            for r in guide.rules
        ],
        "idle_cap": guide.idle_cap_seconds,
        "ack": dict(ack) if ack else None,
        "flash": dict(flash) if flash else None,
        "focus": focus,
        "legend": legend(guide),
    }


def message() -> dict[str, Any] | None:
    """The message the picker just sent (in its callback), or None."""
    state = st.session_state.get(PICKER_KEY)
    value = state.get("action") if isinstance(state, Mapping) else None
    return value if isinstance(value, dict) else None


def picker(data: dict[str, Any], on_message: Callable[[], None]) -> None:
    """Mount the picker with ``data`` (:func:`picker_data`); ``on_message`` runs before the
    next rerun when the browser sends an action (read it with :func:`message`)."""
    _COMPONENT(key=PICKER_KEY, data=data, on_action_change=on_message)
