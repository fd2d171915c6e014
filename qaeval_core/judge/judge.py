"""A calibrated judge: metrics + a fitted combiner, stored as one versioned JSON file.

A judge file is what calibration produces and what ``qaeval score --config`` applies. It names
every metric it needs (id, version, parameters and config hash, so the scores it sees at
scoring time are computed exactly as during fitting), the fitted model that turns those scores
into a decision (a threshold, fusion layers, a logistic stacker: plain numbers, never pickle),
the data it was fitted on and its cross-validated quality.

The file's format (every field, and which older versions still load) is described and checked
in :mod:`qaeval_core.judge.config_file`.

Output of :meth:`Judge.judge` on a frame: every input column, plus ``judge_score`` (0-1; the
combiner's, >= 0.5 where it says correct), ``judge_correct`` (bool), ``judge_probability``
(calibrated P(correct); the score itself for a version-1 judge), ``judge_doubt``
(probability that the verdict is wrong), ``judge_outcome`` (``correct`` / ``incorrect`` /
``uncertain``), ``judge_reason`` (why: ``matched``, ``not_matched``, ``uncertain``,
``not_attempted``, ``extraction_failed``, ``hedged``, ``judge_error``;
:mod:`qaeval_core.judge.outcomes`, ``docs/outcomes.md``: a refusal is never correct, a
hedge is not correct by default, and a row a metric failed on is not correct and
``uncertain``, so there ``judge_correct`` can differ from
``judge_score >= 0.5``), ``judge_trace`` (JSON, only when asked for:
:mod:`qaeval_core.judge.trace`) and ``judge_<column>`` per metric used.

Why it is one module: it is the one :class:`Judge` class, whose load, save and apply methods
share its fields; the format and its checks (:mod:`.config_file`), the outcome rules
(:mod:`.outcomes`) and the trace (:mod:`.trace`) already live apart.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.io.item_frames import items_frame, items_from_frame
from qaeval_core.jsonable import to_jsonable
from qaeval_core.judge.cascade import CascadeResult, LLMTier
from qaeval_core.judge.combiners import CalibratedClassifier, as_binary
from qaeval_core.judge.config_file import (
    JUDGE_KIND,
    JUDGE_SCHEMA_VERSION,
    config_checksum,
    read_config,
)
from qaeval_core.judge.features import FeatureSpec
from qaeval_core.judge.guarantee import Guarantee
from qaeval_core.judge.knowledge import JudgeKnowledge
from qaeval_core.judge.outcomes import (
    FORCED_INCORRECT,
    answer_reasons,
    apply_outcomes,
    check_forced,
    row_errors,
)
from qaeval_core.judge.trace import judge_traces, tier_trace
from qaeval_core.judge.triage import ProbabilityCalibrator, TriageBand, doubt, outcomes
from qaeval_core.metrics.base import Metric
from qaeval_core.schema import Item
from qaeval_core.scoring import NAN_SCORE, ScoringJob, run_jobs

__all__ = ["COLUMN_PREFIX", "Judge"]

#: Prefix of the per-metric score columns a judge adds to a frame.
COLUMN_PREFIX = "judge_"


def _qaeval_version() -> str:
    try:
        from importlib.metadata import version

        return version("qaeval")
    except Exception:  # pragma: no cover - not installed (running from a checkout)
        return "unknown"


class Judge:
    """A calibrated answer-correctness judge, applied without a store or the app.

    Build one with :func:`qaeval_core.calibrate.fit_judge` (or ``qaeval calibrate``), save it
    with :meth:`save`, load it with :meth:`from_config`. Apply it with :meth:`judge` (a frame
    or items in, the judge's columns out) or scikit-learn's verbs, :meth:`predict`,
    :meth:`predict_proba` and :meth:`score`; :meth:`judge_scores` decides from metric scores
    already computed (:meth:`input_scores`).

    Examples
    --------
    >>> judge = Judge.from_config("judge.json")  # doctest: +SKIP
    >>> out = judge.judge(frame)  # doctest: +SKIP
    >>> out[["judge_score", "judge_correct"]].head()  # doctest: +SKIP
    >>> judge.predict(frame), judge.predict_proba(frame)[:, 1]  # doctest: +SKIP
    >>> judge.score(frame, frame["label"])  # accuracy against human labels  # doctest: +SKIP
    """

    def __init__(
        self,
        features: Sequence[FeatureSpec],
        model: CalibratedClassifier,
        *,
        name: str | None = None,
        fitted_on: Mapping[str, Any] | None = None,
        quality: Mapping[str, Any] | None = None,
        created_at: str | None = None,
        qaeval_version: str | None = None,
        probability: ProbabilityCalibrator | None = None,
        triage: TriageBand | None = None,
        cost: Mapping[str, Any] | None = None,
        forced_incorrect: Iterable[str] = FORCED_INCORRECT,
        cascade: LLMTier | None = None,
        guarantee: Guarantee | None = None,
        knowledge: JudgeKnowledge | None = None,
    ) -> None:
        self.features = list(features)
        self.model = model
        self.probability = probability
        self.triage = triage
        #: The triage band's guarantee (fixed-sequence testing), or None (:mod:`.guarantee`).
        self.guarantee = guarantee
        #: The accepted answers the knowledge inputs compare to, or None (:mod:`.knowledge`).
        self.knowledge = knowledge
        #: Answer-level reasons never judged correct (a scoring policy, not stored in the file).
        self.forced_incorrect = check_forced(frozenset(forced_incorrect))
        #: Whether results carry ``judge_trace`` unless a call says otherwise (:meth:`with_trace`).
        self.traced = False
        #: Measured input costs and the cost-aware input selection (see the format above).
        self.cost = None if cost is None else dict(cost)
        #: The LLM tier (cheap judge -> LLM -> people), or None (:mod:`.cascade`).
        self.cascade = cascade
        self.name = name
        self.fitted_on = dict(fitted_on or {})
        self.quality = dict(quality or {})
        self.created_at = created_at or datetime.now(UTC).isoformat(timespec="seconds")
        self.qaeval_version = qaeval_version or _qaeval_version()
        _check_columns(self.features, self.model, knowledge)
        self._metrics: dict[str, Metric] | None = None

    # -- config ------------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """The metric score columns the model reads, in feature order."""
        return [f.column for f in self.features]

    @property
    def input_columns(self) -> list[str]:
        """Every column the model reads: the metric scores, then the knowledge inputs."""
        return self.columns + ([] if self.knowledge is None else list(self.knowledge.columns))

    def to_config(self) -> dict[str, Any]:
        """The JSON-ready config, checksum included."""
        config = {
            "kind": JUDGE_KIND,
            "schema_version": JUDGE_SCHEMA_VERSION,
            "name": self.name,
            "created_at": self.created_at,
            "qaeval_version": self.qaeval_version,
            "features": [f.to_dict() for f in self.features],
            "model": to_jsonable(self.model.to_dict()),
            "fitted_on": to_jsonable(self.fitted_on),
            "quality": to_jsonable(self.quality),
            "probability": None if self.probability is None else self.probability.to_dict(),
            "triage": None if self.triage is None else to_jsonable(self.triage.to_dict()),
        }
        if self.cost is not None:  # written only when measured: older files stay as they were
            config["cost"] = to_jsonable(self.cost)
        if self.cascade is not None:  # likewise only with an LLM tier
            config["cascade"] = to_jsonable(self.cascade.to_dict())
        if self.guarantee is not None:  # and with a guaranteed band
            config["guarantee"] = to_jsonable(self.guarantee.to_dict())
        if self.knowledge is not None:  # and with taught answers
            config["knowledge"] = to_jsonable(self.knowledge.to_dict())
        config["checksum"] = config_checksum(config)
        return config

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the config as indented JSON (atomically: a crash never leaves half a file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.to_config(), indent=2, ensure_ascii=False) + "\n", "utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | Mapping[str, Any]) -> Judge:
        """Load and validate a judge from a file path or an already parsed dict."""
        if isinstance(source, Mapping):
            return cls._from_dict(source, "judge config")
        path = Path(source)
        label = str(path)
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            raise ConfigError(f"Judge config {label} does not exist.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Cannot read judge config {label}: {exc}.") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{label} is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                f"{exc.colno}); it may have been edited by hand. Calibrate again to write it "
                "anew."
            ) from None
        except RecursionError:
            raise ConfigError(
                f"{label} nests objects or lists too deeply to read; a judge config is shallow "
                "(it was not written by qaeval). Calibrate again to write it anew."
            ) from None
        return cls._from_dict(data, label)

    @classmethod
    def _from_dict(cls, data: Any, label: str) -> Judge:
        parts = read_config(data, label)
        try:
            judge = cls(**parts)
        except ConfigError as exc:
            raise ConfigError(f"{label}: {exc}") from None
        # Fail at load time, not half-way through scoring, if a metric is unknown or changed.
        judge.metrics()
        return judge

    # -- scoring -----------------------------------------------------------------------------
    def metrics(self) -> dict[str, Metric]:
        """The metric object per feature column (built once, checked against the config)."""
        if self._metrics is None:
            self._metrics = {f.column: f.build() for f in self.features}
        return self._metrics

    def input_scores(
        self, items: Sequence[Item], *, progress: bool = False, batch_size: int | None = None
    ) -> tuple[pd.DataFrame, list[str | None]]:
        """The inputs the model reads, one column per feature and one row per item (the one
        scoring loop, :func:`qaeval_core.scoring.run_jobs`, with its NaN policy), and per item
        what failed (``"<column>: <error>"`` for each metric that raised on it or gave a
        non-finite score; None where all worked). With :attr:`knowledge`, its inputs follow
        the metric scores (:attr:`input_columns`). :meth:`judge_scores` decides from them."""
        items = list(items)
        jobs = [ScoringJob(column, metric, items) for column, metric in self.metrics().items()]
        results = run_jobs(jobs, progress=progress, batch_size=batch_size, desc="judge inputs")
        cols = {column: np.asarray(res.scores, dtype=float) for column, res in results.items()}
        frame = pd.DataFrame(cols, columns=self.columns, index=pd.RangeIndex(len(items)))
        if self.knowledge is not None:
            frame = pd.concat([frame, self.knowledge.similarity(items)], axis=1)
        return frame, row_errors(results, len(items))

    def _with_knowledge(self, scores: pd.DataFrame, items: Sequence[Item] | None) -> pd.DataFrame:
        """``scores`` with the knowledge inputs added from ``items`` where they are absent (a
        caller with stored metric scores, e.g. a stored dataset, has only those)."""
        if self.knowledge is None or set(self.knowledge.columns) <= set(scores.columns):
            return scores
        if items is None or len(items) != len(scores):
            raise ConfigError(
                "This judge compares answers with the answers people taught it: pass the "
                "scored items too."
            )
        extra = self.knowledge.similarity(items).set_index(scores.index)
        return pd.concat([scores.drop(columns=list(extra.columns), errors="ignore"), extra], axis=1)

    @property
    def needs_text(self) -> bool:
        """Whether the model also reads the items' text (a refitted PANDA does)."""
        return bool(getattr(self.model, "needs_text", False))

    def judge_scores(
        self,
        scores: pd.DataFrame,
        items: Sequence[Item] | None = None,
        *,
        errors: Sequence[str | None] | None = None,
        trace: bool | None = None,
    ) -> pd.DataFrame:
        """``judge_score``, ``judge_correct`` ... ``judge_reason`` from precomputed metric scores
        (a stored dataset's, a Ray worker's, :meth:`input_scores`'): :meth:`judge` without
        computing the inputs.

        ``items`` (aligned with the rows) are needed when :attr:`needs_text` is true, and give
        the answer-level reasons (not attempted, hedged, extraction failed); ``errors`` (per
        row, what failed or None, as :meth:`input_scores` gives) marks ``judge_error`` rows;
        ``trace`` adds ``judge_trace`` (needs ``items``; None: :attr:`traced`).
        """
        trace = self.traced if trace is None else trace
        if len(scores) == 0 and not items:
            return pd.DataFrame(
                {
                    "judge_score": pd.Series([], dtype=float),
                    "judge_correct": pd.Series([], dtype=bool),
                    "judge_probability": pd.Series([], dtype=float),
                    "judge_doubt": pd.Series([], dtype=float),
                    "judge_outcome": pd.Series([], dtype=object),
                    "judge_reason": pd.Series([], dtype=object),
                    **({"judge_trace": pd.Series([], dtype=object)} if trace else {}),
                }
            )
        scores = self._with_knowledge(scores, items)
        missing = [c for c in self.input_columns if c not in scores.columns]
        if missing:
            raise ConfigError(f"Scores lack the column(s) {missing} the judge needs.")
        X = _substituted(scores[self.input_columns], errors)
        if self.needs_text:
            if items is None or len(items) != len(scores):
                raise ConfigError("This judge reads the items' text: pass the scored items too.")
            X = pd.concat([X.reset_index(drop=True), items_frame(items)], axis=1)
            X.index = scores.index
        p = self.model.predict_proba(X)[:, 1]
        verdict = p >= 0.5
        prob = p if self.probability is None else self.probability.predict(p)
        item_doubt = doubt(prob, verdict)
        routed = (
            np.zeros(len(p), dtype=bool)
            if self.triage is None
            else self.triage.uncertain(item_doubt)
        )
        tiers = None
        cheap_prob = prob
        if self.cascade is not None:
            decided = self._cascade(scores, items, prob)
            verdict, prob, item_doubt, routed = (
                decided.verdict,
                decided.probability,
                decided.doubt,
                decided.routed,
            )
            tiers = decided
            if any(decided.llm_missing):  # the LLM failed on items it had to read
                errors = list(errors) if errors is not None else [None] * len(scores)
                for i, why in enumerate(decided.llm_missing):
                    if why is not None:
                        note = f"{self.cascade.column}: no verdict: {why}"
                        errors[i] = note if errors[i] is None else f"{errors[i]}; {note}"
        if (trace or errors is not None) and (items is None or len(items) != len(scores)):
            raise ConfigError("A trace or per-row errors need the scored items (one per row).")
        answer = None if items is None else answer_reasons(items)
        final = apply_outcomes(
            verdict,
            prob,
            item_doubt,
            outcomes(verdict, routed),
            routed=routed,
            answer=answer,
            errors=errors,
            forced_incorrect=self.forced_incorrect,
        )
        out = pd.DataFrame(
            {
                "judge_score": p,
                "judge_correct": final.correct,
                "judge_probability": final.probability,
                "judge_doubt": final.doubt,
                "judge_outcome": final.outcome,
                "judge_reason": final.reason,
            },
            index=scores.index,
        )
        if tiers is not None:
            out["judge_tier"] = tiers.tier
            out["judge_llm_probability"] = tiers.llm_probability
        if trace:
            assert items is not None and answer is not None
            out["judge_trace"] = judge_traces(
                self.model,
                X,
                items,
                inputs=scores[self.input_columns],
                score=p,
                probability=final.probability,
                reason=final.reason,
                answer=answer,
                errors=errors,
            )
            if tiers is not None:
                out["judge_trace"] = [
                    tier_trace(text, tier, cheap, llm)
                    for text, tier, cheap, llm in zip(
                        out["judge_trace"],
                        tiers.tier,
                        cheap_prob,
                        tiers.llm_probability,
                        strict=True,
                    )
                ]
        return out

    def _cascade(
        self, scores: pd.DataFrame, items: Sequence[Item] | None, cheap: np.ndarray
    ) -> CascadeResult:
        """Tiers 2 and 3: the LLM on the band tier 1 doubts (stored ``llm_judge`` scores in
        ``scores`` are used where present), the combined verdict, and people."""
        assert self.cascade is not None
        column = self.cascade.column
        known = scores[column].to_numpy(dtype=float) if column in scores.columns else None
        band = self.cascade.to_llm(doubt(cheap, cheap >= 0.5))
        lacking = band.any() and (known is None or not np.isfinite(known[band]).all())
        if lacking and (items is None or len(items) != len(scores)):
            raise ConfigError(
                "This judge asks an LLM about the items it doubts: pass the items too."
            )
        llm, missing = self.cascade.llm_verdicts(items or [], cheap, known=known)
        return self.cascade.decide(cheap, llm, missing)

    def with_llm_share(self, llm_share: float) -> Judge:
        """The same judge sending about ``llm_share`` of the items to its LLM tier, read off
        the cascade curve stored at calibration (no refitting)."""
        if self.cascade is None:
            raise ConfigError(
                "This judge has no LLM tier; calibrate again with an LLM model to add one."
            )
        judge = copy.copy(self)
        judge.cascade = self.cascade.at(llm_share=llm_share)
        return judge

    def with_share(self, share: float) -> Judge:
        """The same judge routing about ``share`` of the items to people (0: none), read off
        the effort curve stored at calibration (no refitting)."""
        if self.triage is None:
            raise ConfigError(
                f"Judge {self.name or ''!s} has no effort curve (it was written before triage, "
                "or without calibrated probabilities); calibrate again with a human share "
                "(human_share=S) to get one."
            )
        judge = copy.copy(self)
        judge.triage = self.triage.at_share(share)
        if self.guarantee is not None and judge.triage.share != self.guarantee.share:
            judge.guarantee = None  # it was tested for its own band only
        if self.cascade is not None:  # with an LLM tier, people get what the cascade doubts
            judge.cascade = self.cascade.at(human_share=share)
        return judge

    def with_forced_incorrect(self, reasons: Iterable[str]) -> Judge:
        """The same judge never judging correct the answers with these answer-level reasons
        (``("not_attempted", "hedged")``, strict NAQT, is the default; ``("not_attempted",)``
        leaves hedges to the combiner; ``()`` leaves every verdict to it). A scoring policy:
        not stored in the judge file."""
        judge = copy.copy(self)
        judge.forced_incorrect = check_forced(frozenset(reasons))
        return judge

    def with_trace(self, on: bool = True) -> Judge:
        """The same judge adding ``judge_trace`` to every result (``qaeval score --trace``)."""
        judge = copy.copy(self)
        judge.traced = bool(on)
        return judge

    # -- the doors: judge, and scikit-learn's verbs ------------------------------------------
    def judge(
        self,
        data: pd.DataFrame | Sequence[Item],
        *,
        progress: bool = False,
        trace: bool | None = None,
    ) -> pd.DataFrame:
        """The judge's verdicts on ``data``: the main door.

        A DataFrame gives every input column plus the judge's columns (``judge_score``,
        ``judge_correct`` ... ``judge_reason``, the ``judge_<column>`` inputs it used and
        ``judge_trace`` when ``trace``; None: :attr:`traced`); existing ``judge_*`` columns
        (from an earlier run) are replaced. It needs ``question``, ``references`` (a list, or a
        string of ``/``-separated aliases) and ``candidate`` columns (the aliases of
        :mod:`qaeval_core.io` work too). A sequence of :class:`~qaeval_core.schema.Item` gives
        the judge's columns alone, one row per item.
        """
        if isinstance(data, pd.DataFrame):
            scored = self._judge_items(items_from_frame(data), progress=progress, trace=trace)
            scored.index = data.index
            out = data.copy()
            for col in scored.columns:
                out[col] = scored[col]
            return out
        return self._judge_items(_as_items(data), progress=progress, trace=trace)

    def _judge_items(
        self, items: list[Item], *, progress: bool, trace: bool | None
    ) -> pd.DataFrame:
        scores, errors = self.input_scores(items, progress=progress)
        decided = self.judge_scores(scores, items, errors=errors, trace=trace)
        return pd.concat([decided, scores.add_prefix(COLUMN_PREFIX)], axis=1)

    def _decided(self, data: pd.DataFrame | Sequence[Item]) -> pd.DataFrame:
        """The judge's columns for ``data`` (a frame or items, as :meth:`judge`), no trace."""
        items = items_from_frame(data) if isinstance(data, pd.DataFrame) else _as_items(data)
        return self._judge_items(items, progress=False, trace=False)

    def predict_proba(self, data: pd.DataFrame | Sequence[Item]) -> np.ndarray:
        """P(incorrect), P(correct) per row of ``data`` (a frame or items, as :meth:`judge`),
        shape ``(n, 2)`` like a scikit-learn classifier's.

        Column 1 is ``judge_probability``: the judge's calibrated P(correct), the probability
        its doubt and triage band are computed from (the combiner's ``judge_score`` itself for
        a judge without a calibrated probability, e.g. a version-1 file; with an LLM tier, the
        combined tiers'; 0 where an outcome rule decided the answer is not correct). It need
        not cross 0.5 exactly where :meth:`predict` flips: the verdict is the combiner's and a
        row a metric failed on is never judged correct.
        """
        p = self._decided(data)["judge_probability"].to_numpy(dtype=float)
        return np.column_stack([1.0 - p, p])

    def predict(self, data: pd.DataFrame | Sequence[Item]) -> np.ndarray:
        """Whether each row of ``data`` (a frame or items, as :meth:`judge`) is judged correct
        (``judge_correct``; an ``uncertain`` row is not), a boolean array."""
        return self._decided(data)["judge_correct"].to_numpy(dtype=bool)

    def score(self, data: pd.DataFrame | Sequence[Item], y: Any) -> float:
        """Accuracy of :meth:`predict` on ``data`` against the human labels ``y`` (one per row).

        ``y`` holds booleans or 0/1 (1 = correct), or the 3-point scale (recognised by a 2):
        2 (clearly correct) is correct, 0 (clearly incorrect) is not, and 1 (unclear) is
        refused, since counting it either way would misstate the accuracy (drop those rows).
        """
        labels = _correct_labels(y)
        predicted = self.predict(data)
        if len(labels) != len(predicted):
            raise InputError(f"y has {len(labels)} labels for {len(predicted)} rows of data.")
        return float(np.mean(predicted == labels)) if len(labels) else float("nan")

    def __repr__(self) -> str:
        return (
            f"Judge(name={self.name!r}, model={self.model.type_name}, "
            f"metrics={[f.metric_id for f in self.features]})"
        )


def _substituted(X: pd.DataFrame, errors: Sequence[str | None] | None) -> pd.DataFrame:
    """``X`` with the NaN inputs of failed rows (a metric gave no verdict there) replaced by
    :data:`~qaeval_core.scoring.NAN_SCORE` for the model only: those rows are ``judge_error``
    whatever the model says, and a NaN would stop the combiner for every row."""
    if errors is None or len(errors) != len(X):
        return X
    failed = np.array([e is not None for e in errors], dtype=bool)
    values = X.to_numpy(dtype=float, copy=True)
    hole = np.isnan(values) & failed[:, None]
    if not hole.any():
        return X
    values[hole] = NAN_SCORE
    return pd.DataFrame(values, columns=X.columns, index=X.index)


def _as_items(data: Sequence[Item]) -> list[Item]:
    """``data`` as a list of items, else an error saying what :meth:`Judge.judge` takes."""
    items = list(data)
    bad = next((x for x in items if not isinstance(x, Item)), None)
    if isinstance(data, (str, bytes)) or bad is not None:
        raise InputError(
            "A judge takes a DataFrame (question, references, candidate columns) or a sequence "
            f"of Item; got {type(data).__name__}"
            + ("" if bad is None else f" holding {type(bad).__name__}")
            + "."
        )
    return items


def _correct_labels(y: Any) -> np.ndarray:
    """Human labels as booleans (correct or not): booleans or 0/1, or the 3-point scale
    (recognised by a 2: 2 correct, 0 not, 1 "unclear" refused)."""
    arr = np.asarray(y)
    if arr.dtype != bool and arr.ndim == 1:
        try:
            num = arr.astype(float)
        except (TypeError, ValueError):
            num = None
        if num is not None and (num == 2).any():
            values = set(np.unique(num).tolist())
            if 1.0 in values:
                raise InputError(
                    "y is on the 3-point scale (it holds 2) and holds 1 (unclear): an unclear "
                    "label is neither correct nor incorrect, so the accuracy cannot count it; "
                    "drop those rows (or pass booleans)."
                )
            bad = sorted(values - {0.0, 2.0}, key=str)
            if bad:
                raise InputError(
                    "y on the 3-point scale must hold 0 (clearly incorrect) or 2 (clearly "
                    f"correct); found {bad[:5]}."
                )
            return num == 2
    return as_binary(arr, name="y")


def _check_columns(
    features: Sequence[FeatureSpec],
    model: CalibratedClassifier,
    knowledge: JudgeKnowledge | None = None,
) -> None:
    cols = [f.column for f in features] + ([] if knowledge is None else list(knowledge.columns))
    if len(set(cols)) != len(cols):
        raise ConfigError(f"feature columns must be unique, got {cols}.")
    model_cols = getattr(model, "feature_names_in_", None)
    if model_cols is not None and [str(c) for c in model_cols] != cols:
        raise ConfigError(
            f"the model reads columns {[str(c) for c in model_cols]} but the features are {cols}."
        )
