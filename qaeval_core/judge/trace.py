"""A trace per judged item: which inputs pushed the verdict, what matched, which rule applies.

Researchers reading a verdict ask three things, and a trace (the ``judge_trace`` JSON column of
``qaeval score --config ... --trace``, shown in the Explorer's item detail; annotators never
see it, they label blind) answers each from numbers the judge already has:

* **contributions**: how much each input moved the decision, in logit units (positive pushes
  towards correct). For the stacker they are exact, ``coef * (value - mean) / scale`` per
  feature, and with the intercept they sum to the logit of ``judge_score``; the trace's own
  ``logit`` is the one the judge applies (:func:`~.triage.score_logit`, the score clipped 1e-6
  from 0 and 1, so it stops at +-13.8 where the contributions may sum further); for a threshold
  judge the one input contributes ``slope * (value - threshold)``. Fusion and a refitted PANDA
  do not decompose additively: their trace gives the input values only (``contributions`` is
  null), rather than invent a split.
* **matched_reference**: the reference the answer matched, after normalisation (SQuAD:
  lower case, no punctuation or articles), and how: ``exact``, ``contained`` (the reference
  inside the answer), ``inside`` (the answer inside the reference) or ``overlap`` (the best
  token F1; null when no token is shared).
* **rule**: the NAQT rule (:data:`qaeval_core.schema.RULES`) the evidence points to, only where
  that is deterministic: an exact match with a later reference (an alias) is rule 1, numbers
  that disagree (or agree once formatting is ignored) rule 2, the answer inside a longer
  reference rule 3, the reference inside a longer answer rule 4. Otherwise null: semantic
  equivalence (5), irrelevance (6) and other correct answers (7) need judgement, not rules.

The answer-level outcome (:mod:`.outcomes`: not attempted, hedged, extraction failed) and
``judge_reason`` are in the trace too, with their evidence. Everything is deterministic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from qaeval_core.jsonable import to_jsonable
from qaeval_core.judge.outcomes import AnswerReason
from qaeval_core.judge.triage import score_logit
from qaeval_core.metrics.lexical import token_prf
from qaeval_core.schema import RULES, Item
from qaeval_core.text.normalize import normalize
from qaeval_core.text.quantities import extract_numbers, number_features

__all__ = [
    "contributions",
    "item_trace",
    "judge_traces",
    "matched_reference",
    "naqt_rule",
    "tier_trace",
    "trace_json",
]

_RULES = {rule.number: rule for rule in RULES}


def contributions(model: Any, X: Any) -> list[dict[str, float]] | None:
    """Per row, ``{feature: logit contribution}`` plus ``"(intercept)"``, or None when the
    combiner does not decompose additively (fusion, a refitted PANDA)."""
    names = [str(n) for n in getattr(model, "feature_names_in_", [])]
    if not names:
        return None
    arr = np.asarray(X[names] if hasattr(X, "columns") else X, dtype=float)
    if all(hasattr(model, a) for a in ("coef_", "mean_", "scale_", "intercept_")):
        parts = (arr - model.mean_) / model.scale_ * model.coef_
        intercept = float(model.intercept_)
        return [
            {**dict(zip(names, map(float, row), strict=True)), "(intercept)": intercept}
            for row in parts
        ]
    if all(hasattr(model, a) for a in ("threshold_", "slope_", "column_")):
        column = model.column_
        if not isinstance(column, str):  # an index, or None for a judge of one input
            column = names[int(column or 0)]
        values = arr[:, names.index(column)]
        return [
            {column: float(model.slope_ * (v - model.threshold_)), "(intercept)": 0.0}
            for v in values
        ]
    return None


def matched_reference(candidate: str, references: Sequence[str]) -> dict[str, Any] | None:
    """The reference the candidate matches best, normalised, and how (see the module
    docstring); None when no reference shares a token with it."""
    cand = normalize(str(candidate or ""))
    padded = f" {cand} "
    best: dict[str, Any] | None = None
    for index, ref in enumerate(references):
        nref = normalize(str(ref or ""))
        if not nref:
            continue
        if nref == cand:
            return {"index": index, "reference": nref, "how": "exact", "f1": 1.0}
        if f" {nref} " in padded:
            found = {"index": index, "reference": nref, "how": "contained"}
        elif cand and f" {cand} " in f" {nref} ":
            found = {"index": index, "reference": nref, "how": "inside"}
        else:
            found = {"index": index, "reference": nref, "how": "overlap"}
        found["f1"] = token_prf(cand, nref)[2]
        rank = (found["how"] != "overlap", found["f1"])
        if found["f1"] > 0 and (best is None or rank > (best["how"] != "overlap", best["f1"])):
            best = found
    return best


def naqt_rule(item: Item, match: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``{"rule", "name", "evidence"}`` where the evidence decides a NAQT rule, else None."""
    refs = [str(r) for r in item.references]
    if any(extract_numbers(r) for r in refs) and extract_numbers(item.candidate or ""):
        found, agree = number_features(item.candidate, refs)
        if agree == 0.0:
            return _rule(2, "the answer's numbers differ from every reference number")
        if found > 0 and (match is None or match["how"] != "exact"):
            return _rule(2, "the reference's numbers are in the answer (format ignored)")
    if match is None:
        return None
    how = match["how"]
    if how == "exact" and match["index"] > 0:
        return _rule(1, f"exact match with an alias (reference {match['index'] + 1})")
    if how == "contained":
        return _rule(4, "the reference is inside the answer, with more words around it")
    if how == "inside":
        return _rule(3, "the answer is part of the reference (fewer details)")
    return None


def _rule(number: int, evidence: str) -> dict[str, Any]:
    return {"rule": number, "name": _RULES[number].name, "evidence": evidence}


def item_trace(
    item: Item,
    *,
    inputs: Mapping[str, float],
    contribution: Mapping[str, float] | None,
    score: float,
    probability: float,
    reason: str,
    answer: AnswerReason,
    error: str | None = None,
) -> dict[str, Any]:
    """The trace of one judged item (a JSON-ready dict)."""
    match = matched_reference(item.candidate, [str(r) for r in item.references])
    pushed = None
    if contribution is not None:
        ranked = sorted(
            ((k, v) for k, v in contribution.items() if k != "(intercept)"),
            key=lambda kv: -abs(kv[1]),
        )
        pushed = [{"input": k, "logit": v} for k, v in ranked]
    return to_jsonable(
        {
            "reason": reason,
            "answer_evidence": answer.evidence or None,
            "error": error,
            "score": score,
            "probability": probability,
            "logit": float(score_logit(score)),
            "inputs": dict(inputs),
            "contributions": None if contribution is None else dict(contribution),
            "pushed_by": pushed,
            "matched_reference": match,
            "rule": naqt_rule(item, match),
        }
    )


def trace_json(trace: Mapping[str, Any]) -> str:
    """A trace as compact JSON text (the ``judge_trace`` column)."""
    return json.dumps(trace, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def tier_trace(text: str, tier: str, cheap: float, llm: float) -> str:
    """A trace with the cascade's part added: which tier decided (``cheap``, ``llm``,
    ``people``), the cheap judge's own P(correct) and the LLM's (null where it was not asked)."""
    trace = json.loads(text)
    trace["tier"] = str(tier)
    trace["cheap_probability"] = float(cheap)
    trace["llm_probability"] = None if not math.isfinite(float(llm)) else float(llm)
    return trace_json(trace)


def judge_traces(
    model: Any,
    X: Any,
    items: Sequence[Item],
    *,
    inputs: Any,
    score: np.ndarray,
    probability: np.ndarray,
    reason: Sequence[str],
    answer: Sequence[AnswerReason],
    errors: Sequence[str | None] | None = None,
) -> list[str]:
    """The ``judge_trace`` column: one JSON text per item (:func:`item_trace`)."""
    parts = contributions(model, X) if len(getattr(model, "feature_names_in_", [])) else None
    records = inputs.to_dict(orient="records") if hasattr(inputs, "to_dict") else inputs
    return [
        trace_json(
            item_trace(
                item,
                inputs=records[i],
                contribution=None if parts is None else parts[i],
                score=float(score[i]),
                probability=float(probability[i]),
                reason=str(reason[i]),
                answer=answer[i],
                error=None if errors is None else errors[i],
            )
        )
        for i, item in enumerate(items)
    ]
