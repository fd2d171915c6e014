"""Tab order in password forms: the "show password" eye is skipped by Tab (issue 33).

Streamlit's password field always adds an eye button after the field, and no option takes it
out of the tab order, so Tab from "New password" landed on the eye, not on "Repeat the new
password" or the form's button. This component gives every eye button on the page
``tabindex="-1"``: Tab goes field -> field -> submit in natural order, and the eye still works
with the mouse (seeing a new password while typing it matters). It watches the page, so eyes
drawn by later reruns are covered too. It carries no data and draws nothing.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["skip_show_password_buttons"]

_JS = r"""
const EYES = "button[aria-label='Show password'], button[aria-label='Hide password']";

function skipEyes() {
  for (const b of document.querySelectorAll(EYES)) {
    if (b.getAttribute("tabindex") !== "-1") b.setAttribute("tabindex", "-1");
  }
}

export default function () {
  skipEyes();
  if (!window.__qaevalEyeWatch) {
    window.__qaevalEyeWatch = new MutationObserver(skipEyes);
    window.__qaevalEyeWatch.observe(document.body, {
      subtree: true, childList: true, attributes: true, attributeFilter: ["aria-label"],
    });
  }
}
"""

_COMPONENT = st.components.v2.component(
    "qaeval_password_tab", html="", css=":host { display: none; }", js=_JS
)


def skip_show_password_buttons(key: str = "password_tab") -> None:
    """Take the page's "show password" buttons out of the Tab order (call once per page that
    has a password field)."""
    _COMPONENT(key=key)
