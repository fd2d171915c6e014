"""Human judgments in a row (``human``, ``labels``, ``label``/``rater``) as labels on 0/1/2.

Files carry judgments in several shapes and scales; the store keeps one scale (clearly
incorrect / unclear / clearly correct), so the conversion lives here, once: binary 1 -> 2 and
0 -> 0; ratings on a declared scale (default 1-5) by their place on it: the top quarter -> 2,
the bottom quarter -> 0, between -> 1 (1-5: >= 4 -> 2, 3 -> 1, <= 2 -> 0; 0-2 and 1-3: one
step each); ``null`` means "not rated" and is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from qaeval_core.io.cells import MAX_RATER_CHARS, BadValue, as_text, decode_json, is_missing
from qaeval_core.io.files import describe_kind

__all__ = [
    "GOLD_RATER",
    "LABEL_SCALES",
    "LabelScale",
    "RATING_SCALE",
    "RaterLabel",
    "check_rating_scale",
    "check_scale",
    "labels_of",
]

GOLD_RATER = "gold"
LabelScale = Literal["binary", "three"]
LABEL_SCALES = ("binary", "three")
#: The default scale of ``rating`` / ``rating_match`` values (``--rating-scale``).
RATING_SCALE = "1-5"
_RATING_SCALE = re.compile(r"\s*(\d+)\s*-\s*(\d+)\s*")


@dataclass(frozen=True)
class RaterLabel:
    """One rater's judgment on the 0/1/2 scale, as read from a file."""

    rater: str
    value: int
    rule: int | None = None
    note: str | None = None
    seconds: float | None = None


def _label_value(value: Any, scale: str, what: str) -> int:
    original = value
    if isinstance(value, str):
        s = value.strip().lower()
        value = {"true": 1, "false": 0, "yes": 1, "no": 0}.get(s, s)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise BadValue(f"{what} {original!r} is not a number") from None
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise BadValue(f"{what} must be a number, got {describe_kind(original)} {original!r}")
    if scale == "binary":
        if value not in (0, 1):
            raise BadValue(
                f"{what} {original!r} is not binary 0/1 (for 0/1/2 labels use label_scale='three')"
            )
        return 2 if value == 1 else 0
    if value not in (0, 1, 2):
        raise BadValue(f"{what} {original!r} is not 0, 1 or 2")
    return value


def check_rating_scale(scale: Any, what: str = "rating_scale") -> str:
    """``"LOW-HIGH"`` (integers, LOW < HIGH, e.g. ``1-5``, ``0-2``) normalised, or BadValue."""
    match = _RATING_SCALE.fullmatch(scale) if isinstance(scale, str) else None
    if match is None or int(match[1]) >= int(match[2]):
        raise BadValue(f"{what} must be a range LOW-HIGH such as 1-5 or 0-2, got {scale!r}")
    return f"{int(match[1])}-{int(match[2])}"


def _rating_value(value: Any, what: str, scale: str = RATING_SCALE) -> int:
    low, high = (int(x) for x in scale.split("-"))
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise BadValue(f"{what} {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        hint = "" if scale != RATING_SCALE else " (declare another scale: rating_scale='1-10')"
        raise BadValue(f"{what} must be a {scale} rating, got {value!r}{hint}")
    place = 4 * (value - low)  # in quarters of the scale's span (exact for integers)
    return 2 if place >= 3 * (high - low) else 0 if place <= high - low else 1


def check_scale(scale: Any, what: str = "label_scale") -> str:
    """``scale`` if it is one of :data:`LABEL_SCALES` (a row may name its own scale)."""
    if scale not in LABEL_SCALES:
        raise BadValue(f"{what} must be one of {', '.join(LABEL_SCALES)}, got {scale!r}")
    return str(scale)


def _rater_entry(
    entry: Any, scale: str, what: str, rating_scale: str = RATING_SCALE
) -> RaterLabel | None:
    if not isinstance(entry, dict):
        raise BadValue(
            f"{what} must be an object with a rater and a label, got {describe_kind(entry)}"
        )
    name = next(
        (entry[k] for k in ("rater", "annotator", "name") if not is_missing(entry.get(k))), None
    )
    if name is None:
        raise BadValue(f"{what} has no rater name")
    name = as_text(name, f"{what}.rater", limit=MAX_RATER_CHARS).strip()
    if not name:
        raise BadValue(f"{what}.rater is empty")
    if not is_missing(entry.get("label")):
        value = _label_value(entry["label"], scale, f"{what}.label")
    elif not is_missing(entry.get("rating_match")):
        value = _rating_value(entry["rating_match"], f"{what}.rating_match", rating_scale)
    elif not is_missing(entry.get("rating")):
        value = _rating_value(entry["rating"], f"{what}.rating", rating_scale)
    elif not is_missing(entry.get("binary")):
        value = _label_value(entry["binary"], "binary", f"{what}.binary")
    else:
        return None  # listed but did not rate this item
    rule = entry.get("rule")
    if not is_missing(rule):
        if isinstance(rule, float) and rule.is_integer():
            rule = int(rule)
        if isinstance(rule, bool) or not isinstance(rule, int) or not 1 <= rule <= 7:
            raise BadValue(f"{what}.rule must be a rule number 1-7, got {rule!r}")
    note = entry.get("note")
    note = None if is_missing(note) or note == "" else as_text(note, f"{what}.note")
    seconds = entry.get("seconds")
    if not is_missing(seconds):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise BadValue(f"{what}.seconds must be a non-negative number, got {seconds!r}")
        seconds = float(seconds)
    return RaterLabel(name, value, None if is_missing(rule) else rule, note, seconds)


def labels_of(
    fields: dict[str, Any], scale: str, rating_scale: str = RATING_SCALE
) -> tuple[list[RaterLabel], dict[str, Any]]:
    """Every rater label of a row, and what else ``human`` said (kept in the item's meta).

    ``rating_scale`` is the scale of ``rating``/``rating_match`` values unless ``human``
    names its own in ``rating_scale``."""
    labels: list[RaterLabel] = []
    summary: dict[str, Any] = {}
    human = fields.get("human")
    if human is not None:
        human = decode_json(human, "human", want=dict)
        if not isinstance(human, dict):
            raise BadValue(
                f"human must be an object like {{label, raters}}, got {describe_kind(human)}"
            )
        hscale = (
            scale if is_missing(human.get("scale")) else check_scale(human["scale"], "human.scale")
        )
        rscale = rating_scale
        if not is_missing(human.get("rating_scale")):
            rscale = check_rating_scale(human["rating_scale"], "human.rating_scale")
        raters = human.get("raters")
        if not is_missing(raters):
            if not isinstance(raters, list):
                raise BadValue(f"human.raters must be a list, got {describe_kind(raters)}")
            for i, entry in enumerate(raters, start=1):
                label = _rater_entry(entry, hscale, f"human.raters[{i}]", rscale)
                if label is not None:
                    labels.append(label)
        summary = {
            k: v
            for k, v in human.items()
            if k not in ("raters", "scale", "rating_scale") and not is_missing(v)
        }
        if not labels and "label" in summary:
            labels.append(
                RaterLabel(GOLD_RATER, _label_value(human["label"], hscale, "human.label"))
            )
            del summary["label"]
    extra = fields.get("labels")
    if extra is not None:
        extra = decode_json(extra, "labels", want=dict)
        if isinstance(extra, str):
            extra = decode_json(extra, "labels", want=list)
        if isinstance(extra, dict):
            for rater, value in extra.items():
                if not is_missing(value):
                    entry = {"rater": rater, "label": value}
                    labels.append(_rater_entry(entry, scale, f"labels[{rater!r}]"))  # type: ignore[arg-type]
        elif isinstance(extra, list):
            for i, entry in enumerate(extra, start=1):
                label = _rater_entry(entry, scale, f"labels[{i}]", rating_scale)
                if label is not None:
                    labels.append(label)
        else:
            raise BadValue(f"labels must be an object {{rater: label}}, got {describe_kind(extra)}")
    if fields.get("label") is not None:
        rater = fields.get("rater")
        name = GOLD_RATER if rater is None else as_text(rater, "rater", limit=MAX_RATER_CHARS)
        if not name.strip():
            raise BadValue("rater is empty")
        labels.append(RaterLabel(name.strip(), _label_value(fields["label"], scale, "label")))
    # One label per rater and item: repeats must agree.
    unique: dict[str, RaterLabel] = {}
    for label in labels:
        seen = unique.get(label.rater)
        if seen is not None and seen.value != label.value:
            raise BadValue(
                f"rater {label.rater!r} has two different labels ({seen.value}, {label.value})"
            )
        unique.setdefault(label.rater, label)
    return list(unique.values()), summary
