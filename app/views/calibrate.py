"""Calibrate (researchers): fit a judge to a dataset's human labels, see how good it will be,
save it, and steer labelling to where it helps the calibration most.

The fitting is :func:`qaeval_core.workflows.calibrate_dataset` (what ``qaeval calibrate``
runs); the numbers shown next to it come from :mod:`qaeval_core.calibrate.summary`, the queue
ordering from :func:`qaeval_core.workflows.reorder_queue` and the label budget from
:mod:`qaeval_core.calibrate.active`. An LLM tier (cheap judge -> LLM -> people) is opt-in and
added by :func:`qaeval_core.workflows.cascade.fit_llm_tier` (:mod:`app.components.llm_tier`).
A fit takes seconds to minutes, so its result is kept in ``st.session_state`` and survives
reruns until the next fit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth, llm_tier, safe_text
from app.components import calibrate_charts as charts
from app.components.cost_frontier import cost_section
from app.components.effort_curve import effort_section
from app.components.guarantee_view import (
    guarantee_section,
    guarantee_text,
    remember_outcome,
    unsupported_section,
)
from app.components.triage_widgets import band_text, cell
from qaeval_core import analysis, store, workflows
from qaeval_core.calibrate import active, summary
from qaeval_core.calibrate.fit import CANDIDATES
from qaeval_core.calibrate.guarantee import GuaranteeNotSupported
from qaeval_core.calibrate.inputs import DEFAULT_METRICS, DEFAULT_PROFILE, FEATURE_ONLY
from qaeval_core.calibrate.options import (
    DEFAULT_CANDIDATES,
    CostPolicy,
    CrossValidation,
    LLMTierPolicy,
    TriagePolicy,
)
from qaeval_core.calibrate.progress import CalibrationProgress, Steps
from qaeval_core.errors import QAEvalError
from qaeval_core.judge import Judge
from qaeval_core.judge.file_summary import JudgeSummary, judge_summary
from qaeval_core.metrics.base import Metric, get_metric
from qaeval_core.vocabulary import FAST_METRICS
from qaeval_core.workflows import DatasetCalibration, calibrate_dataset, score_dataset
from qaeval_core.workflows.answer_knowledge import knowledge_counts
from qaeval_core.workflows.calibration import calibration_steps

_RESULT = "calibrate_result"
#: The last fit's guarantee that the labels could not support (shown instead of results).
_UNSUPPORTED = "calibrate_unsupported"
#: What changed in the guarantee since the fit before the last one (words; "" for none).
_CHANGE = "calibrate_guarantee_change"
#: How the fit chooses the triage band (the form's radio -> which TriagePolicy field it sets).
BAND_CHOICES = {
    "a share of the items": "share",
    "enough for a target accuracy": "target",
    "a guaranteed accuracy": "guarantee",
}


@dataclass
class FitRun:
    """One fit as the page shows it (kept in session state as a dict of these fields)."""

    dataset: str
    fit: DatasetCalibration
    quality: pd.DataFrame
    curves: pd.DataFrame
    #: The LLM tier's chance warning, or why the tier could not be fitted (None: neither).
    llm_warning: str | None = None
    llm_error: str | None = None


def _used_with(control: str, band_by: str) -> str:
    """Which "Leave to people" choices read ``control``, and whether the current one does."""
    uses = {"share": ("share",), "target": ("target", "guarantee"), "risk": ("guarantee",)}
    names = [k for k, v in BAND_CHOICES.items() if v in uses[control]]
    now = "" if BAND_CHOICES[band_by] in uses[control] else f" Ignored now ('{band_by}')."
    return f"Used when leaving to people {' or '.join(repr(n) for n in names)}.{now}"


def _metrics(columns: list[str]) -> list[Metric] | None:
    """The chosen default columns as metrics (None: the library's whole default set)."""
    if set(columns) == {c for c, _, _ in DEFAULT_METRICS}:
        return None
    return [get_metric(mid, **params) for col, mid, params in DEFAULT_METRICS if col in columns]


def _fit_form(url: str, dataset: str) -> None:
    defaults = [c for c, _, _ in DEFAULT_METRICS]
    n_taught, n_taught_questions = knowledge_counts(url, dataset)
    # Not an st.form: a choice must rerun the page so the controls it ignores are disabled with
    # the reason (issue 33); the fit still starts only on "Fit".
    with st.container(border=True):
        chosen = st.multiselect(
            "Metrics",
            defaults,
            default=defaults,
            key="calibrate_metrics",
            help="Default: the library's calibration set. The neural ones (embed_cosine, "
            "bertscore, smile, avert, extract_f1) take minutes per thousand items on a CPU; "
            "scores are stored and reused.",
        )
        c1, c2, c3, c4 = st.columns(4)
        max_labels = c1.number_input(
            "Max. labels (0 = all)",
            0,
            1_000_000,
            0,
            key="calibrate_max_labels",
            help="Fit on at most this many labelled items, drawn by question with the seed.",
        )
        seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="calibrate_seed")
        folds = c3.number_input("CV folds", 2, 20, 5, key="calibrate_folds")
        n_boot = c4.number_input(
            "Bootstrap resamples", 100, 10_000, 1000, 100, key="calibrate_boot"
        )
        candidates = st.multiselect(
            "Combiners compared",
            list(CANDIDATES),
            default=list(DEFAULT_CANDIDATES),
            key="calibrate_candidates",
            help="The first wins unless another is better by more than one CV point.",
        )
        b1, b2, b3, b4 = st.columns(4)
        band_by = b1.radio(
            "Leave to people",
            list(BAND_CHOICES),
            key="calibrate_band_by",
            help="The triage band: items the judge doubts most come out 'uncertain' and go to "
            "people. Choose their share, or the smallest share whose cross-validated combined "
            "accuracy reaches a target, or the widest band on which the judge alone is right "
            "at least the target accuracy with 1 - risk confidence (a guarantee tested on "
            "the labels).",
        )
        how = BAND_CHOICES[band_by]
        share = b2.slider(
            "Human share (%)",
            0,
            50,
            10,
            key="calibrate_share",
            disabled=how != "share",
            help=_used_with("share", band_by),
        )
        target = b3.number_input(
            "Target accuracy",
            0.5,
            1.0,
            0.9,
            0.01,
            "%.3f",
            key="calibrate_target",
            disabled=how == "share",
            help=_used_with("target", band_by),
        )
        risk = b4.number_input(
            "Risk (guarantee)",
            0.01,
            0.5,
            0.1,
            0.01,
            "%.2f",
            key="calibrate_risk",
            disabled=how != "guarantee",
            help="The chance allowed that the guarantee fails: 0.1 "
            "is 90% confidence. " + _used_with("risk", band_by),
        )
        i1, i2 = st.columns(2)
        inputs = i1.radio(
            "Inputs",
            ["cheap", "all"],
            horizontal=True,
            key="calibrate_inputs",
            help="cheap: measure what each input costs on this machine and keep the cheapest "
            "input families within 0.3 points of the best cross-validated accuracy; all: every "
            "chosen metric, no cost measured.",
        )
        max_cost = i2.number_input(
            "Max. cost, s per 1,000 rows (0 = no cap)", 0.0, 1e6, 0.0, key="calibrate_max_cost"
        )
        t1, t2, t3 = st.columns(3)
        robust = t1.toggle(
            "Read answers as a person does",
            key="calibrate_robust",
            value=DEFAULT_PROFILE == "robust",
            help="The robust profile: every input that reads the answer's wording ignores "
            "markdown, HTML, citation markers, footnote digits, glued words and number or date "
            "formats (the answer-shape inputs keep numbers as written, which keeps accuracy). "
            "Scoring with the saved judge reads answers the same way. Off: each "
            "metric's own reading (SQuAD's steps, punctuation read as a space).",
        )
        curves = t2.toggle("Learning curves", value=True, key="calibrate_curves")
        taught = t3.checkbox(
            f"Use taught answers ({n_taught} accepted answer(s) on {n_taught_questions} "
            "question(s))",
            key="calibrate_knowledge",
            disabled=not n_taught,
            help="Also read each answer's similarity to its question's accepted aliases and "
            "known wrong answers (Taught answers page), computed without the row's own label. "
            "The saved judge keeps a snapshot of them. None accepted yet: nothing to use.",
        )
        use_llm, llm_fields = llm_tier.llm_controls(url)
        submitted = st.button("Fit", type="primary", key="calibrate_fit")
    if not submitted:
        return
    metrics = _metrics(chosen)
    normalize = "robust" if robust else "spaced"
    band = {
        "share": {"human_share": share / 100},
        "target": {"target_accuracy": float(target)},
        "guarantee": {"guarantee": float(target), "risk": float(risk)},
    }[BAND_CHOICES[band_by]]
    try:  # the form's values, checked by the library's option objects before any work
        cv = CrossValidation(n_splits=int(folds), seed=int(seed), n_boot=int(n_boot))
        triage = TriagePolicy(**band)
        cost_policy = CostPolicy(inputs=inputs, max_cost=float(max_cost) or None)
        llm = LLMTierPolicy(**llm_fields) if use_llm else None
        if llm is not None:
            llm.check_triage(triage)
    except QAEvalError as exc:
        st.error(str(exc), icon=":material/error:")
        return
    hint = None if llm is None else llm_tier.install_hint(llm.llm, llm.llm_url)
    if hint is not None:  # before minutes of fitting, not after
        st.error(hint, icon=":material/error:")
        return
    names = [*calibration_steps(measures_costs=cost_policy.measures_costs)]
    names += [LLM_STEP] if llm is not None else []
    names += [QUALITY_STEP]
    names += [CURVES_STEP] if curves else []
    progress_box = st.empty()  # emptied when the guarantee is refused: one message, not a
    try:  # progress box frozen at its step (issue 33)
        with progress_box.container(), st.status("Fitting ...", expanded=True) as status:
            shown = FitProgress(status)
            steps = Steps(shown, names)
            fit = calibrate_dataset(
                url,
                dataset,
                metrics=metrics,
                max_labels=int(max_labels) or None,
                candidates=candidates,
                name=f"{dataset}-judge",
                normalize=normalize,
                knowledge=bool(taught and n_taught),
                cv=cv,
                triage=triage,
                cost_policy=cost_policy,
                progress=steps.relay,
            )
            tier = llm_tier.TierOutcome()
            if llm is not None:
                steps.start(
                    LLM_STEP, f"The LLM reads the {len(fit.used_item_ids)} labelled items used ..."
                )
                tier = llm_tier.run_llm_tier(url, dataset, fit, llm, say=steps.advance)
            steps.start(QUALITY_STEP, "Bootstrapping the quality of every judge ...")
            metric_ids = None if metrics is None else [m.id for m in metrics]
            data = workflows.labelled_data(
                url, dataset, fit.used_item_ids, metrics=metric_ids, normalize=normalize
            )
            quality = summary.quality_table(fit, data, n_boot=int(n_boot))
            curve = pd.DataFrame()
            if curves:
                steps.start(CURVES_STEP, "Fitting on growing shares of the labels ...")
                curve = summary.learning_curves(
                    data,
                    candidates=list(dict.fromkeys([fit.report.winner, "threshold"])),
                    seeds=(0, 1),
                    n_boot=300,
                    columns=charts.curve_columns(fit),
                )
            shown.finish(f"Fitted on {fit.report.n_labels} labels{_tier_note(fit, tier)}.")
    except GuaranteeNotSupported as exc:  # stated in words below, with the labels needed
        progress_box.empty()
        st.session_state.pop(_RESULT, None)
        outcome = remember_outcome(dataset, exc.fit)
        st.session_state[_UNSUPPORTED] = {"dataset": dataset, "fit": exc.fit, **outcome}
        return
    except (QAEvalError, ValueError) as exc:
        st.error(str(exc), icon=":material/error:")
        return
    # A plain dict: Streamlit re-executes this file as __main__ on every run, so an instance of
    # the previous run's FitRun class would fail isinstance checks on the next one.
    st.session_state.pop(_UNSUPPORTED, None)
    if triage.guarantee is not None:
        st.session_state[_CHANGE] = remember_outcome(dataset, fit.judge.guarantee)["change"]
    st.session_state[_RESULT] = {
        "dataset": dataset,
        "fit": fit,
        "quality": quality,
        "curves": curve,
        "llm_warning": tier.chance_warning,
        "llm_error": tier.error,
    }


def _tier_note(fit: DatasetCalibration, tier: llm_tier.TierOutcome) -> str:
    """The status line's word on the LLM tier (nothing when none was asked for)."""
    if tier.error:
        return "; the LLM tier failed (see below)"
    cascade = fit.judge.cascade
    if cascade is None:
        return ""
    auc = "" if cascade.llm_auc is None else f", LLM ROC AUC {cascade.llm_auc:.3f}"
    return f" with an LLM tier{auc}"


#: The page's own steps after the workflow's (:func:`calibration_steps`).
LLM_STEP = "LLM tier"
QUALITY_STEP = "Bootstrapping quality"
CURVES_STEP = "Learning curves"


class FitProgress:
    """Draws a fit's progress (issue 21, item 8: the default fit took minutes behind a
    collapsed "Fitting..."): the status box's label says the step ("Step 3 of 8: Measuring
    input costs"), a line is written as each step starts, and a bar shows the share done
    with what is happening now. Names of inputs and datasets are escaped (plain text)."""

    def __init__(self, status: Any) -> None:
        self.status = status
        self.bar = st.progress(0.0, text="Starting ...")
        self.step: str | None = None

    def __call__(self, p: CalibrationProgress) -> None:
        label = f"Step {p.index} of {p.steps}: {p.step}"
        if p.step != self.step:
            self.step = p.step
            # expanded again: an update without it collapses the box (Streamlit clears it)
            self.status.update(label=label, expanded=True)
            self.status.write(safe_text.escape_markdown(label))
        self.bar.progress(p.fraction, text=safe_text.escape_markdown(p.message))

    def finish(self, label: str) -> None:
        """Every step done: a full bar, and the box says so (collapsed, its lines kept)."""
        self.bar.progress(1.0, text="Done.")
        self.status.update(label=label, state="complete", expanded=False)


def _knowledge_text(judge: Judge) -> str:
    """What the taught answers gave the judge, in words ("" when it was fitted without)."""
    offered = judge.fitted_on.get("knowledge_inputs")
    if offered is None:
        return ""
    if judge.knowledge is None:
        return " Taught answers were offered, but the winner reads neither similarity input."
    n_alias, n_wrong, n_questions = judge.knowledge.counts()
    return (
        f" The judge also reads the taught answers: {n_alias} accepted alias(es) and {n_wrong} "
        f"known wrong answer(s) on {n_questions} question(s), each labelled row compared "
        "without its own label (learning curves leave them out)."
    )


def _results(url: str, user: auth.SessionUser, run: FitRun) -> None:
    report = run.fit.report
    st.subheader("Cross-validated quality")
    win = report.candidates.set_index("candidate").loc[report.winner]
    m = st.columns(4)
    m[0].metric("Winner", report.winner)
    m[1].metric("Labels used", report.n_labels)
    m[2].metric("Held back unseen", len(run.fit.unseen_item_ids))
    m[3].metric("CV accuracy", aui.fmt(win["accuracy"]))
    st.caption(
        f"{report.n_splits}-fold cross-validation grouped by question; 95% bootstrap CIs over "
        "questions. Calibrated judges are scored out of fold; uncalibrated metrics at their "
        "shipped thresholds on the same labels."
        + (
            " Every input that normalises read the answers as a person does (robust profile)."
            if run.fit.judge.fitted_on.get("normalize") == "robust"
            else ""
        )
        + _knowledge_text(run.fit.judge)
    )
    st.dataframe(charts.quality_wide(run.quality), hide_index=True, key="calibrate_quality")
    st.plotly_chart(charts.quality_chart(run.quality), key="calibrate_quality_chart")
    if not run.curves.empty:
        st.subheader("Learning curves")
        st.plotly_chart(charts.curve_chart(run.curves), key="calibrate_curves_chart")
        st.caption(
            f"Calibrated judges read {charts.curve_inputs_text(run.fit)}; fitted on N labels drawn "
            "by question, measured on all other labelled items (mean of two draws; band: mean "
            "95% CI)."
        )

    cost_section(run.fit.judge.cost, key="calibrate_cost")

    n_items = sum(d.n_items for d in store.list_datasets(url) if d.name == run.dataset)
    if run.llm_error:
        st.error(
            "The LLM tier could not be fitted; the judge below has none: "
            + safe_text.escape_markdown(run.llm_error),
            icon=":material/error:",
        )
    if run.fit.judge.cascade is not None:
        st.caption(
            "With an LLM tier, people get what the whole cascade still doubts: choose their "
            "share on the cascade's curve below (the cheap judge's own effort curve is not used)."
        )
        judge = llm_tier.cascade_section(
            run.fit.judge,
            key="calibrate_cascade",
            n_items=n_items,
            chance_warning=run.llm_warning,
        )
    else:
        judge = effort_section(
            run.fit.judge, report.effort_curve, key="calibrate_band", n_items=n_items
        )
        guarantee_section(run.fit.judge, judge, change=st.session_state.get(_CHANGE, ""))

    st.subheader("Save")
    with st.form("calibrate_save"):
        c1, c2 = st.columns([3, 1])
        name = c1.text_input("Calibration name", f"{run.dataset}-judge", key="calibrate_name")
        overwrite = c2.checkbox("Replace existing", key="calibrate_overwrite")
        saved = st.form_submit_button("Save calibration", key="calibrate_save_submit")
    name = name.strip() or f"{run.dataset}-judge"
    config = _named_config(judge, name)
    if saved:
        try:
            info = store.save_calibration(
                url, name, config, dataset=run.dataset, created_by=user.name, overwrite=overwrite
            )
            st.success(f"Saved calibration {info.name!r}.")
        except QAEvalError as exc:
            safe_text.show_error(exc)
    st.download_button(
        "Download judge config (JSON)",
        json.dumps(config, indent=2, ensure_ascii=False),
        file_name=f"{name}.json",
        mime="application/json",
        key="calibrate_download",
        icon=":material/download:",
    )


def _named_config(judge: Judge, name: str) -> dict[str, Any]:
    """The judge's config under ``name`` (re-read and re-written, so its checksum matches)."""
    named = Judge.from_config(judge.to_config())
    named.name = name
    return named.to_config()


def _saved(url: str) -> None:
    st.subheader("Saved calibrations")
    saved = store.list_calibrations(url)
    if not saved:
        st.info("None saved yet.")
        return
    rows = []
    for c in saved:
        summary = judge_summary(c.config)
        rows.append(
            {
                "name": c.name,
                "dataset": c.dataset,
                "by": c.created_by,
                "created": c.created_at,
                "judge": summary.combiner,
                "labels": cell(summary.n_labels),
                "cv accuracy": cell(summary.cv_accuracy),
                "triage band": band_text(summary),
                "guarantee": guarantee_text(summary),
                "LLM tier": _tier_text(summary),
            }
        )
    table = pd.DataFrame(rows)
    for column in ("dataset", "by", "judge"):
        table[column] = table[column].map(cell)
    st.dataframe(table, hide_index=True, key="calibrate_saved")


def _tier_text(summary: JudgeSummary) -> str:
    """``"20% to qwen-coder-1.5b"`` for a judge with an LLM tier; empty without."""
    tier = summary.llm_tier
    if tier is None:
        return ""
    return f"{tier.share:.0%} to {tier.model or 'an LLM'}"


def _active(url: str, dataset: str, run: FitRun | None) -> None:
    st.subheader("Label where it helps most")
    frames = aui.load_frames(url, dataset)
    scored = [m for m in frames.metric_ids if m not in FEATURE_ONLY]
    if len(scored) < 2:
        st.info(
            f"Ordering the queue needs stored scores of two or more metrics (found: "
            f"{', '.join(scored) or 'none'}). Score the dataset from a shell, or here with fast "
            f"CPU metrics ({', '.join(FAST_METRICS)})."
        )
        st.code(
            f"qaeval score --dataset {dataset} --metrics {','.join(FAST_METRICS)}",
            language="bash",
        )
        if st.button("Score with fast CPU metrics", key="calibrate_score_fast"):
            with st.spinner("Scoring..."):
                score_dataset(url, dataset, list(FAST_METRICS))
            st.rerun()
    else:
        people = ["(everybody)"] + [n for n, _ in store.queue_users(url)]
        c1, c2 = st.columns([2, 1])
        who = c1.selectbox("Queue of", people, key="calibrate_queue_user")
        if c2.button("Order queue by metric disagreement", key="calibrate_reorder"):
            try:
                res = workflows.reorder_queue(url, dataset, None if who == people[0] else who)
            except QAEvalError as exc:
                safe_text.show_error(exc)
            else:
                per = ", ".join(f"{n}: {k}" for n, k in res.per_user.items()) or "none"
                st.success(
                    f"Re-ordered {res.reordered} unlabelled assignment(s) by disagreement of "
                    f"{', '.join(res.metrics)} (per annotator: {per})."
                )
        st.caption(
            "Items where the metrics' votes split (and scores sit near their thresholds) come "
            "first; items somebody already labelled come after never-labelled ones. Only "
            "unlabelled assignments move."
        )
    _labels_needed(frames, run)


def _labels_needed(frames: analysis.Frames, run: FitRun | None) -> None:
    safe_text.section("How many more labels?")
    if run is not None:
        win = run.fit.report.candidates.set_index("candidate").loc[run.fit.report.winner]
        p, n = float(win["accuracy"]), int(run.fit.report.n_labels)
        measured = float(win["accuracy_hi"] - win["accuracy_lo"])
    else:
        p, n, measured = 0.8, int(frames.labels["item_id"].nunique()), 0.0  # type: ignore[attr-defined]
    c1, c2, c3, c4 = st.columns(4)
    # Keys carry the defaults, so a new fit (new estimate) resets the two inputs to its values.
    p = c1.number_input(
        "Accuracy estimate",
        0.0,
        1.0,
        round(p, 3),
        0.01,
        "%.3f",
        key=f"calibrate_p_{p:.4f}",
        help="The fitted judge's CV accuracy after a fit; a guess before one.",
    )
    n = c2.number_input("Labels so far", 0, 10_000_000, n, key=f"calibrate_n_{n}")
    width = c3.number_input("Target CI width", 0.005, 1.0, 0.1, 0.01, key="calibrate_width")
    conf = c4.selectbox("Confidence", [0.9, 0.95, 0.99], index=1, key="calibrate_conf")
    deff = active.design_effect_from_width(p, int(n), measured)
    more = active.labels_needed_for_ci(p, int(n), float(width), float(conf), design_effect=deff)
    st.metric("More labels for this interval width", more)
    st.caption(
        f"Wilson interval for a proportion of {p:.3f}"
        + (
            f", inflated by the design effect {deff:.2f} that the fit's grouped bootstrap CI "
            "showed (answers to one question are correlated)"
            if deff > 1
            else ""
        )
        + ". An estimate: the accuracy moves as labels come in."
    )


def main() -> None:
    user = auth.page_setup(
        "Calibrate",
        auth.RESEARCHERS,
        caption="Fit the automatic judges to the human labels, measure them honestly, export.",
    )
    url = auth.store_url()
    dataset = aui.dataset_picker(url, key="calibrate_dataset")
    assert dataset is not None
    _fit_form(url, dataset)
    kept = st.session_state.get(_RESULT)
    run = FitRun(**kept) if isinstance(kept, dict) and kept["dataset"] == dataset else None
    if run is not None:
        _results(url, user, run)
    unsupported = st.session_state.get(_UNSUPPORTED)
    if run is None and isinstance(unsupported, dict) and unsupported["dataset"] == dataset:
        unsupported_section(unsupported["fit"], change=unsupported.get("change", ""))
    _saved(url)
    _active(url, dataset, run)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
