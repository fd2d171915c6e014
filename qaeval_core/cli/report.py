"""``qaeval report``: one dataset's analysis as a self-contained HTML page and a JSON file.

The numbers are those of the app's agreement, explorer and leaderboard pages (both call
:mod:`qaeval_core.analysis`); the fixed seed makes the JSON reproducible, so CI can diff it.
With ``--calibration`` and no label from a random audit sample yet, the report still has every
model's judge accuracy and mean probability, the PPI columns empty with the reason and the
``qaeval audit`` command that deals the sample (issue 32, item 6). Both files are written only
once everything is computed, each through a temporary file: a failed run leaves neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from qaeval_core.cli.common import DbOption, console
from qaeval_core.errors import ConfigError
from qaeval_core.vocabulary import SCORE_POLICIES


def add_commands(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset to analyse.")],
        output: Annotated[
            Path, typer.Option("--output", "-o", help="HTML file to write (works offline).")
        ],
        json_path: Annotated[
            Path | None, typer.Option("--json", help="Also write the numbers as JSON here.")
        ] = None,
        metric: Annotated[
            list[str] | None,
            typer.Option("--metric", "-m", help="Only this metric id (repeatable; default: all)."),
        ] = None,
        config_hash: Annotated[
            list[str] | None,
            typer.Option(
                "--config-hash",
                help="Use this metric configuration (repeatable; default: the latest per metric).",
            ),
        ] = None,
        score_policy: Annotated[
            str,
            typer.Option(
                help="Human score correlated with the metrics: mean (raters' mean), final "
                "(majority/adjudicated), soft (LAVE)."
            ),
        ] = "mean",
        n_boot: Annotated[
            int, typer.Option("--n-boot", min=0, help="Bootstrap resamples for the CIs.")
        ] = 1000,
        seed: Annotated[int, typer.Option(help="Bootstrap seed (same seed, same JSON).")] = 0,
        calibration: Annotated[
            str | None,
            typer.Option(
                help="A saved calibration: add per-model accuracies with valid CIs (PPI from "
                "its judge plus the random audit labels, human-only) and the judge's accuracy and "
                "mean probability (also without audit labels: `qaeval audit` deals them)."
            ),
        ] = None,
        db: DbOption = None,
    ) -> None:
        """Write agreement, metric-vs-human statistics, leaderboard and worst disagreements."""
        if score_policy not in SCORE_POLICIES:
            raise ConfigError(
                f"--score-policy must be one of {', '.join(SCORE_POLICIES)}; got {score_policy!r}."
            )
        from qaeval_core import analysis
        from qaeval_core.analysis.report import write_report
        from qaeval_core.store import session as store_session

        url = store_session.upgrade(db)
        if calibration is not None:
            from qaeval_core import store

            store.get_calibration(url, calibration)  # an unknown name fails before any work
        result = analysis.dataset_report(
            url,
            dataset,
            metrics=metric,
            config_hashes=config_hash,
            score_policy=score_policy,  # type: ignore[arg-type]
            n_boot=n_boot,
            seed=seed,
        )
        if calibration is not None:
            from qaeval_core.analysis.accuracy_report import add_model_accuracies
            from qaeval_core.analysis.estimates import compare_estimates, estimate_accuracy
            from qaeval_core.workflows import estimation_frame

            frame = estimation_frame(url, dataset, calibration)
            table = estimate_accuracy(
                frame, prediction="judge_probability", label="gold_label", require_labels=False
            )
            db_arg = "" if db is None else f" --db {db}"
            add_model_accuracies(
                result,
                table,
                compare_estimates(table),
                calibration=calibration,
                frame=frame,
                audit_advice=f"Deal one with `qaeval audit --dataset {dataset} --n 30 "
                f"--annotators NAME{db_arg}` (labelled items it draws count at once), then "
                "run this report again.",
            )
        from qaeval_core.analysis.harness_report import add_harness_results
        from qaeval_core.workflows.harness import harness_results

        harness = harness_results(
            url, dataset, calibration=calibration, metrics=metric, config_hashes=config_hash
        )
        add_harness_results(result, harness)
        write_report(result, html_path=output, json_path=json_path)
        counts = result.numbers["counts"]
        configs = result.numbers["settings"].get("metric_configs") or {}
        console.print(
            f"Dataset {dataset!r}: {counts['items']} item(s), {counts['labels']} label(s), "
            f"{len(configs)} metric(s).",
            markup=False,
            soft_wrap=True,
        )
        if harness is not None:
            console.print(
                f"Harness logs: {len(harness['rows'])} (model, task) row(s), "
                f"{len(harness['flips'])} ranking flip(s) between the harness and a judge.",
                markup=False,
                soft_wrap=True,
            )
        console.print(f"HTML report: {output}", markup=False, soft_wrap=True)
        if json_path is not None:
            console.print(f"JSON numbers: {json_path}", markup=False, soft_wrap=True)
