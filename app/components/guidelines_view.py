"""Showing a researcher's guidelines markdown safely: formatting yes, HTML and images no.

Guidelines are written in the app by researchers, so they are trusted to format text (lists,
bold, links, code) but not to inject anything: raw HTML (``<script>``, ``<img onerror=...>``)
is shown as the literal text typed, and markdown images are shown as text (no request leaves
the page). ``unsafe_allow_html`` is never used; code spans and fenced blocks are left as they
are, since markdown already shows their content literally.
"""

from __future__ import annotations

import re

import streamlit as st

from app.components.safe_text import escape_markdown
from qaeval_core import store

__all__ = ["safe_markdown", "show_guidelines", "show_rules"]

_FENCE = re.compile(r"(^```.*?^```[^\n]*$)", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_UNSAFE = re.compile(r"([<>])|!(?=\[)")


def _escape_prose(text: str) -> str:
    return _UNSAFE.sub(lambda m: "\\" + m.group(0) if m.group(1) else "\\!", text)


def _escape_outside_code_spans(text: str) -> str:
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape_prose(text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_escape_prose(text[pos:]))
    return "".join(out)


def safe_markdown(text: str) -> str:
    """``text`` as markdown in which ``<`` / ``>`` and image syntax render literally."""
    parts = _FENCE.split(str(text).replace("\r\n", "\n"))
    return "".join(p if p.startswith("```") else _escape_outside_code_spans(p) for p in parts)


def show_rules(guide: store.Guidelines) -> None:
    """The rule list as a numbered list of plain text (each part escaped)."""
    lines = []
    for r in guide.rules:
        desc = f" — {escape_markdown(r.description)}" if r.description else ""
        example = f" *e.g.* {escape_markdown(r.example)}" if r.example else ""
        lines.append(f"{r.number}. **{escape_markdown(r.name)}**{desc}{example}")
    st.markdown("\n".join(lines))


def show_guidelines(guide: store.Guidelines, *, expanded: bool = False) -> None:
    """The guidelines and the rule list in an expander (on the Annotate page)."""
    version = f"version {guide.version}" if guide.version else "default"
    with st.expander(f"Guidelines ({version})", expanded=expanded, icon=":material/menu_book:"):
        st.markdown(safe_markdown(guide.text))
        st.markdown("**Rules**")
        show_rules(guide)
