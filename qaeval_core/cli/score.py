"""``qaeval metrics`` and ``qaeval score``: list the metrics, score a file or a stored dataset.

The commands parse options, call :mod:`qaeval_core.scoring` (or a calibrated
:class:`~qaeval_core.judge.Judge`), and print a summary; no scoring logic lives here.

Why it is one module: ``qaeval score`` is one command whose options (metrics, judge, engine)
combine; its three destinations (a file here, a file on Ray, a stored dataset) share the
checks and the summary, so splitting them would spread one command over several files.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from qaeval_core.cli.common import DbOption, console
from qaeval_core.errors import ConfigError
from qaeval_core.jsonable import to_jsonable

#: Metric groups accepted by ``--metrics`` next to single ids.
GROUPS = {
    "lexical": "every lexical metric (no models)",
    "fast": "every metric that loads no neural model (lexical + PANDA)",
    "all": "every registered metric",
}


def expand_metric_list(text: str) -> list[str]:
    """Metric specs from ``--metrics``: ids, ``id:param=value`` specs and group names.

    Ids starting with ``_`` are private (test and experiment metrics registered at run time)
    and never join a group, so a group means the same set whatever else was imported.
    """
    from qaeval_core.metrics.base import metric_class, metric_ids
    from qaeval_core.scoring import parse_metric_list

    out: list[str] = []
    for spec in parse_metric_list(text):
        if spec in GROUPS and spec not in metric_ids():
            for mid in metric_ids():
                if mid.startswith("_"):
                    continue
                cls = metric_class(mid)
                if (
                    spec == "all"
                    or (spec == "lexical" and cls.kind == "lexical")
                    or (spec == "fast" and not cls.needs_models)
                ):
                    out.append(mid)
        else:
            out.append(spec)
    return list(dict.fromkeys(out))


def _default_output(path: Path) -> Path:
    from qaeval_core import io

    if path.suffix.lower() not in io.FORMATS:  # a harness log (.eval, a HELM folder): JSONL
        return path.with_name(f"{path.stem}.scored.jsonl")
    return path.with_name(f"{path.stem}.scored{path.suffix}")


def _read_frame(path: Path, fmt: str | None) -> Any:
    import pandas as pd

    from qaeval_core import io
    from qaeval_core.errors import ValidationError
    from qaeval_core.io import score_rows

    records, errors = io.read_records(path, fmt=fmt)
    if errors:
        raise ValidationError(str(path), list(errors), outcome=score_rows.OUTCOME)
    if not records:
        raise ConfigError(f"{path} contains no rows; nothing to score.")
    # The checks --engine ray runs on the driver too: the same rows refused, the same message.
    score_rows.check_records(records, str(path))
    return pd.DataFrame([rec for _, rec in records])


def _summary(frame: Any, labels: list[str], seconds: dict[str, float] | None = None) -> None:
    from rich.table import Table

    table = Table(title=f"{len(frame)} items", show_lines=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("mean score", justify="right")
    table.add_column("share correct", justify="right")
    if seconds is not None:
        table.add_column("seconds", justify="right")
    for label in labels:
        row = [label, f"{frame[label].mean():.3f}", f"{frame[f'{label}_correct'].mean():.3f}"]
        if seconds is not None:
            row.append(f"{seconds.get(label, 0.0):.2f}")
        table.add_row(*row)
    console.print(table)


def metric_blocks(rows: list[dict[str, Any]], width: int) -> list[str]:
    """One block per metric, wrapped at word and parameter boundaries to ``width`` columns.

    A table squeezed five columns into 80 and folded the defaults into one-word lines (issue
    33); a block gives each metric the full width: the id with its kind, then the description
    and the defaults indented under it.
    """
    import textwrap

    width = max(40, int(width))
    indent = "    "
    lines: list[str] = []
    for r in rows:
        models = "loads models" if r["needs_models"] else "no models"
        lines.append("")
        lines.append(f"{r['id']}  ({r['kind']}, {models})")
        lines.extend(
            textwrap.wrap(
                str(r["description"]), width, initial_indent=indent, subsequent_indent=indent
            )
        )
        params = [f"{k}={v!r}" for k, v in r["defaults"].items()]
        text = "defaults: " + (", ".join(params) if params else "none")
        lines.extend(
            textwrap.wrap(
                text,
                width,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return lines


def add_commands(app: typer.Typer) -> None:
    @app.command("metrics")
    def metrics_(
        as_json: Annotated[
            bool, typer.Option("--json", help="Print JSON instead of a table.")
        ] = False,
    ) -> None:
        """List every metric: id, kind, whether it loads models, default parameters (and, with
        --json, what each declares: cost family, calibrated by default, feature only)."""
        from qaeval_core.metrics.base import metric_class, metric_ids

        rows = []
        for mid in metric_ids():
            cls = metric_class(mid)
            rows.append(
                {
                    "id": mid,
                    "kind": cls.kind,
                    "needs_models": bool(cls.needs_models),
                    "family": cls.family or mid,
                    "calibrate_by_default": bool(cls.calibrate_by_default),
                    "feature_only": bool(cls.feature_only),
                    "defaults": cls.default_params(),
                    "description": cls.description,
                }
            )
        if as_json:
            console.print_json(json.dumps(to_jsonable(rows)))
            return
        console.print(
            "qaeval metrics (use --metrics id or id:param=value,...; --json for machines)",
            markup=False,
        )
        for line in metric_blocks(rows, console.width):
            console.print(line, markup=False, soft_wrap=True)
        console.print("\nGroups for --metrics:", markup=False)
        for name, meaning in GROUPS.items():
            console.print(f"    {name}: {meaning}", markup=False, soft_wrap=True)

    @app.command("score")
    def score_(
        file: Annotated[
            Path | None,
            typer.Argument(
                metavar="[FILE]", help="JSONL/JSON/CSV/TSV/Parquet file to score (or --dataset)."
            ),
        ] = None,
        dataset: Annotated[
            str | None, typer.Option("--dataset", "-d", help="Score this stored dataset.")
        ] = None,
        metrics: Annotated[
            str | None,
            typer.Option(
                "--metrics",
                "-m",
                help="Comma-separated ids, id:param=value specs or groups (lexical, fast, all).",
            ),
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output",
                "-o",
                help=(
                    "Output file (.jsonl/.csv/.parquet...); default FILE.scored.SUFFIX "
                    "(FILE.scored.jsonl for FILE.jsonl)."
                ),
            ),
        ] = None,
        config: Annotated[
            Path | None,
            typer.Option("--config", help="Calibrated judge JSON (from `qaeval calibrate`)."),
        ] = None,
        fmt: Annotated[
            str | None,
            typer.Option(
                "--format",
                help="Input format (default: a harness log by its content, else the suffix; "
                "docs/formats.md).",
            ),
        ] = None,
        batch_size: Annotated[
            int | None,
            typer.Option(
                help="Items per metric call (default: all at once; 1000 with --engine ray)."
            ),
        ] = None,
        rescore: Annotated[
            bool, typer.Option(help="Recompute scores already stored with the same config.")
        ] = False,
        progress: Annotated[
            bool | None,
            typer.Option(help="Show progress bars (default: when stderr is a terminal)."),
        ] = None,
        human_share: Annotated[
            float | None,
            typer.Option(
                "--human-share",
                help="With --config: leave about this share of items (0 <= S < 1) to people "
                "as 'uncertain', read off the judge's effort curve (default: its own band).",
            ),
        ] = None,
        engine: Annotated[
            str,
            typer.Option(
                help="local: this process; ray: a Ray cluster (files: JSON lines or Parquet, a "
                "file or a folder; needs `pip install 'qaeval[distributed]'`).",
            ),
        ] = "local",
        ray_address: Annotated[
            str | None,
            typer.Option(
                "--ray-address",
                help="With --engine ray: auto (a cluster started here with `ray start --head`) "
                "or ray://HOST:10001; default a local Ray for this command.",
            ),
        ] = None,
        trace: Annotated[
            bool,
            typer.Option(
                "--trace",
                help="With --config: add a judge_trace JSON column (each input's push, the "
                "matched reference, the NAQT rule; docs/outcomes.md).",
            ),
        ] = False,
        llm_share: Annotated[
            float | None,
            typer.Option(
                "--llm-share",
                help="With a --config that has an LLM tier: send about this share of items to "
                "the LLM, read off the judge's cascade curve (default: its own).",
            ),
        ] = None,
        dry_run: Annotated[
            bool,
            typer.Option(
                "--dry-run",
                help="With --config: count the rows and predict the time (cheap inputs, the "
                "LLM tier) from the judge's measured costs; score nothing.",
            ),
        ] = False,
        db: DbOption = None,
    ) -> None:
        """Score a file (writes FILE + one column per metric and its details) or a stored
        dataset (saves the scores in the store; items already scored are skipped)."""
        if engine != "local":
            from qaeval_core.distributed import check_engine

            check_engine(engine)
            if dataset is not None:
                raise ConfigError(
                    "--engine ray scores files (JSON lines or Parquet); score a stored dataset "
                    "with --engine local, or export it first (`qaeval export`)."
                )
        elif ray_address is not None:
            raise ConfigError("--ray-address needs --engine ray.")
        if (file is None) == (dataset is None):
            raise ConfigError("Give either FILE or --dataset NAME (one of them).")
        if not metrics and config is None:
            raise ConfigError(
                "Give --metrics (e.g. em,f1,contains; `qaeval metrics` lists them) or "
                "--config judge.json."
            )
        if dataset is not None and output is not None and config is None:
            raise ConfigError(
                "--output with --dataset is for judge results (--config); export stored "
                "scores with `qaeval export --dataset NAME --what scores -o FILE`."
            )
        # Every flag is checked before any file is read or metric run.
        specs = expand_metric_list(metrics) if metrics else []
        if specs:
            from qaeval_core.metrics.specs import resolve_metrics

            resolve_metrics(specs)  # unknown ids and bad parameters fail here
        if human_share is not None and config is None:
            raise ConfigError("--human-share needs --config judge.json (a calibrated judge).")
        if (llm_share is not None or dry_run) and config is None:
            raise ConfigError("--llm-share and --dry-run need --config judge.json.")
        judge = _load_judge(config) if config is not None else None
        if judge is not None and human_share is not None:
            judge = judge.with_share(human_share)
        if judge is not None and llm_share is not None:
            judge = judge.with_llm_share(llm_share)
        if dry_run:
            assert judge is not None
            _dry_run(judge, file, dataset, fmt, db)
            return
        if trace:
            if judge is None:
                raise ConfigError("--trace needs --config judge.json (a calibrated judge).")
            judge = judge.with_trace()
        if output is not None and engine == "local":  # on Ray, no known suffix: a folder
            from qaeval_core import io

            io.detect_format(output)
        if progress is None:
            progress = sys.stderr.isatty()
        if dataset is not None:
            _score_dataset(dataset, specs, judge, output, batch_size, rescore, progress, db)
        elif engine == "ray":
            assert file is not None
            _score_file_ray(file, specs, judge, output, fmt, batch_size, progress, ray_address)
        else:
            assert file is not None
            _score_file(file, specs, judge, output, fmt, batch_size, progress)


def _run_metrics(frame: Any, specs: list[str], batch_size: int | None, progress: bool):
    from qaeval_core import scoring

    resolved = scoring.resolve_metrics(specs)
    seconds: dict[str, float] = {}
    for label, metric in resolved:
        start = time.perf_counter()
        frame = scoring.score(frame, [metric], batch_size=batch_size, progress=progress)
        seconds[label] = time.perf_counter() - start
    return frame, [label for label, _ in resolved], seconds


def _load_judge(config: Path) -> Any:
    from qaeval_core.judge import Judge

    return Judge.from_config(config)


def _score_file(
    file: Path,
    specs: list[str],
    judge: Any,
    output: Path | None,
    fmt: str | None,
    batch_size: int | None,
    progress: bool,
) -> None:
    from qaeval_core import io

    frame = _read_frame(file, fmt)
    labels: list[str] = []
    seconds: dict[str, float] = {}
    if specs:
        frame, labels, seconds = _run_metrics(frame, specs, batch_size, progress)
    if judge is not None:
        frame = judge.judge(frame)
    target = output or _default_output(file)
    io.write_records(frame, target)
    if labels:
        _summary(frame, labels, seconds)
    if judge is not None:
        _judge_summary(frame, judge)
    console.print(f"Wrote {len(frame)} rows to {target}.", markup=False, soft_wrap=True)
    _check_complete(frame, labels, judge is not None, f"written to {target}")


def _check_complete(frame: Any, labels: list[str], judged: bool, where: str) -> None:
    """Exit non-zero (after writing) when items got no verdict: how many and why, per metric,
    and how many judge rows a failed input sent to people (``judge_error``)."""
    from qaeval_core.errors import IncompleteRunError
    from qaeval_core.scoring import no_verdicts

    parts = [
        f"{label}: {n} of {len(frame)} items have no verdict ({reason})"
        for label, (n, reason) in no_verdicts(frame, labels).items()
    ]
    if judged and "judge_reason" in frame:
        failed = int((frame["judge_reason"] == "judge_error").sum())
        if failed:
            parts.append(
                f"judge: {failed} of {len(frame)} rows are judge_error (an input metric failed "
                "or the LLM gave no verdict; they go to people, --trace shows why)"
            )
    if parts:
        raise IncompleteRunError(
            "; ".join(parts) + f". The other results are {where}; verdicts that worked are "
            "cached, so running the same command again asks only for the missing ones."
        )


def _dry_run(judge: Any, file: Path | None, dataset: str | None, fmt: str | None, db) -> None:  # type: ignore[no-untyped-def]
    """Print the predicted seconds of ``qaeval score --config`` on these rows."""
    if file is not None:
        n = len(_read_frame(file, fmt))
    else:
        from qaeval_core import store
        from qaeval_core.store import session as store_session

        n = len(store.load_items(store_session.upgrade(db), str(dataset)))
    from qaeval_core.judge.file_summary import cost_summary

    measured = cost_summary(judge.cost)
    cheap = None if measured is None else measured.judge_s_per_1000
    if cheap is None and judge.cascade is not None:
        cheap = judge.cascade.cheap_s_per_1000
    cheap_s = None if cheap is None else float(cheap) * n / 1000
    line = f"{n} rows: cheap inputs " + ("unmeasured" if cheap_s is None else f"~{cheap_s:.1f} s")
    if judge.cascade is not None:
        pred = judge.cascade.predicted_seconds(n)
        line += (
            f"; LLM tier ~{pred['llm_items']} rows ({judge.cascade.llm_share:.0%}) x "
            f"{judge.cascade.llm_seconds_per_item:.2f} s = ~{pred['llm_s']:.0f} s; people get "
            f"~{judge.cascade.human_share:.0%}; total ~{(cheap_s or 0) + pred['llm_s']:.0f} s "
            "(costs measured where the judge was calibrated; cached verdicts cost nothing)."
        )
    console.print(line, markup=False, soft_wrap=True)


def _judge_summary(frame: Any, judge: Any = None) -> None:
    """One line on the verdicts, and the band's guarantee when the judge carries one (the
    share uncertain on this data is what to compare with the guarantee's share to people)."""
    uncertain = (
        f"; share uncertain {(frame['judge_outcome'] == 'uncertain').mean():.3f}"
        if "judge_outcome" in frame
        else ""
    )
    reasons = (
        "; reasons: "
        + ", ".join(f"{k} {v}" for k, v in frame["judge_reason"].value_counts().items())
        if "judge_reason" in frame
        else ""
    )
    tiers = (
        "; decided by: "
        + ", ".join(f"{k} {v}" for k, v in frame["judge_tier"].value_counts().items())
        if "judge_tier" in frame
        else ""
    )
    console.print(
        f"judge: share correct {frame['judge_correct'].mean():.3f} "
        f"(mean score {frame['judge_score'].mean():.3f}){uncertain}{reasons}{tiers}",
        markup=False,
        soft_wrap=True,
    )
    guarantee = getattr(judge, "guarantee", None)
    if guarantee is not None:
        console.print(
            f"Guarantee from calibration: {guarantee.statement()}",
            markup=False,
            soft_wrap=True,
        )


def _score_file_ray(
    file: Path,
    specs: list[str],
    judge: Any,
    output: Path | None,
    fmt: str | None,
    batch_size: int | None,
    progress: bool,
    address: str | None,
) -> None:
    """The metrics, then the judge, on Ray (:func:`qaeval_core.distributed.map_files`)."""
    from functools import partial

    from qaeval_core import distributed, scoring

    steps: list[Any] = []
    metrics = scoring.resolve_metrics(specs) if specs else []
    labels = [label for label, _ in metrics]
    models = [m for _, m in metrics] + (list(judge.metrics().values()) if judge else [])
    if metrics:
        steps.append(partial(scoring.score, metrics=[m for _, m in metrics]))
    summary = [c for label in labels for c in (label, f"{label}_correct")]
    if judge is not None:
        steps.append(judge.judge)
        summary += ["judge_score", "judge_correct", "judge_outcome"]
    start = time.perf_counter()
    result = distributed.map_files(
        file,
        output or _default_output(file),
        steps,
        fmt=fmt,
        batch_size=batch_size,
        options=distributed.RayOptions(address=address),
        needs_models=any(m.needs_models for m in models),
        progress=progress,
        summary_columns=summary,
    )
    if labels:
        _summary(result.summary, labels)
    if judge is not None:
        _judge_summary(result.summary, judge)
    console.print(
        f"Wrote {result.rows} rows to {result.output} on Ray "
        f"({time.perf_counter() - start:.1f} s).",
        markup=False,
        soft_wrap=True,
    )
    _check_complete(result.summary, labels, judge is not None, f"written to {result.output}")


def _score_dataset(
    dataset: str,
    specs: list[str],
    judge: Any,
    output: Path | None,
    batch_size: int | None,
    rescore: bool,
    progress: bool,
    db: str | None,
) -> None:
    from rich.table import Table

    from qaeval_core import io, workflows
    from qaeval_core.store import session as store_session

    def show(title: str, summary: dict[str, dict[str, Any]]) -> None:
        table = Table(title=title)
        for col in ("metric", "config hash", "scored", "already stored"):
            table.add_column(col)
        for label, info in summary.items():
            table.add_row(label, info["config_hash"], str(info["scored"]), str(info["skipped"]))
        console.print(table)

    url = store_session.upgrade(db)
    if specs:
        summary = workflows.score_dataset(
            url, dataset, specs, rescore=rescore, batch_size=batch_size, progress=progress
        )
        show(f"dataset {dataset}: scores saved in the store", summary)
        _check_stored(summary, "saved in the store")
    if judge is not None:
        frame, summary = workflows.judge_dataset(
            url, dataset, judge, rescore=rescore, batch_size=batch_size, progress=progress
        )
        show(f"dataset {dataset}: the judge's inputs", summary)
        console.print(
            f"judge on {dataset}: share correct {frame['judge_correct'].mean():.3f} "
            f"over {len(frame)} items",
            markup=False,
        )
        if output is not None:
            io.write_records(frame, output)
            console.print(f"Wrote {len(frame)} rows to {output}.", markup=False, soft_wrap=True)
        _check_stored(summary, "saved in the store")
        _check_complete(frame, [], True, "saved" if output is None else f"written to {output}")


def _check_stored(summary: dict[str, dict[str, Any]], where: str) -> None:
    """Exit non-zero when a stored dataset's items got no verdict (none is stored for them)."""
    from qaeval_core.errors import IncompleteRunError

    parts = [
        f"{label}: {info['no_verdict']} of {info['scored']} items have no verdict "
        f"({info.get('reason', 'no verdict')})"
        for label, info in summary.items()
        if info.get("no_verdict")
    ]
    if parts:
        raise IncompleteRunError(
            "; ".join(parts) + f". The other scores are {where}; the missing ones are not, so "
            "running the same command again scores only them."
        )
