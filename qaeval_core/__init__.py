"""qaeval: judge whether answers to questions are actually correct.

The public API is small:

>>> import pandas as pd
>>> import qaeval_core as qa
>>> frame = pd.DataFrame({"question": ["Capital of France?"], "references": [["Paris"]],
...                       "candidate": ["It is Paris."]})
>>> scored = qa.score(frame, metrics=["em", "contains", "f1"])
>>> scored[["em", "contains", "f1"]].round(2).to_dict("records")
[{'em': 0.0, 'contains': 1.0, 'f1': 0.5}]
>>> scored[["em_correct", "contains_correct", "f1_correct"]].iloc[0].tolist()
[False, True, True]
>>> {"em", "contains", "f1"} <= set(qa.metric_ids())  # every registered metric
True
>>> qa.get_metric("f1", threshold=0.4)  # one metric object, parameters checked
TokenF1(threshold=0.4, normalize='spaced')
>>> judge = qa.Judge.from_config("judge.json")  # a saved calibration  # doctest: +SKIP
>>> qa.score_dataset(None, "mine", ["em", "f1"])  # a stored dataset  # doctest: +SKIP

Everything but :class:`Item` is imported on first use (module ``__getattr__``), so importing
the package, or any submodule such as the CLI, stays fast and never loads pandas or torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from qaeval_core.schema import Item

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from qaeval_core.judge import Judge
    from qaeval_core.metrics.base import get_metric, metric_ids
    from qaeval_core.scoring import score, score_items
    from qaeval_core.workflows import calibrate_dataset, judge_dataset, score_dataset

__all__ = [
    "Item",
    "Judge",
    "calibrate_dataset",
    "get_metric",
    "judge_dataset",
    "metric_ids",
    "score",
    "score_dataset",
    "score_items",
]

_LAZY = {
    "score": "qaeval_core.scoring",
    "score_items": "qaeval_core.scoring",
    "get_metric": "qaeval_core.metrics.base",
    "metric_ids": "qaeval_core.metrics.base",
    "Judge": "qaeval_core.judge",
    "score_dataset": "qaeval_core.workflows",
    "judge_dataset": "qaeval_core.workflows",
    "calibrate_dataset": "qaeval_core.workflows",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'qaeval_core' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
