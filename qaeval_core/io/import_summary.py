"""What an import found in its source, said before anything is written (issue 32, item 5).

``qaeval import`` prints it and the Data page shows it, from the same object that
:func:`qaeval_core.io.stream.scan_items` fills while it validates: each file's format and the
harness version its log records, the tasks, the models with their rows, the variants (an
lm-eval filter, an Inspect epoch, a HELM trial) and the rows refused.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Detected"]


def _counted(counter: Counter[str]) -> str:
    return ", ".join(f"{name} ({n} row(s))" for name, n in sorted(counter.items()))


@dataclass
class Detected:
    """Formats, versions, tasks, models (rows each), variants and refusals of one source."""

    #: ``(file label, format name, format title, version or None)`` per file read.
    files: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    tasks: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    variants: Counter[str] = field(default_factory=Counter)
    #: The model name given for the import (replacing the log's own), or None.
    named_model: str | None = None
    refused: int = 0

    def add_file(self, label: str, name: str, title: str, version: str | None) -> None:
        self.files.append((label, name, title, version))

    def add_row(self, model: Any, meta: dict[str, Any] | None) -> None:
        """One valid row: its model (or the models that gave the answer) and harness meta."""
        names = model if isinstance(model, list) else [model]
        for name in names:
            self.models[str(name) if name else "(no model)"] += 1
        meta = meta or {}
        if isinstance(meta.get("task"), str):
            self.tasks[meta["task"]] += 1
        if isinstance(meta.get("variant"), str):
            self.variants[meta["variant"]] += 1

    @property
    def formats(self) -> list[str]:
        """The format names, each once, in the order met."""
        return list(dict.fromkeys(name for _, name, _, _ in self.files))

    def lines(self) -> list[str]:
        """The summary, one fact per line."""
        titles = dict.fromkeys(f"{name} ({title})" for _, name, title, _ in self.files)
        versions = sorted({v for *_, v in self.files if v})
        out = [
            f"Detected: {'; '.join(titles)}, {len(self.files)} file(s); harness version: "
            + (", ".join(versions) if versions else "not recorded in the log")
        ]
        if self.tasks:
            out.append(f"Task(s): {_counted(self.tasks)}")
        named = f" (named on import: {self.named_model})" if self.named_model else ""
        out.append(f"Model(s){named}: {_counted(self.models) or 'none'}")
        if self.variants:
            out.append(f"Variant(s) (filter/epoch/trial): {_counted(self.variants)}")
        if self.refused:
            out.append(f"Refused: {self.refused} row(s)")
        return out

    def summary(self) -> str:
        return "\n".join(self.lines())
