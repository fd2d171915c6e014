"""Items back into records: the exports, written so a file imports back with the same items and
labels (the inverse of :data:`qaeval_core.io.rows.FIELD_ALIASES`)."""

from __future__ import annotations

from typing import Any

from qaeval_core.io.files import plain_records

__all__ = ["items_to_records"]


def items_to_records(items: Any, labels: Any = None) -> list[dict[str, Any]]:
    """Export rows of items (a DataFrame from ``repo.list_items``) with their current labels.

    Labels go into ``human = {scale: "three", raters: [{rater, label, rule?, note?,
    seconds?}]}`` so the file imports back with the same labels.
    """
    by_item: dict[int, list[dict[str, Any]]] = {}
    if labels is not None and len(labels):
        for rec in plain_records(labels):
            entry = {"rater": rec["user"], "label": rec["value"]}
            entry.update({k: rec[k] for k in ("rule", "note", "seconds") if rec.get(k) is not None})
            by_item.setdefault(rec["item_id"], []).append(entry)
    out = []
    for rec in plain_records(items):
        raters = by_item.get(rec["item_id"])
        out.append(
            {
                "id": rec["external_id"],
                "question": rec["question"],
                "references": rec["references"],
                "candidate": rec["candidate"],
                "context": rec.get("context"),
                "choices": rec.get("choices"),
                "wrong_answers": rec.get("wrong_answers"),
                "model": rec.get("qa_model"),
                "meta": rec.get("meta"),
                "human": {"scale": "three", "raters": raters} if raters else None,
            }
        )
    return out
