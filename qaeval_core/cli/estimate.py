"""``qaeval estimate``: per-model accuracy with valid intervals from a judged file + human labels.

FILE is what ``qaeval score --config judge.json`` wrote; some of its rows carry a human label
(``gold_label``, else the import fields ``label`` / ``human_label`` / ``is_correct`` or
``human.label``). qaeval's own final-labels export (``qaeval export --what final``) is read as
it is: its ``final_label`` counts where a person gave it (``source`` adjudication or
annotators), never where the judge decided. The numbers come from
:mod:`qaeval_core.analysis.estimates`; this module reads the file, picks the columns and prints
/ writes the result. A column ``sample_probability`` (``--probability``) gives the probability
that a labelled row was chosen for labelling: when those differ, every label with a known one
counts, weighted by its inverse (labels chosen by the judge's doubt at random, issue 24), and
the table says how many labels were weighted and how many were left out. Every flag is
checked before the file is read, and nothing is written when anything is wrong; errors name
the file's columns and the option to pass, never an internal one.

``--dataset D`` (issue 32, item 7) joins the store's labels to a file scored from the store
(``qaeval score --dataset D --config J -o FILE``, which has ``item_id``): the final label where
a person gave it, how its item was drawn (``label_sample``, ``sample_probability``); without it
such a file has no label column, and the error says to add ``--dataset``. With ``--dataset``
and no random audit label yet, the table still shows the judge's numbers, and the ``qaeval
audit`` command that deals the sample. The terminal shows
one compact row per model (the judge's two numbers named for what they are: ``judge accuracy``,
the share judged correct, and ``judge mean prob.``, the mean P(correct)); the pairwise
differences are listed only with ``--pairs`` (they are always in the JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from qaeval_core.cli.common import DbOption, console
from qaeval_core.cli.estimate_print import print_estimates
from qaeval_core.errors import ConfigError, InputError

#: The label fields read when ``--label`` is not given, in order (first present per row wins).
LABEL_FIELDS = ("gold_label", "label", "human_label", "is_correct")
MODEL_FIELDS = ("qa_model", "model", "system")
#: The label column of ``qaeval export --what final`` (3-point scale), its ``source`` column and
#: the sources that are a person's label (the judge's are predictions, not labels).
FINAL_LABEL, FINAL_SOURCE = "final_label", "source"
HUMAN_SOURCES = ("adjudication", "annotators")
_SCALE = "label_scale"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _human_label(human: Any, number: int) -> tuple[Any, Any]:
    from qaeval_core.io.cells import decode_json

    human = decode_json(human, "human", want=dict)
    if not isinstance(human, dict):
        raise InputError(f"row {number}: human must be an object with a label, got {human!r}")
    if _blank(human.get("label")) and human.get("raters"):
        raise InputError(
            f"row {number}: human has rater labels but no adjudicated human.label; adjudicate "
            "them first or give one label per row in gold_label."
        )
    return human.get("label"), human.get("scale")


def _final_label(rec: dict[str, Any], number: int) -> tuple[Any, Any]:
    """A final-labels export row's label and scale: ``final_label`` on the 3-point scale where
    a person gave it, none where the judge decided (or nobody)."""
    source = rec.get(FINAL_SOURCE)
    if _blank(source):
        raise InputError(
            f"row {number} has {FINAL_LABEL} but no {FINAL_SOURCE}: in a `qaeval export --what "
            f"final` file the {FINAL_SOURCE} column says whether a person or the judge gave the "
            "label; export it again, or name a human label column with --label."
        )
    if str(source).strip() not in HUMAN_SOURCES:
        return None, None
    return rec.get(FINAL_LABEL), "three"


def labels_from_records(
    records: list[tuple[int, dict[str, Any]]], label: str | None
) -> tuple[list[Any], list[Any]]:
    """One raw label and its row's scale (or None) per record.

    A ``final_label`` (``qaeval export --what final``, read by default or named with ``--label``)
    counts only on rows whose ``source`` is a person's: the judge's verdicts are predictions,
    and counting them as labels of a random sample would bias every estimate.
    """
    values: list[Any] = []
    scales: list[Any] = []
    for number, rec in records:
        if label is None and not _blank(rec.get("rater")):
            raise InputError(
                f"row {number} holds one rater's label (column rater): estimates need one label "
                "per item; adjudicate the raters into gold_label first."
            )
        value, scale = None, rec.get(_SCALE)
        field = None
        if label is None:
            field = next((f for f in LABEL_FIELDS if not _blank(rec.get(f))), None)
        if label == FINAL_LABEL or (label is None and field is None and FINAL_LABEL in rec):
            value, final_scale = _final_label(rec, number)
            scale = final_scale or scale
        elif label is not None:
            value = rec.get(label)
        elif field is not None:
            value = rec[field]
        elif not _blank(rec.get("human")):
            value, human_scale = _human_label(rec["human"], number)
            scale = human_scale if not _blank(human_scale) else scale
        values.append(None if _blank(value) else value)
        scales.append(None if _blank(scale) else scale)
    return values, scales


def _label_name(frame: Any, label: str | None) -> str:
    """The label column as the user knows it: ``--label``, the one field the file uses, or
    the fields read in order."""
    if label is not None:
        return label
    used = [f for f in LABEL_FIELDS if f in frame.columns]
    if "human" in frame.columns:
        used.append("human.label")
    if not used and FINAL_LABEL in frame.columns:
        return FINAL_LABEL
    return used[0] if len(used) == 1 else "/".join([*LABEL_FIELDS, "human.label"])


def _no_labels(file: Path, frame: Any, label: str | None, shown: str) -> str:
    """Why no row has a human label, in terms of the file's columns and the option to pass."""
    columns = ", ".join(map(str, frame.columns))
    if label is not None or shown == FINAL_LABEL:
        where = (
            f"{FINAL_LABEL} comes only from the judge (or nobody) on every row: no person "
            "labelled these items"
            if shown == FINAL_LABEL
            else f"column {shown!r} is empty on every row"
        )
        return (
            f"No row has a human label in {file}: {where}. PPI needs human labels on a random "
            f"sample of the items (its columns: {columns})."
        )
    looked = ", ".join([*LABEL_FIELDS, "human.label", FINAL_LABEL])
    return (
        f"No row has a human label in {file}: it has none of the label columns read by default "
        f"({looked}); its columns are {columns}. Name the column holding the human labels "
        "with --label COLUMN."
    )


def _join_store_labels(frame: Any, file: Path, dataset: str, db: str | None) -> tuple[Any, list]:
    """``frame`` with the store's human labels of ``dataset`` joined by ``item_id``:
    ``gold_label`` (the final label where a person gave it; 3-point scale), ``label_sample``
    and ``sample_probability``; and the records rebuilt from it (one per row, numbered)."""
    from qaeval_core.store import session as store_session
    from qaeval_core.workflows import final_labels

    if "item_id" not in frame.columns:
        raise InputError(
            f"{file} has no item_id column, so the store's labels cannot be joined to it; "
            f"write it from the store: qaeval score --dataset {dataset} --config JUDGE -o FILE."
        )
    if "dataset" in frame.columns:
        other = sorted({str(d) for d in frame["dataset"].dropna()} - {dataset})
        if other:
            raise InputError(
                f"{file} holds rows of dataset(s) {', '.join(other)}, not {dataset!r}."
            )
    url = store_session.upgrade(db)
    human = final_labels(url, dataset)
    human = human.assign(
        gold_label=human["final_label"].where(human["source"].isin(HUMAN_SOURCES)),
        label_scale="three",
    ).set_index("item_id")[["gold_label", "label_scale", "label_sample", "sample_probability"]]
    ids = frame["item_id"].astype("int64")
    unknown = sorted(set(ids) - set(human.index.astype("int64")))
    if unknown:
        raise InputError(
            f"{len(unknown)} item_id(s) of {file} are not items of dataset {dataset!r} "
            f"(first {unknown[0]}): was it scored from another store or dataset?"
        )
    dropped = [c for c in (*LABEL_FIELDS, "human", FINAL_LABEL, *human.columns) if c in frame]
    frame = frame.drop(columns=dropped).reset_index(drop=True)
    joined = human.reindex(ids.to_numpy()).reset_index(drop=True)
    frame = frame.join(joined.astype(object).where(joined.notna(), None))
    return frame, [(i + 1, rec) for i, rec in enumerate(frame.to_dict("records"))]


def add_commands(app: typer.Typer) -> None:
    @app.command("estimate")
    def estimate(
        file: Annotated[
            Path, typer.Argument(help="File written by `qaeval score --config` (+ human labels).")
        ],
        output: Annotated[
            Path | None,
            typer.Option("--output", "-o", help="JSON to write (default FILE.estimates.json)."),
        ] = None,
        confidence: Annotated[
            float, typer.Option(help="Confidence level of the intervals, in (0, 1).")
        ] = 0.95,
        label: Annotated[
            str | None,
            typer.Option(help="Human label column (default: gold_label, label or human.label)."),
        ] = None,
        prediction: Annotated[
            str | None,
            typer.Option(help="Judge column (default: judge_probability, else judge_correct)."),
        ] = None,
        label_scale: Annotated[
            str | None,
            typer.Option(help="binary (0/1, true/false) or three (0/1/2); default: inferred."),
        ] = None,
        model: Annotated[
            str | None, typer.Option(help="QA-model column (default: qa_model, model or system).")
        ] = None,
        sample: Annotated[
            str, typer.Option(help="Column saying how a labelled row was chosen ('random'...).")
        ] = "label_sample",
        probability: Annotated[
            str,
            typer.Option(
                help="Column with the probability each labelled row was chosen for labelling "
                "(empty: unknown); unequal ones are weighted by their inverse."
            ),
        ] = "sample_probability",
        min_labels: Annotated[
            int, typer.Option(help="Random labels a model needs for an interval.")
        ] = 10,
        fmt: Annotated[
            str | None, typer.Option("--format", help="Input format (default: from suffix).")
        ] = None,
        pair_mode: Annotated[
            str | None,
            typer.Option(
                "--pairs",
                help="List the model pairs' differences: auto (every pair of up to 20 models, "
                "else adjacent), all, adjacent (each model and the next in the PPI ranking) "
                "or top (every pair of the --top best). Default: not listed; the JSON has "
                "auto's.",
            ),
        ] = None,
        dataset: Annotated[
            str | None,
            typer.Option(
                "--dataset",
                "-d",
                help="Join this store dataset's human labels (and how their items were drawn) "
                "to a file scored from it (`qaeval score --dataset D --config J`).",
            ),
        ] = None,
        db: DbOption = None,
        top: Annotated[int, typer.Option(help="With --pairs top: how many models.")] = 10,
    ) -> None:
        """Accuracy per QA model: PPI (judge on every item + random human labels), human-only,
        and the judge's accuracy and mean probability; writes JSON with the pairwise
        differences and prints a table (`--dataset D`: labels from the store)."""
        from qaeval_core import io
        from qaeval_core.analysis import estimates as est
        from qaeval_core.io.labels import LABEL_SCALES

        # Every flag is checked before the file is read.
        if not 0 < confidence < 1:
            raise ConfigError(f"--confidence must be in (0, 1), e.g. 0.95; got {confidence}.")
        if min_labels < 2:
            raise ConfigError(f"--min-labels must be at least 2; got {min_labels}.")
        if pair_mode is not None and pair_mode not in est.PAIR_MODES:
            raise ConfigError(
                f"--pairs must be one of {', '.join(est.PAIR_MODES)}; got {pair_mode!r}."
            )
        if dataset is not None and label is not None:
            raise ConfigError(
                "--label names a label column of the file; with --dataset the labels come "
                "from the store. Give one of them."
            )
        if top < 2:
            raise ConfigError(f"--top must be at least 2; got {top}.")
        if label_scale is not None and label_scale not in LABEL_SCALES:
            raise ConfigError(
                f"--label-scale must be one of {', '.join(LABEL_SCALES)}; got {label_scale!r}."
            )
        target = output or file.with_name(f"{file.stem}.estimates.json")
        if target.suffix.lower() != ".json":
            raise ConfigError(f"--output must be a .json file; got {str(target)!r}.")
        if fmt is None:
            io.detect_format(file)

        import pandas as pd

        from qaeval_core.errors import ValidationError

        records, errors = io.read_records(file, fmt=fmt)
        if errors:
            raise ValidationError(str(file), list(errors))
        if not records:
            raise InputError(f"{file} contains no rows.")
        frame = pd.DataFrame([rec for _, rec in records])
        for column, what in ((label, "--label"), (prediction, "--prediction"), (model, "--model")):
            if column is not None and column not in frame.columns:
                raise InputError(f"{what} {column!r} is not a column of {file}.")
        if dataset is not None:
            frame, records = _join_store_labels(frame, file, dataset, db)
            label = "gold_label"
        values, scales = labels_from_records(records, label)
        shown = _label_name(frame, label)
        if all(v is None for v in values):
            message = _no_labels(file, frame, label, shown)
            if dataset is None and "item_id" in frame.columns and "dataset" in frame.columns:
                names = sorted({str(d) for d in frame["dataset"].dropna()}) or ["D"]
                message = (
                    f"No row has a human label in {file}; it was scored from the store "
                    f"(item_id, dataset {', '.join(names)}): add --dataset {names[0]} to join "
                    "the store's labels."
                )
            raise InputError(message)
        # The parsed labels go in the column they came from (its name is what errors show).
        frame[shown] = pd.Series(values, index=frame.index, dtype=object)
        frame[_SCALE] = pd.Series(scales, index=frame.index, dtype=object)
        model = model or next((m for m in MODEL_FIELDS if m in frame.columns), MODEL_FIELDS[0])
        table = est.estimate_accuracy(
            frame,
            prediction=prediction,
            label=shown,
            model=model,
            sample=sample,
            probability=probability,
            confidence=confidence,
            min_labels=min_labels,
            label_scale=label_scale,
            require_labels=dataset is None,
        )
        pairs = est.compare_estimates(table, pairs=pair_mode or "auto", top=top)
        from qaeval_core.jsonable import to_jsonable

        result = {
            "confidence": confidence,
            "prediction": table.attrs["prediction"],
            "label": shown,
            "label_scale": label_scale or "inferred",
            "min_labels": min_labels,
            "method": (
                "inverse-probability-weighted PPI (Zrnic & Candes 2024) on the labels with a "
                f"known {probability}, power-tuned lam, Wilson interval at the design-effect "
                "sample size with a t quantile (Kish n_eff - 1 df); human-only: the same with "
                "lam=0"
                if table.attrs.get("weighted")
                else "PPI++ (ppi_py, lam=None) on random labels, t quantile (n - 1 df); "
                "human-only: Wilson score interval"
            ),
            "weighted": bool(table.attrs.get("weighted")),
            "estimates": est.estimates_to_json(table),
            "comparisons": to_jsonable(pairs),
            "comparisons_scope": {"pairs": pairs.attrs["pairs"], "note": pairs.attrs["note"]},
        }
        print_estimates(table, pairs, confidence, show_pairs=pair_mode is not None)
        if table.attrs.get("audit_labels") is False:
            db_arg = "" if db is None else f" --db {db}"
            console.print(
                f"Deal one: qaeval audit --dataset {dataset} --n 60 --annotator NAME{db_arg} "
                "(items it draws that carry a label count at once), then run this again.",
                markup=False,
                soft_wrap=True,
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
        console.print(f"Wrote {target}.", markup=False, soft_wrap=True)
