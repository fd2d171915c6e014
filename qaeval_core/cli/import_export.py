"""``qaeval import`` and ``qaeval export``: move datasets between files and the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from qaeval_core import io
from qaeval_core.cli.common import DbOption, console
from qaeval_core.errors import ConfigError
from qaeval_core.io.labels import RATING_SCALE
from qaeval_core.vocabulary import AGGREGATES, EXPORTS, FINAL_EXPORT

#: ``--what``: the store's exports and ``final`` (final labels and their source, which need the
#: judge and so come from :mod:`qaeval_core.workflows`, imported only when asked for).


def add_commands(app: typer.Typer) -> None:
    @app.command("import")
    def import_(
        file: Annotated[
            Path,
            typer.Argument(
                metavar="FILE",
                help="JSONL, JSON, CSV, TSV or Parquet file, or a harness log (lm-eval "
                "samples_*.jsonl, lighteval details parquet, Inspect .eval/.json, a HELM run "
                "folder, OpenCompass predictions; docs/formats.md).",
            ),
        ],
        dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset to add to.")],
        fmt: Annotated[
            str | None,
            typer.Option(
                "--format",
                help="jsonl|json|csv|tsv|parquet|lm-eval|lighteval|inspect|helm|opencompass "
                "(default: a harness log by its content, else the suffix).",
            ),
        ] = None,
        map_: Annotated[
            list[str] | None,
            typer.Option("--map", help="COLUMN=FIELD, e.g. gold=references (repeatable)."),
        ] = None,
        label_scale: Annotated[
            str, typer.Option(help="Scale of plain labels: binary (0/1) or three (0/1/2).")
        ] = "binary",
        rating_scale: Annotated[
            str,
            typer.Option(
                help="Scale of the raters' rating/rating_match values, LOW-HIGH: 1-5, 0-2 "
                "(SMILE), ... mapped to 0/1/2 by their place on it."
            ),
        ] = RATING_SCALE,
        alias_sep: Annotated[
            str,
            typer.Option(help="Separator of aliases in a references string ('' keeps it whole)."),
        ] = "/",
        fix_text: Annotated[
            bool,
            typer.Option(
                "--fix-text",
                help="Repair provable mojibake (e.g. '2.45Â billion') with ftfy; the original "
                "of each changed field is kept in the item's meta.original_text, and the rows "
                "and fields changed are listed.",
            ),
        ] = False,
        model: Annotated[
            str | None,
            typer.Option(
                "--model",
                help="Name the model of every row (instead of the name the log gives), e.g. "
                "two logs whose harness called both 'mockllm/model'.",
            ),
        ] = None,
        on_invalid: Annotated[
            str,
            typer.Option(
                "--on-invalid",
                help="refuse: any invalid row imports nothing (default); skip: import the "
                "valid rows and write the refused ones to --rejects.",
            ),
        ] = "refuse",
        rejects: Annotated[
            Path | None,
            typer.Option(
                "--rejects",
                help="With --on-invalid skip: JSON lines file for the refused rows (file, row, "
                "id, reason).",
            ),
        ] = None,
        db: DbOption = None,
    ) -> None:
        """Import items and their human labels (all-or-nothing unless --on-invalid skip;
        re-importing adds nothing). FILE may be a folder of harness logs.

        The schema and column aliases are in docs/data-format.md. Raters named in the file
        become external users; their labels are stored on the 0/1/2 scale. What was detected
        (format, harness version, tasks, models with their rows) is printed before writing.
        """
        from qaeval_core import store
        from qaeval_core.io.repair import describe_repairs
        from qaeval_core.io.rows import column_mapping
        from qaeval_core.io.stream import scan_items
        from qaeval_core.store import session as store_session

        if on_invalid == "skip" and rejects is None:
            raise ConfigError("--on-invalid skip needs --rejects FILE for the refused rows.")
        if rejects is not None and on_invalid != "skip":
            raise ConfigError("--rejects goes with --on-invalid skip only.")
        # Validated in one streaming pass before the store is touched; then written chunk by
        # chunk (memory stays a fraction of the file, annotators are never locked out long).
        scan = scan_items(
            file,
            fmt=fmt,
            mapping=column_mapping(map_ or []),
            label_scale=label_scale,
            alias_separator=alias_sep or None,
            rating_scale=rating_scale,
            fix_text=fix_text,
            model=model,
            on_invalid=on_invalid,
        )
        console.print(scan.detected.summary(), markup=False, soft_wrap=True)
        if rejects is not None:
            scan.write_rejects(rejects)
            console.print(
                f"Wrote {len(scan.rejects)} refused row(s) to {rejects}.",
                markup=False,
                soft_wrap=True,
            )
        url = store_session.upgrade(db)
        report = store.import_scan(url, dataset, scan, source=str(file))
        console.print(report.summary(), markup=False, soft_wrap=True)
        if fix_text:
            console.print(describe_repairs(scan.repairs), markup=False, soft_wrap=True)

    @app.command("export")
    def export(
        dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset to export.")],
        output: Annotated[
            Path,
            typer.Option("--output", "-o", help="File; .jsonl, .json, .csv, .tsv or .parquet."),
        ],
        what: Annotated[
            str,
            typer.Option(
                help="items (with current labels), labels, labels-history, scores, or final "
                "(one final label per item: adjudication > annotators > judge, with its source)."
            ),
        ] = "items",
        metric: Annotated[str | None, typer.Option(help="Only this metric's scores.")] = None,
        calibration: Annotated[
            str | None,
            typer.Option(
                help="With --what final: the saved calibration that decides items no person "
                "labelled (without it they get no label, source 'none')."
            ),
        ] = None,
        aggregate: Annotated[
            str,
            typer.Option(
                help="With --what final: how the annotators' labels of an item become one: "
                "majority (a tie is 'unclear') or dawid_skene (each rater weighed by an "
                "estimated confusion matrix; crowd-kit)."
            ),
        ] = "majority",
        db: DbOption = None,
    ) -> None:
        """Export a dataset's items, labels (current or full history), scores or final labels."""
        if what not in EXPORTS:
            raise ConfigError(f"--what must be one of {', '.join(EXPORTS)}, got {what!r}.")
        if calibration is not None and what != FINAL_EXPORT:
            raise ConfigError(
                f"--calibration goes with --what {FINAL_EXPORT} only, not --what {what}."
            )
        if aggregate != "majority" and what != FINAL_EXPORT:
            raise ConfigError(
                f"--aggregate goes with --what {FINAL_EXPORT} only, not --what {what}."
            )
        if aggregate not in AGGREGATES:
            raise ConfigError(
                f"--aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}."
            )
        io.detect_format(output)  # fail on a bad suffix before touching the store
        from qaeval_core import store
        from qaeval_core.store import session as store_session

        url = store_session.resolve_url(db)
        if what == FINAL_EXPORT:
            from qaeval_core.workflows import export_records

            records = export_records(
                url, dataset, what, calibration=calibration, aggregate=aggregate
            )
        else:
            records = store.export_store_records(url, dataset, what, metric_id=metric)
        io.write_records(records, output)
        console.print(
            f"Wrote {len(records)} {what} row(s) of {dataset!r} to {output}.",
            markup=False,
            soft_wrap=True,
        )
