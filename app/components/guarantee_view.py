"""The Calibrate view's triage guarantee, in words (issue 24, item 3).

A guaranteed band (``qaeval calibrate --guarantee``, :mod:`qaeval_core.calibrate.guarantee`)
is stated as the promise it is ("With 90% confidence, the judge is right on at least 95% of
the items it decides alone ..."); when the labels support none, the page says so and how many
more labels would, instead of a bare error. Moving the band along the effort curve keeps a
band but not its guarantee (it was tested for one band only), and the page says that too.
The texts come from the library; this module only places them.

Issue 33: a refused guarantee is one message (not supported, why, how many more labels, what
changed since the last fit), never a progress box frozen at its step next to an unrelated
"More labels needed"; and a few more labels flipping the answer is explained.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from app.components import safe_text
from qaeval_core.calibrate.guarantee import GuaranteeFit
from qaeval_core.judge import Judge
from qaeval_core.judge.file_summary import JudgeSummary
from qaeval_core.judge.guarantee import Guarantee, percent

__all__ = [
    "change_note",
    "closest_band",
    "guarantee_section",
    "guarantee_text",
    "outcome",
    "remember_outcome",
    "unsupported_section",
]

#: The last guarantee outcome per dataset (session state), to say what changed since.
_LAST = "calibrate_guarantee_last"


def outcome(result: GuaranteeFit | Guarantee | None) -> dict[str, Any] | None:
    """A fit's guarantee outcome as plain values: labels, target, risk, and the share to
    people with its p-value when supported."""
    if result is None:
        return None
    if isinstance(result, GuaranteeFit):
        if result.guarantee is None:
            return {
                "n_labels": result.n_labels,
                "target": result.target,
                "risk": result.risk,
                "supported": False,
                "routed": None,
                "p_value": None,
            }
        result = result.guarantee
    return {
        "n_labels": result.n_labels,
        "target": result.target,
        "risk": result.risk,
        "supported": True,
        "routed": result.routed,
        "p_value": result.p_value,
    }


def change_note(before: dict[str, Any] | None, now: dict[str, Any] | None) -> str:
    """What changed since the previous fit's guarantee, in words ("" for the first fit)."""
    if before is None or now is None:
        return ""
    asked = f"{percent(now['target'])} at {percent(1 - now['risk'])} confidence"
    if (before["target"], before["risk"]) != (now["target"], now["risk"]):
        return (
            f"The previous fit asked for {percent(before['target'])} at "
            f"{percent(1 - before['risk'])} confidence; this one for {asked}."
        )
    added = now["n_labels"] - before["n_labels"]
    since = f"{added:+d} labels since the previous fit ({before['n_labels']} labels)"
    if before["supported"] == now["supported"]:
        state = "supported" if now["supported"] else "not supported"
        return f"Since the previous fit: {since}; the guarantee is still {state}."
    if now["supported"]:
        return f"Since the previous fit: {since}; the guarantee is now supported."
    return (
        f"Since the previous fit: {since}. It supported {asked} with "
        f"{percent(round(before['routed'], 3))} of items to people (p = {before['p_value']:.3f}, "
        f"under the risk {before['risk']:g}). The test is run again on every fit, on the "
        "refitted judge's out-of-fold verdicts: new labels reorder the items by doubt and add "
        "the judge's errors among them, so a band that passed close to the risk can fail."
    )


def remember_outcome(dataset: str, result: GuaranteeFit | Guarantee | None) -> dict[str, str]:
    """Keep this fit's outcome for ``dataset`` and say what changed since the previous one."""
    last = st.session_state.setdefault(_LAST, {})
    now = outcome(result)
    note = change_note(last.get(dataset), now)
    if now is not None:
        last[dataset] = now
    return {"change": note}


def closest_band(fit: GuaranteeFit) -> str:
    """Why no band: where the walk stopped, in words ("" when the fit has no tests).

    Fixed-sequence testing walks from the largest share routed to people down and stops at
    the first band that fails; bands after it are never tested, however small their p-value
    (that is what keeps the promise), so the first failure is the reason, not the smallest p.
    """
    tests = fit.tests
    needed = {"tested", "rejected", "p_value", "share", "n_right", "n_decided"}
    if not isinstance(tests, pd.DataFrame) or tests.empty or not needed <= set(tests.columns):
        return ""
    failed = tests[tests["tested"].astype(bool) & ~tests["rejected"].astype(bool)]
    if failed.empty:
        return (
            " No band leaves the judge enough labelled items to test: every share it decides "
            "alone has too few labels."
        )
    first = failed.iloc[0]
    return (
        f" The test walks from the most items to people down and stops at the first band that "
        f"fails: with {percent(float(first['share']))} of items to people the judge was right "
        f"on {int(first['n_right'])} of the {int(first['n_decided'])} labelled items it decides "
        f"alone (p = {float(first['p_value']):.3f}, above the risk {fit.risk:g})."
    )


def guarantee_section(fitted: Judge, chosen: Judge, change: str = "") -> None:
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
            f"in the judge config.{ties}" + (f" {change}" if change else "")
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


def unsupported_section(fit: GuaranteeFit, change: str = "") -> None:
    """The labels support no guaranteed band: one message that says so, why (the band that
    came nearest), what would (more labels, a lower target, a larger risk) and what changed
    since the previous fit."""
    st.subheader("Guarantee: not supported")
    text = f"Not supported. {fit.message()}{closest_band(fit)}" + (f" {change}" if change else "")
    st.warning(safe_text.escape_markdown(text), icon=":material/warning:")


def guarantee_text(summary: JudgeSummary) -> str:
    """``"95% at 90% confidence (300 labels)"`` for a saved judge (:func:`judge_summary`);
    "unreadable" for a guarantee that cannot be read, empty without one."""
    if summary.guarantee_unreadable:
        return "unreadable"
    g = summary.guarantee
    if g is None:
        return ""
    return f"{percent(g.target)} at {percent(1 - g.risk)} confidence ({g.n_labels} labels)"
