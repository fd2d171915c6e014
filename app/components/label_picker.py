"""The label and rule picker of the Annotate view, keyboard first.

Three label buttons (shortcuts Y / U / N: clearly correct, unclear, clearly incorrect) and one
button per NAQT-derived rule (shortcuts 1-7; 0 clears the rule), each with the rule's
description and an example. The pick lives in ``st.session_state`` as ``ann_value`` (a
:class:`~qaeval_core.schema.LabelValue` as int, or None) and ``ann_rule`` (a rule number, or
None): the view sets both when it opens an item and reads them when it saves.
"""

from __future__ import annotations

import streamlit as st

from app.components import safe_text
from qaeval_core.schema import RULES, LabelValue

__all__ = ["LABEL_KEYS", "panel"]

#: Label buttons in display order with their keys (Y(es) / U(nclear) / N(o)).
LABEL_KEYS: list[tuple[LabelValue, str]] = [
    (LabelValue.CORRECT, "Y"),
    (LabelValue.UNCLEAR, "U"),
    (LabelValue.INCORRECT, "N"),
]

S = st.session_state


def _pick_value(value: int) -> None:
    S.ann_value = value


def _pick_rule(rule: int | None) -> None:
    S.ann_rule = None if rule == S.ann_rule else rule


@st.fragment
def panel() -> None:
    """The label and rule buttons. A fragment: picking a label or rule reruns only this panel
    (no database work), so those key presses feel instant; saving reruns the page.
    """
    safe_text.section("Label")
    for value, key in LABEL_KEYS:
        st.button(
            value.title.capitalize(),
            key=f"ann_label_{int(value)}",
            shortcut=key,
            type="primary" if S.ann_value == int(value) else "secondary",
            width="stretch",
            on_click=_pick_value,
            args=(int(value),),
        )
    safe_text.section("Rule that decided it")
    for rule in RULES:
        st.button(
            f"{rule.number} · {rule.name}",
            key=f"ann_rule_{rule.number}",
            shortcut=str(rule.number),
            type="primary" if S.ann_rule == rule.number else "secondary",
            width="stretch",
            on_click=_pick_rule,
            args=(rule.number,),
        )
        st.caption(f"{rule.description} *e.g.* {safe_text.escape_markdown(rule.example)}")
    st.button(
        "No rule",
        key="ann_rule_0",
        shortcut="0",
        type="tertiary",
        on_click=_pick_rule,
        args=(None,),
    )
