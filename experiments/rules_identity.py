"""Do the answer rules and the number reader give the same outputs before and after a change?
(issue 34 item 2: one home per answer rule, one number reader.)

Run from the repository root, once per tree, then compare::

    PYTHONPATH=<old tree> python experiments/rules_identity.py dump /tmp/before.json
    PYTHONPATH=<new tree> python experiments/rules_identity.py dump /tmp/after.json
    python experiments/rules_identity.py compare /tmp/before.json /tmp/after.json

Protocol: every labelled row of ``kamalloo_nq301`` and ``answer_matching_mmlu_pro`` (shared
data). Per row: the scores *and details* of the answer-shape metrics (``number_match``,
``number_agree``, ``brevity``, ``no_hedge``, ``number_closeness``, ``number_closeness_scaled``)
at ``normalize="spaced"``, ``"robust"`` and ``"robust"`` with ``robust_text="reader"``; the
token metrics ``em``, ``f1``, ``contains`` at ``normalize="robust"``; the judge's answer-level
reason with its evidence, and ``refusal`` / ``hedge`` on their own; the robust profile's texts
(``profile_text``, ``clean_answer``, ``reader_text``) of candidate and references; the exact
number readings (``extract_numbers``) and the graded ones (``quantities``) of every text; and
``type_match`` for the number kind. ``compare`` lists every key whose value differs (exact
equality of the JSON, floats included: same code, same machine) and exits non-zero if any does.
CPU only, about a minute.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DATA = Path("/work/shared/data")
SETS = ("kamalloo_nq301", "answer_matching_mmlu_pro")
SHAPE = (
    "number_match",
    "number_agree",
    "brevity",
    "no_hedge",
    "number_closeness",
    "number_closeness_scaled",
)
SETTINGS: dict[str, dict[str, Any]] = {
    "spaced": {},
    "robust": {"normalize": "robust"},
    "reader": {"normalize": "robust", "robust_text": "reader"},
}


def _items(name: str) -> list[Any]:
    from qaeval_core.schema import Item

    rows = [json.loads(line) for line in (DATA / f"{name}.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if r["human"]["label"] is not None]
    return [
        Item(
            question=str(r["question"]),
            references=tuple(str(x) for x in r["references"]),
            candidate=str(r["candidate"]),
            id=str(r["id"]),
        )
        for r in rows
    ]


def _plain(value: Any) -> Any:
    """JSON-able, with tuples as lists and floats as repr (so 0.1 != 0.1000000001)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return _plain({k: getattr(value, k) for k in value.__dataclass_fields__})
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return value


def dump(out: Path) -> None:
    from qaeval_core.judge.outcomes import answer_reason, hedge, refusal
    from qaeval_core.metrics.base import get_metric
    from qaeval_core.metrics.extract import type_match
    from qaeval_core.text.profiles import clean_answer, profile_text, reader_text
    from qaeval_core.text.quantities import extract_numbers, quantities

    result: dict[str, Any] = {}
    for name in SETS:
        items = _items(name)
        ids = [it.id for it in items]
        for metric in SHAPE:
            for setting, params in SETTINGS.items():
                res = get_metric(metric, **params).score_batch(items)
                for i, key in enumerate(ids):
                    result[f"{key}|{metric}|{setting}"] = _plain(
                        [float(res.scores[i]), bool(res.decisions[i]), res.details[i]]
                    )
        for metric in ("em", "f1", "contains"):
            res = get_metric(metric, normalize="robust").score_batch(items)
            for i, key in enumerate(ids):
                result[f"{key}|{metric}|robust"] = _plain([float(res.scores[i]), res.details[i]])
        for it in items:
            refs = list(it.references)
            reason = answer_reason(it)
            result[f"{it.id}|answer_reason"] = [reason.reason, reason.evidence]
            result[f"{it.id}|refusal"] = refusal(it.candidate, refs)
            result[f"{it.id}|hedge"] = hedge(it.candidate, refs, it.question)
            result[f"{it.id}|reader_text"] = reader_text(it.candidate, refs)
            result[f"{it.id}|type_match"] = type_match(it.candidate, "number")
            for j, text in enumerate([it.candidate, *refs]):
                key = f"{it.id}|text{j}"
                result[f"{key}|robust"] = profile_text(text, "robust")
                result[f"{key}|clean"] = clean_answer(text, "robust")
                result[f"{key}|extract_numbers"] = _plain(extract_numbers(text))
                result[f"{key}|quantities"] = _plain(quantities(text))
                robust = profile_text(text, "robust")
                result[f"{key}|robust_numbers"] = _plain(extract_numbers(robust))
    out.write_text(json.dumps(result, sort_keys=True, ensure_ascii=False), encoding="utf-8")
    print(f"{len(result)} values from {', '.join(SETS)} -> {out}")


def compare(before: Path, after: Path) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    keys = sorted(set(a) | set(b))
    diff = [k for k in keys if a.get(k, "<missing>") != b.get(k, "<missing>")]
    print(f"{len(keys)} values compared, {len(diff)} differ")
    kinds: dict[str, int] = {}
    for k in diff:
        kind = "|".join(k.split("|")[1:])
        kinds[kind] = kinds.get(kind, 0) + 1
    for kind, n in sorted(kinds.items()):
        print(f"  {kind}: {n}")
    for k in diff[:50]:
        print(f"{k}\n  before: {a.get(k, '<missing>')!r}\n  after:  {b.get(k, '<missing>')!r}")
    return 1 if diff else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
