"""Data (researchers): import a file into a dataset and export labels, scores and final labels.

The import is the one ``qaeval import`` runs (:func:`qaeval_core.io.scan_items` on the uploads
staged as files by :func:`qaeval_core.io.staged_uploads`, then
:func:`qaeval_core.store.import_scan`): the same formats, harness logs and ``.eval`` zips
included, the same errors, and the same summary of what was detected. All-or-nothing unless
the researcher asks to import the valid rows (the refused ones are listed and downloadable);
a model can be named for the import. Exports are
:func:`qaeval_core.workflows.export_records`: the store's, and the final labels (one per item,
adjudication > annotators > a saved calibration's judge, with where each came from).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import pandas as pd
import streamlit as st

from app.components import auth, safe_text
from app.components import triage_widgets as tw
from qaeval_core import io, store, workflows
from qaeval_core.errors import QAEvalError, ValidationError
from qaeval_core.io.repair import describe_repairs

EXPORTS = {
    "Items with current labels": "items",
    "Labels (current)": "labels",
    "Labels (full history)": "labels-history",
    "Scores": "scores",
    "Final labels (with their source)": "final",
}
FINAL = "final"
#: The final labels' "annotators' aggregate" (:data:`qaeval_core.analysis.aggregation.AGGREGATES`).
AGGREGATE_NAMES = {"majority": "Majority vote", "dawid_skene": "Dawid-Skene (weighted)"}
MIME = {"jsonl": "application/jsonl", "csv": "text/csv", "parquet": "application/octet-stream"}


#: What the uploader takes: the plain files and the harness logs ``qaeval import`` reads.
UPLOAD_TYPES = ["jsonl", "ndjson", "json", "csv", "tsv", "tab", "parquet", "pq", "eval"]


def _import_section(url: str, datasets: list[str]) -> None:
    safe_text.section("Import a file")
    with st.form("import", clear_on_submit=False):
        uploads = st.file_uploader(
            "JSON lines, JSON, CSV, TSV or Parquet, or a harness log (lm-eval samples with "
            "their results file, lighteval details, Inspect .eval/.json, a HELM run's files, "
            "OpenCompass predictions)",
            type=UPLOAD_TYPES,
            accept_multiple_files=True,
            key="import_file",
        )
        c1, c2, c3 = st.columns(3)
        name = c1.text_input(
            "Dataset",
            key="import_dataset",
            placeholder="new or existing name",
            help=f"Existing: {', '.join(datasets)}" if datasets else None,
        )
        scale = c2.selectbox(
            "Plain labels are",
            ["binary", "three"],
            key="import_scale",
            help="binary: 0/1; three: 0/1/2 (incorrect/unclear/correct)",
        )
        sep = c3.text_input("Alias separator in references", "/", key="import_sep")
        mapping_text = st.text_input(
            "Column mapping (optional)",
            key="import_map",
            placeholder="gold_answer=references, model_output=candidate",
            help="COLUMN=FIELD pairs for columns the importer does not recognise by name; "
            "fields: " + ", ".join(io.FIELD_ALIASES),
        )
        c4, c5 = st.columns(2)
        model = c4.text_input(
            "Model name (optional)",
            key="import_model",
            placeholder="the name the log gives",
            help="Names the model of every row instead of the log's own name: two logs whose "
            "harness called the model alike (Inspect's mockllm/model) can share a dataset.",
        )
        skip = c5.checkbox(
            "Import the valid rows; refuse the invalid ones",
            key="import_skip",
            help="Without it, one invalid row imports nothing. With it, the valid rows are "
            "imported and the refused ones listed with their reasons, to download.",
        )
        fix_text = st.checkbox(
            "Repair mojibake (e.g. '2.45Â billion' -> '2.45 billion')",
            key="import_fix_text",
            help="With ftfy, provable encoding repairs only; the original of each changed field "
            "is kept in the item's meta.original_text, and the rows and fields changed are "
            "listed.",
        )
        submitted = st.form_submit_button("Import", type="primary", key="import_submit")
    if not submitted:
        return
    if not uploads or not name.strip():
        st.warning("Choose a file and a dataset name.")
        return
    label = uploads[0].name if len(uploads) == 1 else f"{len(uploads)} files"
    try:
        with io.staged_uploads([(u.name, u.getvalue()) for u in uploads]) as path:
            scan = io.scan_items(
                path,
                name=label,
                mapping=io.column_mapping(p for p in mapping_text.split(",") if p.strip()),
                label_scale=scale,
                alias_separator=sep or None,
                fix_text=fix_text,
                model=model.strip() or None,
                on_invalid="skip" if skip else "refuse",
            )
            st.info(scan.detected.summary(), icon=":material/search:")
            report = store.import_scan(
                url, name.strip(), scan, source=", ".join(u.name for u in uploads)
            )
    except ValidationError as exc:
        st.error(
            f"{label}: {len(exc.errors)} invalid row(s); nothing was imported. "
            "Fix them and upload again."
        )
        st.dataframe(
            pd.DataFrame(
                {"row": [e.row for e in exc.errors], "reason": [e.reason for e in exc.errors]}
            ),
            hide_index=True,
        )
        return
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.success(report.summary())
    if scan.rejects:
        _show_rejects(scan)
    if fix_text:
        st.info(describe_repairs(scan.repairs))


def _show_rejects(scan: io.ItemScan) -> None:
    """The rows refused by an import of the valid rows: a table and the JSON lines file."""
    st.warning(f"{len(scan.rejects)} row(s) refused (not imported); download them below.")
    frame = pd.DataFrame([r.as_record() for r in scan.rejects])
    st.dataframe(frame, hide_index=True, key="import_rejects_table")
    with tempfile.TemporaryDirectory() as tmp:
        data = scan.write_rejects(os.path.join(tmp, "rejects.jsonl")).read_bytes()
    st.download_button(
        "Download the refused rows (JSON lines)",
        data=data,
        file_name="rejects.jsonl",
        mime=MIME["jsonl"],
        icon=":material/download:",
        key="import_rejects_download",
        on_click="ignore",
    )


def _export_bytes(
    url: str,
    dataset: str,
    what: str,
    fmt: str,
    calibration: str | None = None,
    aggregate: str = "majority",
) -> Callable[[], bytes]:
    """A deferred export: runs only when the download button is clicked (``calibration``: the
    saved judge deciding unlabelled items of the ``final`` export; ``aggregate``: how the
    annotators' labels of an item become one)."""

    def build() -> bytes:
        records = workflows.export_records(
            url, dataset, what, calibration=calibration, aggregate=aggregate
        )
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"export.{fmt}")
            io.write_records(records, path)
            with open(path, "rb") as fh:
                return fh.read()

    return build


def _export_section(url: str, datasets: list[str]) -> None:
    safe_text.section("Export")
    if not datasets:
        st.info("Nothing to export yet.")
        return
    c1, c2, c3 = st.columns(3)
    dataset = c1.selectbox("Dataset", datasets, key="export_dataset")
    label = c2.selectbox("What", list(EXPORTS), key="export_what")
    fmt = c3.selectbox("Format", list(MIME), key="export_format")
    what = EXPORTS[label]
    calibration = None
    aggregate = "majority"
    if what == FINAL:
        calibration = tw.calibration_picker(
            url,
            key="export_calibration",
            dataset=dataset,
            optional=True,
            label="Judge for items nobody labelled",
            help="A saved calibration decides the items without a human label (source 'judge'); "
            "without one they have no final label.",
        )
        aggregate = st.radio(
            "Annotators' aggregate",
            list(AGGREGATE_NAMES),
            format_func=AGGREGATE_NAMES.get,
            horizontal=True,
            key="export_aggregate",
            help="How several annotators' labels of an item become one (an adjudication always "
            "wins). Dawid-Skene weighs each annotator by their estimated reliability (Agreement "
            "page, 'Annotator quality').",
        )
    st.download_button(
        f"Download {label.lower()}",
        data=_export_bytes(url, dataset, what, fmt, calibration, aggregate),
        file_name=f"{dataset}-{what}.{fmt}",
        mime=MIME[fmt],
        icon=":material/download:",
        key="export_download",
        on_click="ignore",
    )
    if what == FINAL:
        _final_preview(url, dataset, calibration, aggregate)


def _final_preview(url: str, dataset: str, calibration: str | None, aggregate: str) -> None:
    """How many final labels come from each source, and the first rows."""
    try:
        if aggregate == "majority":
            final = tw.final_labels(url, dataset, calibration)
        else:
            final = workflows.final_labels(url, dataset, calibration, aggregate=aggregate)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    safe_text.section("Final labels by source")
    tw.show_source_counts(final)
    st.caption(
        "Adjudication first, then the annotators' aggregate (majority: a tie is 'unclear'; or "
        "Dawid-Skene), then the "
        "judge's verdict. 'Labels chosen by' says how the item reached people: only a random "
        "audit's labels may stand in for the whole dataset in an accuracy estimate."
    )
    st.dataframe(tw.final_table(final.head(500)), hide_index=True, key="export_final_preview")


def main() -> None:
    auth.page_setup(
        "Data", auth.RESEARCHERS, caption="Import datasets; export labels, scores and final labels."
    )
    url = auth.store_url()
    infos = store.list_datasets(url)
    if infos:
        st.dataframe(
            pd.DataFrame(
                {
                    "dataset": [d.name for d in infos],
                    "items": [d.n_items for d in infos],
                    "source": [d.source or "" for d in infos],
                }
            ),
            hide_index=True,
        )
    datasets = [d.name for d in infos]
    _import_section(url, datasets)
    _export_section(url, datasets)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
