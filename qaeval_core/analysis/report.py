"""The analysis of one dataset as numbers (JSON) and as a self-contained HTML page (plotly).

``qaeval report`` and CI call :func:`build_report` with plain frames (items, labels,
adjudications, scores), so this module never touches the store; the page embeds plotly.js once
and works offline. Every string that comes from data (model names, raters, questions, answers)
is HTML-escaped before it reaches the page or a chart label.

Why the library is embedded compressed (issue 21, item 10): plotly.js is 4.8 MB of the 5 MB
page. It is embedded once, gzip-compressed and base64-encoded (1.9 MB), and unpacked by the
browser's own ``DecompressionStream`` (no network, no other library); the charts are JSON
blocks drawn once it is loaded, sharing one copy of the chart template. The demo's report
went from 5.0 MB to 2.0 MB. Tables read as a person reads them: headers in words, counts as
whole numbers ("298", not "298.000"), other numbers with three decimals.

Why it is one module: the numbers and the page are one product (the page shows exactly the
tables the JSON holds), and the page's pieces (cell formatting, the packed library, the
chart blocks and the loader that draws them) only make sense together.

Frames: ``items`` (``item_id`` and optionally ``dataset``, ``qa_model``, ``question``,
``candidate``, ``references``), ``labels`` / ``adjudications`` as in
:mod:`.agreement`, ``scores`` as in :mod:`.compare` (an optional
``details`` column is shown next to the worst disagreements).
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from qaeval_core.analysis.agreement import (
    ScorePolicy,
    aggregate_labels,
    alpha_by_group,
    check_labels,
    label_count_table,
    pairwise_kappa,
    rater_vs_rest,
)
from qaeval_core.analysis.compare import (
    STATISTICS,
    accuracy_deviation,
    join_scores,
    metric_vs_human,
    model_leaderboard,
    ranking_changes,
    worst_disagreements,
)
from qaeval_core.analysis.formatting import header_text
from qaeval_core.errors import QAEvalError
from qaeval_core.jsonable import to_jsonable

__all__ = ["Report", "build_report", "render_html", "write_report", "to_jsonable"]


@dataclass
class Report:
    """The numbers of one analysis (``numbers``, JSON-ready) and the frames behind them."""

    title: str
    numbers: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: Further sections, rendered after the summary: (heading, note, table).
    sections: list[tuple[str, str, pd.DataFrame]] = field(default_factory=list)

    def to_json(self) -> str:
        """Strict JSON (NaN becomes null), stable key order."""
        return json.dumps(to_jsonable(self.numbers), indent=2, allow_nan=False)


def _restrict(frame: pd.DataFrame | None, ids: set[Any]) -> pd.DataFrame | None:
    if frame is None:
        return None
    return frame[frame["item_id"].isin(ids)].reset_index(drop=True)


def build_report(
    items: pd.DataFrame,
    labels: pd.DataFrame,
    adjudications: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    *,
    dataset: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    score_policy: ScorePolicy = "mean",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    worst_limit: int = 20,
) -> Report:
    """Agreement, aggregation and metric-vs-human analysis of one dataset.

    ``dataset`` selects the items of one dataset when ``items`` holds several (an unknown name
    raises, listing the known ones). Every bootstrap uses ``seed``, so the same inputs give the
    same JSON.
    """
    if "item_id" not in items.columns:
        raise QAEvalError("items frame: expected an item_id column.")
    items = items.copy()
    if dataset is not None:
        known = sorted(map(str, items["dataset"].dropna().unique())) if "dataset" in items else []
        if dataset not in known:
            raise QAEvalError(
                f"dataset {dataset!r} is not in the items; known: {', '.join(known) or 'none'}."
            )
        items = items[items["dataset"] == dataset]
    ids = set(items["item_id"])
    labels = check_labels(_restrict(labels, ids))  # type: ignore[arg-type]
    adjudications = _restrict(adjudications, ids)
    scores = _restrict(scores, ids)

    human = aggregate_labels(labels, adjudications, items[["item_id"]], score=score_policy)
    tables: dict[str, pd.DataFrame] = {
        "human": human,
        "label_counts": label_count_table(labels, items),
        "alpha": alpha_by_group(labels, items, n_boot=n_boot, seed=seed, confidence=confidence),
        "kappa": pairwise_kappa(labels),
        "raters": rater_vs_rest(labels),
    }
    judged = human[human["final"].notna()]
    numbers: dict[str, Any] = {
        "dataset": dataset,
        "settings": {
            "n_boot": n_boot,
            "seed": seed,
            "confidence": confidence,
            "score_policy": score_policy,
            "thresholds": dict(thresholds or {}),
        },
        "counts": {
            "items": len(items),
            "labels": len(labels),
            "raters": int(labels["rater"].nunique()),
            "judged_items": len(judged),
            "items_by_label_count": dict(
                zip(
                    tables["label_counts"]["n_labels"],
                    tables["label_counts"]["n_items"],
                    strict=True,
                )
            ),
        },
        "aggregation": {
            "ties": int(human["tie"].sum()),
            "needs_adjudication": int(human["needs_adjudication"].sum()),
            "adjudicated": int(human["adjudicated"].notna().sum()),
            "disagreements": int(human["disagreement"].sum()),
            "human_accuracy": float(judged["human_correct"].astype(bool).mean())
            if len(judged)
            else None,
            "final_distribution": {
                str(k): int(v) for k, v in judged["final"].value_counts().sort_index().items()
            },
        },
        "agreement": tables["alpha"],
        "kappa": tables["kappa"],
        "raters": tables["raters"],
    }
    if scores is not None and len(scores):
        tables["metrics"] = metric_vs_human(
            scores, human, thresholds=thresholds, n_boot=n_boot, seed=seed, confidence=confidence
        )
        tables["joined"] = join_scores(scores, human, items, thresholds=thresholds)
        tables["deviation"] = accuracy_deviation(scores, human, items, thresholds=thresholds)
        if "qa_model" in items.columns:
            tables["leaderboard"] = model_leaderboard(scores, human, items, thresholds=thresholds)
            tables["ranking"] = ranking_changes(tables["leaderboard"])
        worst = [
            worst_disagreements(
                scores, human, items, metric_id=m, thresholds=thresholds, limit=worst_limit
            )
            for m in sorted(scores["metric_id"].unique())
        ]
        tables["worst"] = pd.concat(worst, ignore_index=True) if worst else pd.DataFrame()
        numbers["metrics"] = tables["metrics"]
        numbers["deviation"] = tables["deviation"]
        for key in ("leaderboard", "ranking"):
            if key in tables:
                numbers[key] = tables[key]
        keep = ["metric_id", "item_id", "value", "decision", "final", "confidence"]
        numbers["worst_disagreements"] = tables["worst"].reindex(columns=keep)
    title = f"qaeval analysis: {dataset}" if dataset else "qaeval analysis"
    return Report(title=title, numbers=to_jsonable(numbers), tables=tables)


# -- HTML --------------------------------------------------------------------------------------
def _is_whole(value: Any) -> bool:
    return isinstance(value, int | np.integer) or (
        isinstance(value, float | np.floating)
        and math.isfinite(value)
        and float(value).is_integer()
    )


def _counts_column(values: pd.Series) -> bool:
    """A column of whole numbers only (counts, ranks, labels 0-2): shown without decimals.
    The values decide, not the dtype: pandas makes a count column float when one cell is
    missing, and the summary mixes counts with text. Booleans are not counts."""
    present = [v for v in values if not isinstance(v, list | tuple | np.ndarray)]
    present = [v for v in present if not _is_missing(v)]
    return bool(present) and all(
        _is_whole(v) and not isinstance(v, bool | np.bool_) for v in present
    )


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def _esc(value: Any, *, whole: bool = False) -> str:
    """One cell as escaped text: blank when missing, a whole number without decimals when its
    column holds only whole numbers (``whole``), other numbers with three decimals."""
    if isinstance(value, list | tuple | np.ndarray):
        return html.escape("; ".join(map(str, value)))
    if _is_missing(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if whole and _is_whole(value):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):.3f}"
    return html.escape(str(value))


def _table(frame: pd.DataFrame, columns: list[str] | None = None, max_chars: int = 400) -> str:
    """An HTML table: headers in words (:func:`~.formatting.header_text`), cells escaped."""
    if frame is None or frame.empty:
        return "<p class='empty'>nothing to show</p>"
    columns = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    head = "".join(f"<th>{html.escape(header_text(str(c)))}</th>" for c in columns)
    whole = [_counts_column(frame[c]) for c in columns]
    rows = []
    for record in frame[columns].itertuples(index=False):
        cells = []
        for v, w in zip(record, whole, strict=True):
            text = _esc(v, whole=w)
            if len(text) > max_chars:
                text = text[:max_chars] + "&hellip;"
            cells.append(f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _labels(values: Any) -> list[str]:
    """Category names for plotly, escaped: plotly.js reads a few tags in labels."""
    return [html.escape(str(v)) for v in values]


def _script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` are escaped as
    ``\\u003c`` etc., so no data string can close the element or open another."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


#: Chart layout every figure shares (the template goes once to the page, see the module
#: docstring).
_MARGIN = {"l": 60, "r": 20, "t": 50, "b": 60}


def _figure_spec(fig: go.Figure) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figure as plotly.js reads it, without its template; and the template."""
    fig.update_layout(template="plotly_white", margin=_MARGIN, height=420)
    spec = json.loads(fig.to_json())
    template = spec.get("layout", {}).pop("template", {})
    return spec, template


def _figure_html(spec: dict[str, Any], index: int) -> str:
    """A chart's place and its JSON; :data:`_LOADER` draws it once plotly.js is loaded."""
    div = f"qaeval-figure-{index}"
    return (
        f"<div id='{div}' class='qaeval-figure' style='height:420px;width:100%'></div>"
        f"<script type='application/json' class='qaeval-figure-spec' data-target='{div}'>"
        f"{_script_json(spec)}</script>"
    )


@lru_cache(maxsize=1)
def _packed_plotlyjs() -> str:
    """plotly.js gzip-compressed (``mtime=0``: the same bytes every time) and base64-encoded."""
    raw = get_plotlyjs().encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


#: Unpacks plotly.js with the browser's DecompressionStream, then draws every chart. Static
#: text: data reaches it only as the escaped JSON blocks above.
_LOADER = """
(async () => {
  const packed = document.getElementById("qaeval-plotlyjs").textContent.trim();
  const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const library = document.createElement("script");
  library.textContent = await new Response(stream).text();
  document.head.appendChild(library);
  const template = JSON.parse(document.getElementById("qaeval-template").textContent);
  for (const block of document.querySelectorAll("script.qaeval-figure-spec")) {
    const fig = JSON.parse(block.textContent);
    fig.layout = Object.assign(fig.layout || {}, { template });
    Plotly.newPlot(block.dataset.target, fig.data, fig.layout,
      { displaylogo: false, responsive: true });
  }
  document.body.setAttribute("data-charts", "drawn");
})();
"""


def _ci_errors(frame: pd.DataFrame, col: str = "alpha") -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": (frame["ci_high"] - frame[col]).fillna(0).tolist(),
        "arrayminus": (frame[col] - frame["ci_low"]).fillna(0).tolist(),
    }


def _figures(report: Report) -> list[tuple[str, go.Figure]]:
    t = report.tables
    figs: list[tuple[str, go.Figure]] = []
    counts = t["label_counts"]
    figs.append(
        (
            "Items by number of labels",
            go.Figure(go.Bar(x=_labels(counts["n_labels"]), y=counts["n_items"])).update_layout(
                xaxis_title="labels per item", yaxis_title="items"
            ),
        )
    )
    alpha = t["alpha"]
    for grouping in ("overall", "dataset", "qa_model", "rule"):
        part = alpha[alpha["grouping"] == grouping]
        if part.empty:
            continue
        fig = go.Figure()
        for level, rows in part.groupby("level", sort=True):
            fig.add_bar(
                name=html.escape(str(level)),
                x=_labels(rows["group"]),
                y=rows["alpha"],
                error_y=_ci_errors(rows),
            )
        fig.update_layout(barmode="group", yaxis_title="Krippendorff's alpha")
        figs.append((f"Krippendorff's alpha ({grouping}) with bootstrap CI", fig))
    kappa = t["kappa"]
    if not kappa.empty:
        raters = sorted(set(kappa["rater_a"]) | set(kappa["rater_b"]), key=str)
        grid = pd.DataFrame(np.nan, index=raters, columns=raters)
        for row in kappa.itertuples():
            grid.loc[row.rater_a, row.rater_b] = grid.loc[row.rater_b, row.rater_a] = row.kappa
        figs.append(
            (
                "Cohen's kappa per annotator pair (binary label)",
                go.Figure(
                    go.Heatmap(
                        z=grid.to_numpy(),
                        x=_labels(raters),
                        y=_labels(raters),
                        zmin=-1,
                        zmax=1,
                        colorscale="RdBu",
                    )
                ),
            )
        )
    if "metrics" in t:
        metrics = t["metrics"]
        fig = go.Figure()
        for stat in STATISTICS:
            rows = metrics[metrics["statistic"] == stat]
            fig.add_bar(
                name=stat,
                x=_labels(rows["metric_id"]),
                y=rows["estimate"],
                error_y=_ci_errors(rows, "estimate"),
            )
        fig.update_layout(barmode="group", yaxis_title="value")
        figs.append(("Metric vs human with bootstrap CI", fig))
        joined = t["joined"]
        fig = go.Figure()
        for final, rows in joined.groupby("final", sort=True):
            fig.add_box(
                name=f"human final = {int(final)}",
                x=_labels(rows["metric_id"]),
                y=rows["value"],
                boxpoints=False,
            )
        fig.update_layout(boxmode="group", yaxis_title="metric score")
        figs.append(("Score distributions per human label", fig))
        dev = t["deviation"]
        if not dev.empty and "qa_model" in dev.columns:
            grid = dev.pivot_table(index="metric_id", columns="qa_model", values="deviation")
            figs.append(
                (
                    "Accuracy deviation from humans (metric - human) per QA model",
                    go.Figure(
                        go.Heatmap(
                            z=grid.to_numpy(),
                            x=_labels(grid.columns),
                            y=_labels(grid.index),
                            zmid=0,
                            colorscale="RdBu_r",
                        )
                    ),
                )
            )
    return figs


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem;font-size:0.85rem}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;vertical-align:top;text-align:left}
th{background:#f3f3f3} .empty{color:#888} h2{margin-top:2rem}
"""


def render_html(report: Report) -> str:
    """A self-contained page: plotly.js embedded once (compressed), every data string escaped."""
    t = report.tables
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(report.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
    ]
    counts = report.numbers["counts"]
    agg = report.numbers["aggregation"]
    accuracy = agg["human_accuracy"]
    summary = pd.DataFrame(
        [
            {"what": "items", "value": counts["items"]},
            {"what": "labels", "value": counts["labels"]},
            {"what": "raters", "value": counts["raters"]},
            {"what": "items with a human verdict", "value": counts["judged_items"]},
            {"what": "ties (majority unclear)", "value": agg["ties"]},
            {"what": "ties awaiting adjudication", "value": agg["needs_adjudication"]},
            {"what": "adjudicated items", "value": agg["adjudicated"]},
            {
                "what": "human accuracy (final == clearly correct)",
                "value": "" if accuracy is None else f"{float(accuracy):.3f}",
            },
        ]
    ).astype({"value": object})
    parts += ["<h2>Summary</h2>", _table(summary)]
    for heading, note, table in report.sections:
        parts += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(note)}</p>", _table(table)]
    parts += ["<h2>Agreement</h2>", _table(t["alpha"])]
    parts += ["<h3>Annotator pairs</h3>", _table(t["kappa"])]
    parts += ["<h3>Each annotator against the others' majority</h3>", _table(t["raters"])]
    if "metrics" in t:
        wide = t["metrics"].pivot(index="metric_id", columns="statistic", values="estimate")
        wide = wide.reindex(columns=list(STATISTICS)).reset_index()
        parts += ["<h2>Metrics against humans</h2>", _table(wide)]
        parts += ["<h3>With confidence intervals</h3>", _table(t["metrics"])]
        if "leaderboard" in t:
            parts += ["<h3>QA-model leaderboard</h3>", _table(t["leaderboard"])]
            parts += ["<h3>Ranking changes</h3>", _table(t["ranking"])]
        parts += ["<h3>Accuracy deviation</h3>", _table(t["deviation"])]
        show = [
            "metric_id",
            "item_id",
            "confidence",
            "value",
            "decision",
            "final",
            "qa_model",
            "question",
            "references",
            "candidate",
            "details",
        ]
        parts += ["<h3>Worst disagreements</h3>", _table(t["worst"], show)]
    parts.append("<h2>Charts</h2>")
    template: dict[str, Any] = {}
    for index, (caption, fig) in enumerate(_figures(report)):
        spec, template = _figure_spec(fig)
        parts += [f"<h3>{html.escape(caption)}</h3>", _figure_html(spec, index)]
    parts += [
        f"<script type='application/json' id='qaeval-template'>{_script_json(template)}</script>",
        "<script type='application/octet-stream' id='qaeval-plotlyjs'>",
        _packed_plotlyjs(),
        "</script>",
        f"<script type='text/javascript'>{_LOADER}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(
    report: Report, *, html_path: str | Path | None = None, json_path: str | Path | None = None
) -> None:
    """Write the HTML page and/or the JSON numbers (UTF-8), all or nothing: both texts are made
    first, each is written to a temporary file beside its target, and the targets are replaced
    only when both are written (a failure leaves no file half-written or from this run)."""
    texts: list[tuple[Path, str]] = []
    if html_path is not None:
        texts.append((Path(html_path), render_html(report)))
    if json_path is not None:
        texts.append((Path(json_path), report.to_json() + "\n"))
    temporary: list[tuple[Path, Path]] = []
    try:
        for path, text in texts:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temporary.append((tmp, path))
            tmp.write_text(text, encoding="utf-8")
        for tmp, path in temporary:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temporary:
            tmp.unlink(missing_ok=True)
