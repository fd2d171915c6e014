"""The judge file's envelope: kind, schema version, checksum, and every field validated.

:func:`read_config` turns a parsed file into the :class:`~qaeval_core.judge.Judge` constructor
arguments or fails with a message naming the file and the fix; :func:`config_checksum` is what
:meth:`Judge.to_config` writes. Kept apart from the Judge so the class reads as "apply", and
the format's rules (including which older versions still load) sit in one place.

Format (``schema_version`` 2; version 1 files, written before triage, still load: they have
no ``probability`` or ``triage`` and never say ``uncertain``)::

    {
      "kind": "qaeval-judge",
      "schema_version": 2,
      "name": "nq301-judge",
      "created_at": "2026-11-21T10:00:00+00:00",
      "qaeval_version": "0.1.0",
      "features": [
        {"column": "f1", "metric": {"id": "f1", "version": "1", "params": {...}},
         "config_hash": "0123456789abcdef"}
      ],
      "model": {"type": "threshold" | "fusion" | "stacker" | "panda", ...},
      "fitted_on": {"dataset": "nq301", "n_labels": 300, "n_positive": 160,
                    "date": "...", "seed": 0, "label_rule": "..."},
      "quality": {...cross-validated numbers...},
      "probability": {"method": "sigmoid", "coef": 1.3, "intercept": -0.1},
      "triage": null | {"threshold": 0.21, "share": 0.2, "cv_accuracy_confident": ...,
                        "cv_accuracy_combined": ..., "curve": [...]},
      "checksum": "sha256:<hex>"
    }

``model`` is the fitted combiner's ``to_dict()``: a cut and a Platt slope (threshold), the
layer-1 filters and the voters' thresholds (fusion), standardisation and coefficients
(stacker), or the refitted PANDA's vocabulary, idf and weights (panda, which reads the items'
text and may need no metric at all, so ``features`` can be empty only for it).

``checksum`` is the SHA-256 of the canonical JSON of everything else. It is not a signature
(anyone can recompute it); it exists so that a file edited by hand or damaged in transit fails
loudly with a clear message instead of silently scoring with a changed threshold. Every field
is also validated on load, and an unknown or older ``schema_version`` is refused with the fix.

``probability`` maps the combiner's score to a calibrated P(correct) and ``triage`` is the band
of doubtful items left to people (:mod:`qaeval_core.judge.triage`).

``cost`` (optional, still schema version 2: older readers ignore it and the checksum covers
it) records what the inputs cost where the judge was calibrated
(:mod:`qaeval_core.calibrate.cost`): ``{"unit": "seconds per 1,000 rows", "rows": 300,
"machine": {...}, "method": "...", "measured_at": "...", "source": "measured" | "cache" |
"cache and measured", "cached": {family: {"measured_at", "rows"}} (families read back from
the cost cache), "inputs": [{"column", "family", "s_per_1000", "load_s"}],
"judge_s_per_1000": 0.4, "judge_load_s": 0.9, "inputs_rule": "cheap" | "all",
"selection": null | {"families", "columns", "cost", "cv_accuracy", "tolerance", "max_cost",
"evaluated": [{"families", "cost", "cv_accuracy", "frontier", "chosen"}]}}``.

``guarantee`` (optional, likewise) is the triage band's guarantee from ``qaeval calibrate
--guarantee``: ``{"target", "risk", "share", "threshold", "labels": "calibration", "n_labels",
"n_decided", "n_right", "p_value", "lower_bound", "method"}`` (:mod:`qaeval_core.judge.guarantee`:
checked on load against the band and by rerunning its exact test).

``knowledge`` (optional, likewise) is the snapshot of accepted answers a judge fitted with
``qaeval calibrate --with-knowledge`` compares candidates to (:mod:`qaeval_core.judge.knowledge`:
per question key the accepted aliases and known wrong answers, the dataset and knowledge
version, and which similarity inputs the model reads); its inputs are computed from it when
scoring, never read from stored scores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from qaeval_core.errors import ConfigError
from qaeval_core.judge.cascade import LLMTier
from qaeval_core.judge.combiners import model_from_dict
from qaeval_core.judge.combiners.base import check_number
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.judge.guarantee import Guarantee
from qaeval_core.judge.knowledge import JudgeKnowledge
from qaeval_core.judge.triage import ProbabilityCalibrator, TriageBand

__all__ = [
    "JUDGE_KIND",
    "JUDGE_SCHEMA_VERSION",
    "MAX_CONFIG_DEPTH",
    "OLDEST_SCHEMA_VERSION",
    "config_checksum",
    "read_config",
]

JUDGE_KIND = "qaeval-judge"
JUDGE_SCHEMA_VERSION = 2
#: Oldest schema version still read (1: before calibrated probabilities and triage).
OLDEST_SCHEMA_VERSION = 1
#: How deep objects/lists may nest in a judge file (qaeval writes fewer than 10 levels); a
#: deeper one is refused before anything walks it recursively.
MAX_CONFIG_DEPTH = 32


def _canonical(data: Any) -> bytes:
    return json.dumps(
        data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def config_checksum(config: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of a config without its checksum field."""
    body = {k: v for k, v in config.items() if k != "checksum"}
    return "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests deeper than :data:`MAX_CONFIG_DEPTH` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping | list | tuple):
            if depth > MAX_CONFIG_DEPTH:
                return True
            children = value.values() if isinstance(value, Mapping) else value
            stack.extend((child, depth + 1) for child in children)
    return False


def _check_integers(data: Any, label: str) -> None:
    """Refuse an integer too large for a float anywhere in the file (free-form parts such as
    ``quality`` included): JSON integers have no size limit, and such a number would raise
    OverflowError wherever it is later formatted or computed with."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            try:
                check_number(value, path or "the file")
            except ConfigError as exc:
                raise ConfigError(f"{label}: {exc}") from None


def read_config(data: Any, label: str) -> dict[str, Any]:
    """Check a parsed judge file (kind, version, checksum, every field) and return the
    :class:`~qaeval_core.judge.Judge` constructor arguments; errors name the file and the fix."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{label}: a judge config is a JSON object, got {type(data).__name__}.")
    if _too_deep(data):
        raise ConfigError(
            f"{label}: objects/lists nest more than {MAX_CONFIG_DEPTH} levels deep; this is "
            "not a judge file qaeval wrote. Calibrate again to write it anew."
        )
    _check_integers(data, label)
    if data.get("kind") != JUDGE_KIND:
        raise ConfigError(
            f"{label} is not a qaeval judge config (kind={data.get('kind')!r}, expected "
            f"{JUDGE_KIND!r})."
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigError(f"{label}: schema_version must be an integer, got {version!r}.")
    if version < OLDEST_SCHEMA_VERSION:
        raise ConfigError(
            f"{label} was written with judge schema version {version}, which this qaeval "
            f"no longer reads (it reads versions {OLDEST_SCHEMA_VERSION}-"
            f"{JUDGE_SCHEMA_VERSION}). Calibrate again on the same labels to rebuild it."
        )
    if version > JUDGE_SCHEMA_VERSION:
        raise ConfigError(
            f"{label} uses judge schema version {version}, newer than this qaeval reads "
            f"({JUDGE_SCHEMA_VERSION}). Upgrade qaeval."
        )
    checksum = data.get("checksum")
    if not isinstance(checksum, str):
        raise ConfigError(f"{label} has no checksum; it was not written by qaeval.")
    try:
        expected = config_checksum(data)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{label} holds values that are not plain JSON: {exc}.") from None
    if checksum != expected:
        raise ConfigError(
            f"{label} fails its checksum: the file was changed after qaeval wrote it "
            "(hand edit or damage). Thresholds and weights must come from calibration; "
            "calibrate again instead of editing it."
        )
    raw_features = data.get("features")
    text_model = isinstance(data.get("model"), Mapping) and data["model"].get("type") == "panda"
    knowledge = None
    if data.get("knowledge") is not None:
        try:
            knowledge = JudgeKnowledge.from_dict(data["knowledge"])
        except ConfigError as exc:
            raise ConfigError(f"{label}: {exc}") from None
    # Only a text-reading model (panda) or the knowledge inputs may do without metrics.
    if not isinstance(raw_features, list) or (
        not raw_features and not text_model and knowledge is None
    ):
        raise ConfigError(f"{label}: features must be a non-empty list.")
    features = [
        FeatureSpec.from_dict(f, f"{label}: features[{i}]") for i, f in enumerate(raw_features)
    ]
    try:
        model = model_from_dict(data.get("model"), where="model")
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    for key in ("fitted_on", "quality"):
        if not isinstance(data.get(key, {}), Mapping):
            raise ConfigError(f"{label}: {key} must be an object.")
    probability = triage = None
    try:
        if data.get("probability") is not None:
            probability = ProbabilityCalibrator.from_dict(data["probability"])
        if data.get("triage") is not None:
            triage = TriageBand.from_dict(data["triage"])
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if triage is not None and probability is None:
        raise ConfigError(f"{label}: a triage band needs a probability calibration.")
    cascade = None
    if data.get("cascade") is not None:
        if probability is None:
            raise ConfigError(f"{label}: an LLM tier needs a probability calibration.")
        try:
            cascade = LLMTier.from_dict(data["cascade"])
        except ConfigError as exc:
            raise ConfigError(f"{label}: {exc}") from None
    guarantee = _read_guarantee(data, triage, cascade, label)
    cost = data.get("cost")
    if cost is not None:
        _check_cost(cost, f"{label}: cost")
    for key in ("name", "created_at", "qaeval_version"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            raise ConfigError(f"{label}: {key} must be a string or null.")
    return {
        "features": features,
        "model": model,
        "name": data.get("name"),
        "fitted_on": data.get("fitted_on", {}),
        "quality": data.get("quality", {}),
        "created_at": data.get("created_at"),
        "qaeval_version": data.get("qaeval_version"),
        "probability": probability,
        "triage": triage,
        "cost": cost,
        "cascade": cascade,
        "guarantee": guarantee,
        "knowledge": knowledge,
    }


def _read_guarantee(
    data: Mapping[str, Any], triage: TriageBand | None, cascade: LLMTier | None, label: str
) -> Guarantee | None:
    """The optional guarantee, checked against the band, its labels and its own test. An LLM
    tier changes which items the cheap judge decides alone, which the guarantee never tested."""
    if data.get("guarantee") is None:
        return None
    if cascade is not None:
        raise ConfigError(
            f"{label}: a guarantee was tested without an LLM tier; a judge cannot have both."
        )
    try:
        guarantee = Guarantee.from_dict(data["guarantee"], triage)
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    n_labels = (data.get("fitted_on") or {}).get("n_labels")
    if isinstance(n_labels, int) and n_labels != guarantee.n_labels:
        raise ConfigError(
            f"{label}: the guarantee rests on {guarantee.n_labels} labels but the judge was "
            f"fitted on {n_labels}; the file was edited after calibration."
        )
    return guarantee


def _cost_number(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"{where} must be a number >= 0, got {value!r}.")
    check_number(value, where)  # a 400-digit integer is >= 0 but no float


def _check_cost(cost: Any, where: str) -> None:
    """The optional ``cost`` record (measured input costs, cost-aware selection): its numbers
    are only reported, never used to score, but a malformed one is still refused."""
    if not isinstance(cost, Mapping):
        raise ConfigError(f"{where} must be an object or null.")
    inputs = cost.get("inputs")
    if not isinstance(inputs, list):
        raise ConfigError(f"{where}.inputs must be a list of measured inputs.")
    for i, entry in enumerate(inputs):
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}.inputs[{i}] must be an object.")
        for key in ("column", "family"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise ConfigError(f"{where}.inputs[{i}].{key} must be a non-empty string.")
        for key in ("s_per_1000", "load_s"):
            _cost_number(entry.get(key), f"{where}.inputs[{i}].{key}")
    for key in ("judge_s_per_1000", "judge_load_s"):
        if key in cost:
            _cost_number(cost[key], f"{where}.{key}")
    cached = cost.get("cached")
    if cached is not None and not (
        isinstance(cached, Mapping) and all(isinstance(v, Mapping) for v in cached.values())
    ):
        raise ConfigError(
            f"{where}.cached must map input families to {{measured_at, rows}} (or be absent)."
        )
    selection = cost.get("selection")
    if selection is not None and (
        not isinstance(selection, Mapping) or not isinstance(selection.get("evaluated"), list)
    ):
        raise ConfigError(f"{where}.selection must be null or an object with an evaluated list.")
