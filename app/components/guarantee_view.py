"""The Calibrate view's triage guarantee, in words (issue 24, item 3).

A guaranteed band (``qaeval calibrate --guarantee``, :mod:`qaeval_core.calibrate.guarantee`)
is stated as the promise it is ("With 90% confidence, the judge is right on at least 95% of
the items it decides alone ..."); when the labels support none, the page says so and how many
more labels would, instead of a bare error. Moving the band along the effort curve keeps a
band but not its guarantee (it was tested for one band only), and the page says that too.
The texts come from the library; this module only places them.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from app.components import safe_text
from qaeval_core.calibrate.guarantee import GuaranteeFit
from qaeval_core.judge import Judge
from qaeval_core.judge.guarantee import percent

__all__ = ["guarantee_section", "guarantee_text", "unsupported_section"]


def guarantee_section(fitted: Judge, chosen: Judge) -> None:
    """The fitted judge's guarantee in words, and whether the band to be saved keeps it."""
    if fitted.guarantee is None:
        return
    st.subheader("Guarantee")
    if chosen.guarantee is not None:
        st.success(
            safe_text.escape_markdown(chosen.guarantee.statement()), icon=":material/verified:"
        )
        g = chosen.guarantee
        counted = (
            f"; answers to one question go together, so they count as "
            f"{g.n_decided / g.design_effect:.0f} independent labels"
            if g.design_effect > 1.005
            else ""
        )
        ties = (
            f" The band's nominal share is {percent(g.share)}; items whose doubt equals the "
            f"threshold go to people too, so {percent(round(g.routed, 3))} of the labels did."
            if abs(g.routed - g.share) > 0.01
            else ""
        )
        st.caption(
            f"Fixed-sequence testing on the calibration labels (exact binomial test; "
            f"{g.n_right} of the {g.n_decided} labelled items the judge decides alone are "
            f"right{counted}). It holds for new items like the labelled ones. Saving keeps it "
            f"in the judge config.{ties}"
        )
        return
    st.warning(
        safe_text.escape_markdown(
            f"The guarantee holds for the fitted band ({percent(fitted.guarantee.share)} of "
            "items to people) only; the band now chosen on the curve above has none. Move the "
            "slider back to keep it."
        ),
        icon=":material/warning:",
    )


def unsupported_section(fit: GuaranteeFit) -> None:
    """The labels support no guaranteed band: say so and what would (more labels, a lower
    target, a larger risk)."""
    st.subheader("Guarantee")
    st.warning(safe_text.escape_markdown(fit.message()), icon=":material/warning:")
    if fit.more_labels is not None:
        st.metric("More labels needed (estimate)", fit.more_labels)


def guarantee_text(config: dict[str, Any]) -> str:
    """``"95% at 90% confidence (300 labels)"`` for a saved judge config; empty without."""
    g = config.get("guarantee")
    if not isinstance(g, dict):
        return ""
    try:
        return (
            f"{percent(float(g['target']))} at {percent(1 - float(g['risk']))} confidence "
            f"({int(g['n_labels'])} labels)"
        )
    except (KeyError, TypeError, ValueError):
        return "unreadable"
