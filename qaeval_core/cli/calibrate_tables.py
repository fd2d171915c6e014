"""How ``qaeval calibrate`` prints what it fitted: quality, input costs, effort curve, cascade.

Kept apart from :mod:`qaeval_core.cli.calibrate` so the command reads as what it does (check
options, fit, save) and these tables as what a researcher sees.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from qaeval_core.cli.common import console


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def print_effort(curve, band) -> None:  # type: ignore[no-untyped-def]
    """The accuracy-vs-human-effort table (shares 0-50% in steps of 5%) and the chosen band."""
    table = Table(title="Human effort: people decide the most doubtful share (cross-validated, %)")
    for col in ("share to people", "combined accuracy", "95% CI", "random share", "judge kept"):
        table.add_column(col)
    for row in curve.itertuples(index=False):
        if round(row.share * 100) % 5 or row.share > 0.5:
            continue
        table.add_row(
            f"{row.share:.0%}",
            pct(row.combined_accuracy),
            f"{pct(row.combined_lo)}-{pct(row.combined_hi)}",
            pct(row.random_accuracy),
            pct(row.confident_accuracy),
        )
    console.print(table)
    if band is not None and band.share > 0:
        console.print(
            f"Triage band: about {band.share:.0%} of items come out 'uncertain' (doubt >= "
            f"{band.threshold:.3f}); combined accuracy {pct(band.cv_accuracy_combined)}%, "
            f"the judge alone on the rest {pct(band.cv_accuracy_confident)}%.",
            markup=False,
        )


def _when(costs) -> str:  # type: ignore[no-untyped-def]
    """When the cached families were measured (one date, or the range)."""
    times = sorted({str(v.get("measured_at", "")) for v in costs.cached.values()} - {""})
    if not times:
        return "earlier"
    return times[0] if len(times) == 1 else f"{times[0]} to {times[-1]}"


def print_costs(report) -> None:  # type: ignore[no-untyped-def]
    """Each input family's measured cost, and every input set the selection evaluated."""
    costs, selection = report.costs, report.inputs
    if costs is None:
        return
    where = (
        f"{costs.rows} rows measured"
        if not costs.cached
        else f"{costs.source}: cached families measured {_when(costs)}"
    )
    table = Table(title=f"Input cost, seconds per 1,000 rows ({where})")
    for col in ("family", "inputs", "s / 1,000 rows", "cold load s"):
        table.add_column(col)
    loads: dict[str, float] = {}
    for c in costs.inputs:
        loads[c.family] = loads.get(c.family, 0.0) + c.load_s
    for fam, cols in costs.families().items():
        table.add_row(fam, ", ".join(cols), f"{costs.family_costs()[fam]:.3f}", f"{loads[fam]:.1f}")
    console.print(table)
    if selection is None:
        print_speed(costs, costs.columns())
        return
    sets = Table(title="Input sets compared (cross-validated accuracy %, cost per 1,000 rows)")
    for col in ("families", "s / 1,000 rows", "CV accuracy", ""):
        sets.add_column(col)
    for row in selection.evaluated.itertuples(index=False):
        mark = "chosen" if row.chosen else ("frontier" if row.frontier else "")
        sets.add_row(", ".join(row.families), f"{row.cost:.3f}", pct(row.cv_accuracy), mark)
    console.print(sets)
    console.print(
        f"Inputs: {', '.join(selection.families)} ({selection.cost:.3f} s per 1,000 rows), "
        f"CV accuracy {pct(selection.cv_accuracy)}% vs best {pct(selection.best_cv_accuracy)}% "
        f"(tolerance {100 * selection.max_accuracy_loss:.1f} points). "
        "`--inputs all` uses every input.",
        markup=False,
    )
    print_speed(costs, [c.column for c in costs.inputs if c.family in selection.families])


#: The families whose cost is PEDANTS' class of work: token overlap (``lexical``) and the
#: PANDA/PEDANTS classifier on overlap features (``panda``).
PEDANTS_CLASS = ("lexical", "panda")


def print_speed(costs, columns) -> None:  # type: ignore[no-untyped-def]
    """The judge's predicted seconds per 1,000 rows on this machine beside PEDANTS' class of
    input (what a judge is slower than, and by how much)."""
    judge = costs.cost_of(columns)
    fams = costs.family_costs()
    here = {f: fams[f] for f in PEDANTS_CLASS if f in fams}
    if not here:
        return
    ref = sum(here.values())
    parts = " + ".join(f"{f} {v:.3f}" for f, v in here.items())
    ratio = f", {judge / ref:.1f}x that" if ref > 0 else ""
    console.print(
        f"Predicted judge speed here: {judge:.3f} s per 1,000 rows for its inputs (+ "
        f"{costs.load_of(columns):.1f} s to load them once); PEDANTS-class lexical inputs "
        f"({parts}) {ref:.3f} s{ratio}.",
        markup=False,
    )


def print_quality(report: Any) -> None:
    """The candidates' cross-validated quality, and the uncalibrated metrics beside them."""
    table = Table(title=f"Cross-validated quality on {report.n_labels} labels (%)")
    for col in ("judge", "accuracy", "95% CI", "balanced acc.", "F1"):
        table.add_column(col)
    for row in report.candidates.itertuples(index=False):
        mark = " (winner)" if row.candidate == report.winner else ""
        table.add_row(
            f"{row.candidate}{mark}",
            pct(row.accuracy),
            f"{pct(row.accuracy_lo)}-{pct(row.accuracy_hi)}",
            pct(row.balanced_accuracy),
            pct(row.f1),
        )
    console.print(table)
    if len(report.baselines):
        base = Table(title="Uncalibrated metrics at their default thresholds, same labels (%)")
        for col in ("metric", "accuracy", "95% CI", "balanced acc."):
            base.add_column(col)
        for row in report.baselines.sort_values("accuracy", ascending=False).itertuples():
            base.add_row(
                row.metric,
                pct(row.accuracy),
                f"{pct(row.accuracy_lo)}-{pct(row.accuracy_hi)}",
                pct(row.balanced_accuracy),
            )
        console.print(base)


def print_cascade(tier: Any) -> None:
    """The LLM tier's curve: accuracy per LLM share and share to people, and its cost."""
    table = Table(
        title="Cascade (cross-validated accuracy %, seconds per 1,000 rows)",
        caption="* the LLM share kept",
    )
    humans = sorted({row["human_share"] for row in tier.curve})
    table.add_column("LLM share")
    for h in humans:
        table.add_column(f"{h:.0%} to people")
    table.add_column("s / 1,000 rows")
    for share in sorted({row["llm_share"] for row in tier.curve}):
        rows = {r["human_share"]: r for r in tier.curve if r["llm_share"] == share}
        mark = " *" if share == tier.llm_share else ""
        table.add_row(
            f"{share:.0%}{mark}",
            *[pct(rows[h]["cv_accuracy"]) for h in humans],
            f"{rows[humans[0]]['s_per_1000']:.0f}",
        )
    console.print(table)


def print_knowledge(judge, offered: bool) -> None:  # type: ignore[no-untyped-def]
    """What ``--with-knowledge`` gave the judge: the snapshot it keeps, or that it reads none."""
    if not offered:
        return
    if judge.knowledge is None:
        console.print(
            "Taught answers: offered, but the chosen combiner reads neither similarity input; "
            "the judge keeps no knowledge.",
            markup=False,
        )
        return
    n_alias, n_wrong, n_questions = judge.knowledge.counts()
    console.print(
        f"Taught answers: the judge reads {', '.join(judge.knowledge.columns)} and keeps "
        f"{n_alias} accepted alias(es) and {n_wrong} known wrong answer(s) on {n_questions} "
        f"question(s) (knowledge version {judge.knowledge.knowledge_version}); each "
        "calibration row was compared without its own label.",
        markup=False,
    )
