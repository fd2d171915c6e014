"""Scoring beyond one machine: the same frame scorers run over Ray Data, batch for batch.

``qaeval_core.score(..., engine="ray")`` and ``qaeval score --engine ray`` hand this module
*steps*: picklable functions that take a DataFrame of items and return it with score columns
(``functools.partial(qaeval_core.scoring.score, metrics=...)``, a judge's ``judge``).
This module only moves rows to workers and back; it knows nothing of metrics, so a score
computed here is the one the local loop computes. Ray Data does all the scheduling: there is no
scheduler of ours to get wrong.

* **Input.** A DataFrame is turned into item rows on the driver with
  :func:`~qaeval_core.io.item_frames.items_from_frame` (so column aliases and ``/``-separated
  references are read exactly as locally) plus a row number; files (JSON lines or Parquet, one
  file or a folder of them) are read by Ray itself (``ray.data.read_json`` /
  ``read_parquet``), so a large input never passes through the driver's memory.
* **Checked first.** Before Ray starts, the driver reads a local input once, a row at a time,
  through the checks the local engine runs (:mod:`qaeval_core.io.score_rows`): a bad row is the
  same row-numbered :class:`~qaeval_core.errors.ValidationError` on both engines, and nothing
  is scored. Arrow reads one JSON type per column, so a JSON lines input whose columns mix
  types (a number among the candidates, a string of references among lists), which the local
  engine reads as it is, is rewritten next to the input (``.qaeval-uniform-*``, removed after
  the run) with one type per column: the item fields as the scorers read them, other mixed
  columns as text. Remote inputs (``s3://...``) are read by Ray unchecked.
* **Batches.** The rows are re-cut into blocks of exactly ``batch_size`` consecutive rows
  (``repartition(target_num_rows_per_block=..., strict=True)``, order preserved) and each block
  is one ``map_batches`` batch, so every metric sees the batches the local loop sees with the
  same ``batch_size``. No metric's score for an item depends on its batch (A-VERT's
  distractors come from a fixed pool), so the batch size changes only the work per call.
  Frames check the cut on every batch (the row numbers must be one aligned chunk).
* **Workers.** A callable class in an autoscaling actor pool: each actor unpickles the steps
  once (metric objects, a judge) and keeps them, so models load once per actor, not per batch.
  When the cluster has GPUs and a step loads models, each actor takes one GPU.
* **Failures.** Ray Data restarts a dead actor and re-runs its unfinished batches (its defaults:
  ``max_restarts=-1``, ``max_task_retries=-1``; passing other values needs the
  ``ray_remote_args`` that Ray 2.60 deprecates). A re-run batch replaces the lost one, so no row
  is lost or written twice; frames verify it (every row number exactly once) before returning.
  A batch that kills its worker every time is retried forever: watch the Ray dashboard.
* **Order.** ``DataContext.execution_options.preserve_order``: the rows of a frame or of a
  one-file output follow the input. A folder of Parquet files holds every row exactly once, but
  its file names do not always sort in input order (seen once in six runs on Ray 2.60): join
  on the input's id column, or score to one file, when the order matters.

Why it is one module: the row numbering, the batch cut the workers check, the actor pool and
the file plumbing are one contract (same scores as the local loop, every row exactly once);
split, the parts would each need the others' invariants.

Ray is imported only inside functions: ``import qaeval_core`` and the CLI work without the
``qaeval[distributed]`` extra, and using the engine without it raises an
:class:`~qaeval_core.errors.InputError` saying how to install it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import InputError
from qaeval_core.io.files import FORMATS
from qaeval_core.io.item_frames import items_from_frame
from qaeval_core.schema import Item

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "ENGINES",
    "INSTALL_HINT",
    "ROW_COLUMN",
    "FilesResult",
    "RayOptions",
    "check_engine",
    "map_files",
    "map_frame",
    "require_ray",
]

#: The scoring engines: this process, or a Ray cluster.
ENGINES = ("local", "ray")
#: How to get Ray (the optional extra declared in pyproject).
INSTALL_HINT = "pip install 'qaeval[distributed]'"
#: Rows per batch on Ray when none is given (the local loop's default is one batch of all).
DEFAULT_BATCH_SIZE = 1000
#: The row number carried through Ray for frames (dropped from the result).
ROW_COLUMN = "__qaeval_row"
#: Rows per Parquet file of an output folder (fewer, larger files than one per batch).
ROWS_PER_FILE = 100_000
#: Formats Ray reads itself (by suffix); anything else is read locally or converted first.
_RAY_FORMATS = {"jsonl": "jsonl", "parquet": "parquet"}

#: A step: a DataFrame of items in, the same rows with score columns added out.
Step = Callable[[pd.DataFrame], pd.DataFrame]


def check_engine(engine: str) -> str:
    """``engine`` if it is one of :data:`ENGINES`, else an InputError listing them."""
    if engine not in ENGINES:
        raise InputError(f"Unknown engine {engine!r}: use one of {', '.join(ENGINES)}.")
    return engine


def require_ray() -> Any:
    """The ``ray`` module (with Ray Data), or an InputError saying how to install it."""
    try:
        import ray
        import ray.data  # Ray Data is a separate extra of Ray
    except ImportError as exc:
        raise InputError(
            f"The ray engine needs Ray Data, which is not installed ({exc}): {INSTALL_HINT}."
        ) from None
    return ray


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide to run.

    address : ``None`` starts a local Ray for the call (or joins the cluster named by the
        ``RAY_ADDRESS`` environment variable), ``"auto"`` joins the cluster started on this
        machine with ``ray start``, ``"ray://host:10001"`` connects through Ray Client. An
        already initialised Ray (``ray.init()`` in the caller) is used as it is.
    actors : most actors in the pool; ``None``: one per GPU when actors take GPUs, else one per
        CPU of the cluster.
    gpus_per_actor : ``None``: 1 when the cluster has GPUs and a step loads models, else 0.
    """

    address: str | None = None
    actors: int | None = None
    gpus_per_actor: float | None = None

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise InputError(f"actors must be at least 1, got {self.actors}.")
        if self.gpus_per_actor is not None and self.gpus_per_actor < 0:
            raise InputError(f"gpus_per_actor must be >= 0, got {self.gpus_per_actor}.")


@dataclass(frozen=True)
class FilesResult:
    """What :func:`map_files` wrote: the row count, where, and the columns asked for."""

    rows: int
    output: str
    summary: pd.DataFrame


# -- the worker ------------------------------------------------------------------------------


class BatchScorer:
    """The callable class of the actor pool: runs the steps on one batch.

    The constructor runs once per actor, so the steps (and the models their metrics load on
    first use) live as long as the actor. With ``total_rows`` set the batch carries
    :data:`ROW_COLUMN` and must be one aligned chunk of ``batch_size`` rows, the chunk the
    local loop would score; the result then holds only the row number and the columns the
    steps added (the driver puts them back on the caller's frame).
    """

    def __init__(
        self, steps: Sequence[Step], batch_size: int, total_rows: int | None = None
    ) -> None:
        self.steps = list(steps)
        self.batch_size = batch_size
        self.total_rows = total_rows

    def _check_chunk(self, rows: np.ndarray) -> None:
        start = int(rows[0]) if len(rows) else 0
        end = min(start + self.batch_size, self.total_rows or 0)
        aligned = start % self.batch_size == 0 and np.array_equal(rows, np.arange(start, end))
        if not aligned:
            raise RuntimeError(
                f"Ray handed a batch of rows {rows[:3].tolist()}...{rows[-3:].tolist()} that "
                f"is not one chunk of {self.batch_size} consecutive rows; batch-dependent "
                "metrics (A-VERT) would differ from the local loop. Please report this."
            )

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        if self.total_rows is not None:
            self._check_chunk(batch[ROW_COLUMN].to_numpy())
        out = batch
        for step in self.steps:
            out = step(out)
        if len(out) != len(batch):
            raise RuntimeError(f"a step returned {len(out)} rows for a batch of {len(batch)}")
        if self.total_rows is not None:
            added = [c for c in out.columns if c not in batch.columns]
            out = out[[ROW_COLUMN, *added]]
        return out.reset_index(drop=True)


# -- Ray plumbing -----------------------------------------------------------------------------


@contextlib.contextmanager
def _session(options: RayOptions, progress: bool) -> Iterator[Any]:
    """Ray, initialised for the block (and shut down after it when this call started it),
    with order preserved and progress bars only when asked."""
    ray = require_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=options.address, logging_level="WARNING", log_to_driver=True)
    ctx = ray.data.DataContext.get_current()
    saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars)
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = progress
    try:
        yield ray
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars = saved
        if started:
            ray.shutdown()


def _pool(ray: Any, options: RayOptions, needs_models: bool) -> dict[str, Any]:
    """``map_batches`` arguments for the actor pool (compute strategy and resources)."""
    resources = ray.cluster_resources()
    gpus = options.gpus_per_actor
    if gpus is None:
        gpus = 1.0 if needs_models and resources.get("GPU", 0) >= 1 else 0.0
    if options.actors is not None:
        most = options.actors
    elif gpus > 0:
        most = max(1, int(resources.get("GPU", 0) // gpus))
    else:
        most = max(1, int(resources.get("CPU", 1)))
    return {
        "compute": ray.data.ActorPoolStrategy(min_size=1, max_size=most),
        "num_cpus": 1,
        "num_gpus": gpus if gpus > 0 else None,
    }


def _score(ray: Any, ds: Any, scorer_args: tuple[Any, ...], pool: dict[str, Any]) -> Any:
    """``ds`` cut into aligned blocks and mapped through the actor pool (lazy)."""
    size = scorer_args[1]
    return ds.repartition(target_num_rows_per_block=size, strict=True).map_batches(
        BatchScorer,
        fn_constructor_args=scorer_args,
        batch_size=size,
        batch_format="pandas",
        udf_modifying_row_count=False,
        **pool,
    )


def _batch_size(batch_size: int | None) -> int:
    if batch_size is None or batch_size <= 0:
        return DEFAULT_BATCH_SIZE
    return int(batch_size)


# -- frames -----------------------------------------------------------------------------------


def _item_rows(items: Sequence[Item]) -> pd.DataFrame:
    """Items as a frame of plain, uniformly typed columns that ``items_from_frame`` reads back
    into the same items (so Arrow never meets a mixed-type user column)."""
    return pd.DataFrame(
        {
            ROW_COLUMN: np.arange(len(items), dtype=np.int64),
            "question": [it.question for it in items],
            "references": [list(it.references) for it in items],
            "candidate": [it.candidate for it in items],
            "context": [it.context for it in items],
            "choices": [None if it.choices is None else list(it.choices) for it in items],
            "wrong_answers": [
                None if it.wrong_answers is None else list(it.wrong_answers) for it in items
            ],
            "id": [it.id for it in items],
            "dataset": [it.dataset for it in items],
            "model": [it.qa_model for it in items],
        }
    )


def map_frame(
    frame: pd.DataFrame,
    steps: Sequence[Step],
    *,
    batch_size: int | None = None,
    options: RayOptions | None = None,
    needs_models: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """A copy of ``frame`` with the columns ``steps`` add, computed on Ray in batches of
    ``batch_size`` rows (default :data:`DEFAULT_BATCH_SIZE`), in row order.

    The result equals running the steps locally on each chunk of ``batch_size`` rows; for
    :func:`qaeval_core.scoring.score` that is ``score(frame, metrics, batch_size=batch_size)``.
    """
    options = options or RayOptions()
    rows = _item_rows(items_from_frame(frame))
    n = len(rows)
    if n == 0:  # nothing to send; the steps give an empty result its columns
        return BatchScorer(steps, 1)(frame).set_axis(frame.index)
    with _session(options, progress) as ray:
        pool = _pool(ray, options, needs_models)
        mapped = _score(ray, ray.data.from_pandas(rows), (steps, _batch_size(batch_size), n), pool)
        scored = mapped.to_pandas().sort_values(ROW_COLUMN, kind="stable")
    got = scored[ROW_COLUMN].to_numpy()
    if not np.array_equal(got, np.arange(n)):
        raise RuntimeError(
            f"Ray returned {len(got)} rows for {n} ({np.setdiff1d(np.arange(n), got).size} "
            f"missing, {len(got) - np.unique(got).size} repeated)."
        )
    out = frame.copy()
    for column in scored.columns:
        if column != ROW_COLUMN:
            out[column] = scored[column].to_numpy()
    return out


# -- files ------------------------------------------------------------------------------------


def _is_remote(path: str) -> bool:
    return "://" in path


def _input_format(source: str, fmt: str | None) -> str:
    """``jsonl`` or ``parquet``: named, from the suffix, or from the files of a folder."""
    if fmt is not None:
        name = fmt.lower().lstrip(".")
        name = {"ndjson": "jsonl", "pq": "parquet"}.get(name, name)
    elif not _is_remote(source) and Path(source).is_dir():
        found = {FORMATS.get(p.suffix.lower()) for p in Path(source).rglob("*") if p.is_file()}
        found &= set(_RAY_FORMATS)
        if len(found) != 1:
            raise InputError(
                f"{source} holds {'no' if not found else 'both'} JSON lines and Parquet files; "
                "the ray engine reads a folder of one of them (or name it: fmt='parquet')."
            )
        name = found.pop()
    else:
        name = FORMATS.get(Path(source).suffix.lower(), Path(source).suffix or "(none)")
    if name not in _RAY_FORMATS:
        raise InputError(
            f"The ray engine reads JSON lines or Parquet (a file or a folder), not {name!r} "
            f"({source}): convert it first, or score it with engine='local'."
        )
    return name


def _read(ray: Any, source: str, fmt: str) -> Any:
    if fmt == "parquet":
        return ray.data.read_parquet(source)
    # pyarrow's JSON reader reads JSON lines and keeps strings as strings (pandas' would turn
    # an id "007" into 7).
    return ray.data.read_json(source, file_extensions=["jsonl", "ndjson", "json"])


def output_is_folder(output: str) -> bool:
    """Whether ``output`` names a folder of Parquet files (no file suffix we write)."""
    return Path(output).suffix.lower() not in FORMATS


def _check_folder(output: str) -> None:
    if _is_remote(output):
        return
    path = Path(output)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(
            f"{output} exists and is not an empty folder; the ray engine writes a folder of "
            "Parquet files there: remove it or give another output.",
            param="output",
        )


def _input_files(source: str, fmt: str) -> list[Path]:
    """The files Ray will read: ``source`` itself, or those of its folder with the suffixes
    of ``fmt``, in name order, skipping names starting with ``.`` or ``_`` as Ray does."""
    path = Path(source)
    if not path.is_dir():
        return [path]
    suffixes = {s for s, f in FORMATS.items() if f == fmt}
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.suffix.lower() in suffixes
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
    )


@contextlib.contextmanager
def _checked_input(source: str, fmt: str) -> Iterator[str]:
    """``source`` checked row by row on the driver (a ValidationError before anything runs),
    as the path Ray should read: ``source`` itself, or a copy with one JSON type per column
    when its columns mix types (module docstring), removed afterwards."""
    import shutil
    import tempfile

    from qaeval_core.io import score_rows

    if _is_remote(source):
        yield source
        return
    files = _input_files(source, fmt)
    if fmt == "parquet":
        for file in files:
            score_rows.check_parquet(file)
        yield source
        return
    scan = score_rows.JsonlScan()
    for file in files:
        scan = score_rows.scan_jsonl(file, scan=scan)
    if not scan.mixed:
        yield source
        return
    is_dir = Path(source).is_dir()
    # Beside the input, not inside a folder input (its next run would read the copy too).
    base = Path(source).resolve().parent
    try:
        folder = Path(tempfile.mkdtemp(prefix=".qaeval-uniform-", dir=base))
    except OSError:  # a read-only input folder: the system's temporary folder
        folder = Path(tempfile.mkdtemp(prefix="qaeval-uniform-"))
    try:
        for file in files:
            rel = file.relative_to(source) if is_dir else Path(file.name)
            target = (folder / rel).with_suffix(".jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("w", encoding="utf-8") as fh:
                score_rows.write_uniform(file, fh, scan.mixed)
        yield str(folder if is_dir else (folder / files[0].name).with_suffix(".jsonl"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def map_files(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    steps: Sequence[Step],
    *,
    fmt: str | None = None,
    batch_size: int | None = None,
    options: RayOptions | None = None,
    needs_models: bool = False,
    progress: bool = False,
    summary_columns: Sequence[str] = (),
) -> FilesResult:
    """Score a JSON lines / Parquet file or folder on Ray and write every input column plus
    the steps' columns (in input order for a one-file output; see the module docstring for a
    folder).

    ``output`` with a file suffix (``.jsonl``, ``.parquet``, ``.csv``...) is one file written
    by the driver (all rows pass through it); anything else is a folder of Parquet files written
    by the workers, for inputs larger than the driver's memory. ``summary_columns`` are read
    back for the caller's summary (means of scores), the rest stays on disk.
    """
    from qaeval_core import io

    source, output = os.fspath(source), os.fspath(output)
    options = options or RayOptions()
    fmt = _input_format(source, fmt)
    folder = output_is_folder(output)
    if folder:
        _check_folder(output)
    with _checked_input(source, fmt) as readable, _session(options, progress) as ray:
        pool = _pool(ray, options, needs_models)
        mapped = _score(ray, _read(ray, readable, fmt), (steps, _batch_size(batch_size)), pool)
        if not folder:
            frame = mapped.to_pandas()
            io.write_records(frame, output)
            summary = frame[[c for c in summary_columns if c in frame.columns]]
            return FilesResult(len(frame), output, summary.reset_index(drop=True))
        mapped.write_parquet(output, min_rows_per_file=ROWS_PER_FILE)
        written = ray.data.read_parquet(output)
        columns = [c for c in summary_columns if c in written.schema().names]
        summary = written.select_columns(columns).to_pandas() if columns else None
        rows = written.count() if summary is None else len(summary)
    return FilesResult(rows, output, summary if summary is not None else pd.DataFrame())
