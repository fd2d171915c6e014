"""Showing untrusted text safely, and the small text widgets built on it.

Text from datasets is untrusted (model outputs can contain ``<script>``, markdown images,
links, LaTeX). It is shown either as plain text (``st.text``/``st.code``) or through
:func:`escape_markdown`, which backslash-escapes every markdown character so nothing in it can
become markup; only the highlights :func:`highlight` adds around whole alphanumeric words are
markup. ``unsafe_allow_html`` is never used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import streamlit as st

from qaeval_core.errors import QAEvalError

__all__ = [
    "escape_markdown",
    "reference_words",
    "highlight",
    "section",
    "show_error",
]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~=$:&\"'%^@/])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(
    {"a", "an", "the", "of", "in", "on", "at", "to", "and", "or", "is", "are", "was", "were"}
    | {"be", "by", "for", "with", "as", "it", "its", "this", "that", "from"}
)


#: Word joiner (U+2060): invisible, and breaks the patterns GFM turns into links by itself.
_JOINER = "\u2060"
_AUTOLINKS = (
    (re.compile(r"(?i)(\b(?:https?|ftp|mailto|file)):(?=//)"), rf"\1:{_JOINER}"),
    (re.compile(r"(?i)\b(www)\."), rf"\1{_JOINER}."),
    (re.compile(r"(?<=\w)@(?=\w)"), f"{_JOINER}@"),
)


def _defang(line: str) -> str:
    """Stop URL, ``www.`` and e-mail literals from becoming links.

    GFM's autolink literals are found in the text *after* backslash escapes are resolved, so
    escaping cannot stop them; an invisible word joiner inside the pattern does.
    """
    for pattern, repl in _AUTOLINKS:
        line = pattern.sub(repl, line)
    return line


def escape_markdown(text: str) -> str:
    """``text`` as markdown that renders literally: every special character is escaped.

    Line breaks are kept (hard breaks), leading indentation cannot start a code block, and
    ``<script>``, ``![img](url)``, links, bare URLs and e-mail addresses, ``$math$`` and
    ``:emoji:`` stay plain characters.
    """
    lines = []
    for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        lines.append(_MD_SPECIAL.sub(r"\\\1", _defang(line.strip())))
    return "  \n".join(lines)


def reference_words(references: Iterable[str]) -> set[str]:
    """Lower-cased content words of the references (what highlighting looks for)."""
    words: set[str] = set()
    for ref in references:
        for w in _WORD.findall(str(ref).lower()):
            if w not in _STOPWORDS:
                words.add(w)
    return words


def highlight(text: str, words: set[str]) -> str:
    """Escaped markdown of ``text`` with the whole words in ``words`` highlighted.

    The text is split into word and non-word runs; non-word runs and plain words are escaped
    with :func:`escape_markdown`, matched words (alphanumeric only, so they need no escaping)
    are wrapped in a highlight directive. Nothing from ``text`` can therefore open markup.
    """
    if not words:
        return escape_markdown(text)
    out: list[str] = []
    for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _defang(line.strip())
        parts: list[str] = []
        pos = 0
        for m in _WORD.finditer(line):
            parts.append(_MD_SPECIAL.sub(r"\\\1", line[pos : m.start()]))
            word = m.group(0)
            if word.lower() in words:
                parts.append(f":orange-background[**{word}**]")
            else:
                parts.append(word)
            pos = m.end()
        parts.append(_MD_SPECIAL.sub(r"\\\1", line[pos:]))
        out.append("".join(parts))
    return "  \n".join(out)


# ----------------------------------------------------------------------------- widgets


def section(title: str) -> None:
    """A small section heading without an anchor link (anchors would be extra Tab stops)."""
    st.markdown(f"**{escape_markdown(title)}**")


def show_error(exc: QAEvalError) -> None:
    """A user-caused error as one readable message (no traceback)."""
    st.error(str(exc), icon=":material/error:")
