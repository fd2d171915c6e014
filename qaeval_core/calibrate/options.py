"""The calibration's options, one small object per concept, each checking itself.

* :class:`CrossValidation` - how quality is measured: grouped folds, their seed, bootstrap
  resamples, and how much better another combiner must be to replace the default;
* :class:`TriagePolicy` - how the triage band is chosen: a share of items for people, a target
  accuracy, or a guaranteed accuracy with its risk (one of them);
* :class:`CostPolicy` - what the judge's inputs may cost: the cheapest inputs that lose at most
  ``max_accuracy_loss`` against the best, or every input, a cap, and how costs are measured;
* :class:`InputRule` - the rule :func:`~qaeval_core.calibrate.select.select_inputs` picks the
  input set by;
* :class:`LLMTierPolicy` - the LLM tier of a cascade (cheap judge -> LLM -> people): which LLM,
  asked how, and the shares of items it and people get (on the grid :data:`LLM_SHARES` x
  :data:`HUMAN_SHARES` its curve is fitted at).

Why objects: :func:`~qaeval_core.workflows.calibrate_dataset`,
:func:`~qaeval_core.calibrate.fit.fit_judge` and
:func:`~qaeval_core.calibrate.select.select_inputs` took 14 to 24 parameters each, threaded by
hand through the CLI, the Calibrate page, bench/ and experiments/, and the CLI re-checked some
of them in its own words. Each object is frozen, has the defaults the functions had (so a call
without it fits the same judge), and checks its fields when it is made: a bad value raises an
:class:`~qaeval_core.errors.InputError` naming the field as the parameter
(:attr:`~qaeval_core.errors.QAEvalError.param`), before any label is read or score computed.
The library, the page and the CLI (which shows the name as its flag,
:mod:`qaeval_core.cli.flags`) thus refuse the same values in the same words, written here. The
LLM tier is fitted after the calibration, by the LLM reading every label the fit used (minutes):
its object is made, and :meth:`LLMTierPolicy.check_triage` run, before the calibration starts.
``dataclasses.replace`` makes a changed copy, checked again.

Two names say what was once ``tolerance`` in both (issue 34): ``CrossValidation.win_margin``
(0.01: the accuracy another combiner must gain over the first to replace it) and
``CostPolicy.max_accuracy_loss`` / ``InputRule.max_accuracy_loss`` (0.003: the accuracy a
cheaper input set may lose against the best). ``tolerance=`` is still taken, and ``.tolerance``
still read, with a :class:`DeprecationWarning`, until the next release.

Light on purpose: nothing here imports numpy or pandas at module level, so ``qaeval calibrate
--help`` reads its defaults from these objects without loading them.

Why it is one module: the objects are one calibration's options, read together by the CLI and
the page, and share their checks (whole numbers, flags, renamed keywords) and their wording.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from dataclasses import InitVar, dataclass, fields
from typing import Any

from qaeval_core.errors import InputError, OptionError
from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM
from qaeval_core.llm.prompts import PROMPTS
from qaeval_core.vocabulary import INPUT_RULES

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_COST_TOLERANCE",
    "DEFAULT_MAX_ACCURACY_LOSS",
    "DEFAULT_RISK",
    "HUMAN_SHARES",
    "LLM_SHARES",
    "CostPolicy",
    "CrossValidation",
    "InputRule",
    "LLMTierPolicy",
    "TriagePolicy",
    "check_target_accuracy",
]

#: Candidate combiners compared by default; the first is preferred unless another is clearly
#: better (:mod:`qaeval_core.calibrate.fit`).
DEFAULT_CANDIDATES: tuple[str, ...] = ("stacker", "threshold", "fusion")
#: How much cross-validated accuracy (0.003 = 0.3 points) a cheaper input set may give up.
DEFAULT_MAX_ACCURACY_LOSS = 0.003
#: Deprecated name of :data:`DEFAULT_MAX_ACCURACY_LOSS` (until the next release).
DEFAULT_COST_TOLERANCE = DEFAULT_MAX_ACCURACY_LOSS
#: The chance a guarantee may fail when only the guaranteed accuracy is given (90% confidence).
DEFAULT_RISK = 0.1
#: The shares of items an LLM tier reads (the ones the cheap judge doubts most) that its
#: cross-validated curve is fitted at (:mod:`qaeval_core.calibrate.cascade`).
LLM_SHARES: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
#: The shares of items left to people (the cascade's most doubtful) of that curve.
HUMAN_SHARES: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _whole(owner: object, name: str, minimum: int, meaning: str) -> None:
    """The field ``name`` as an ``int`` of at least ``minimum`` (numpy integers accepted)."""
    value = getattr(owner, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise OptionError(
            f"{name} must be >= {minimum}, a whole number ({meaning}), got {value!r}.", param=name
        )
    object.__setattr__(owner, name, int(value))


def _flag(owner: object, name: str) -> None:
    value = getattr(owner, name)
    if not isinstance(value, bool):
        raise OptionError(f"{name} must be True or False, got {value!r}.", param=name)


def _open_unit(name: str, value: Any, example: str) -> float:
    """``value`` as a float strictly between 0 and 1, else an error naming ``name``."""
    if not _is_number(value) or not 0 < value < 1:
        raise OptionError(f"{name} must be in (0, 1) (e.g. {example}), got {value!r}.", param=name)
    return float(value)


def _renamed(owner: object, old: str, new: str, value: Any) -> None:
    """Take a value given under the field's old name ``old`` (a deprecated keyword: an
    ``InitVar`` defaulting to None) as ``new``, with a :class:`DeprecationWarning`; giving both
    names different values is refused."""
    if value is None:
        return
    cls = type(owner).__name__
    warnings.warn(
        f"{cls}({old}=...) is renamed {cls}({new}=...); {old} goes in the next release.",
        DeprecationWarning,
        stacklevel=4,
    )
    default = next(f.default for f in fields(owner) if f.name == new)  # type: ignore[arg-type]
    given = getattr(owner, new)
    if given != default and given != value:
        raise OptionError(f"Give {new} only ({old} is its old name), got both.", param=new)
    object.__setattr__(owner, new, value)


def _old_name(cls: type, old: str, new: str) -> None:
    """Let ``obj.<old>`` read ``obj.<new>`` until the next release, with a warning.
    ``dataclasses.replace`` reads every init argument, the old name included: it gets None
    (the keyword's default), so a copy neither warns nor sees the value twice."""

    def read(self: object) -> Any:
        if sys._getframe(1).f_globals.get("__name__") == "dataclasses":
            return None
        warnings.warn(
            f"{cls.__name__}.{old} is renamed {cls.__name__}.{new}; {old} goes in the next "
            "release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    setattr(cls, old, property(read))


def check_target_accuracy(target_accuracy: Any) -> float:
    """``target_accuracy`` as a float in (0, 1], else an error naming it (shared with
    :func:`~qaeval_core.calibrate.triage.fit_band`)."""
    if not _is_number(target_accuracy) or not 0 < target_accuracy <= 1:
        raise InputError(
            f"target_accuracy must be in (0, 1] (e.g. 0.95), got {target_accuracy!r}.",
            param="target_accuracy",
        )
    return float(target_accuracy)


@dataclass(frozen=True)
class CrossValidation:
    """How calibration measures quality and compares combiners.

    ``n_splits`` folds, grouped by question (answers to one question are never split across a
    fold); ``seed`` draws the folds, the bootstrap and, in
    :func:`~qaeval_core.workflows.calibrate_dataset`, the labels used and the cost sample;
    ``n_boot`` bootstrap resamples over questions give the 95% intervals; the first candidate
    combiner wins unless another's cross-validated accuracy is higher by more than
    ``win_margin`` (0.01: one point; why in :mod:`qaeval_core.calibrate.fit`; ``tolerance``
    is its deprecated name).
    """

    n_splits: int = 5
    seed: int = 0
    n_boot: int = 2000
    win_margin: float = 0.01
    tolerance: InitVar[float | None] = None  # deprecated name of win_margin

    def __post_init__(self, tolerance: float | None) -> None:
        _renamed(self, "tolerance", "win_margin", tolerance)
        _whole(self, "n_splits", 2, "folds of cross-validation, e.g. 5")
        _whole(self, "seed", 0, "any fixed number gives the same folds again")
        _whole(self, "n_boot", 1, "bootstrap resamples, e.g. 2000")
        if not _is_number(self.win_margin) or not 0 <= self.win_margin <= 1:
            raise OptionError(
                "win_margin must be in [0, 1] (the accuracy another combiner must gain over "
                f"the first to win: 0.01 is one point), got {self.win_margin!r}.",
                param="win_margin",
            )


@dataclass(frozen=True)
class TriagePolicy:
    """How the judge's triage band (the items it leaves to people as ``uncertain``) is chosen.

    At most one of: ``human_share`` (about that share of the items goes to people, the most
    doubtful ones), ``target_accuracy`` (the smallest share whose cross-validated combined
    accuracy, people on the routed items and the judge on the rest, reaches it), or
    ``guarantee`` (the widest band on which the judge alone is right on at least that share of
    what it decides, with probability at least ``1 - risk``;
    :mod:`qaeval_core.calibrate.guarantee`). None of them: the judge decides everything.
    ``risk`` goes with ``guarantee`` only and is :data:`DEFAULT_RISK` when not given.
    """

    human_share: float | None = None
    target_accuracy: float | None = None
    guarantee: float | None = None
    risk: float | None = None

    def __post_init__(self) -> None:
        if self.human_share is not None:
            from qaeval_core.judge.triage import check_share

            check_share(self.human_share, param="human_share")
        if self.target_accuracy is not None:
            check_target_accuracy(self.target_accuracy)
        if self.guarantee is not None:
            _open_unit(
                "guarantee", self.guarantee, "0.95: right on at least 95% of what it decides"
            )
        if self.risk is not None:
            _open_unit("risk", self.risk, "0.1: 90% confidence")
        if self.human_share is not None and self.target_accuracy is not None:
            raise OptionError("Give a human share or a target accuracy, not both.")
        if self.guarantee is not None and (
            self.human_share is not None or self.target_accuracy is not None
        ):
            raise OptionError("Give a human share, a target accuracy or a guarantee: one of them.")
        if self.risk is not None and self.guarantee is None:
            raise OptionError(
                "risk goes with guarantee=G: it is the chance allowed that the guarantee fails "
                "(e.g. guarantee=0.95, risk=0.1).",
                param="risk",
            )
        if self.guarantee is not None and self.risk is None:
            object.__setattr__(self, "risk", DEFAULT_RISK)

    @property
    def share(self) -> float:
        """The share routed to people when neither a target nor a guarantee chooses it."""
        return 0.0 if self.human_share is None else float(self.human_share)


@dataclass(frozen=True)
class InputRule:
    """The rule :func:`~qaeval_core.calibrate.select.select_inputs` picks the input set by.

    The cheapest input set whose cross-validated accuracy loses at most ``max_accuracy_loss``
    (0.003: 0.3 points; ``tolerance`` is its deprecated name) against the best set evaluated,
    among sets costing at most ``max_cost`` seconds per 1,000 rows when given. The defaults are
    the plain rule; three stricter or faster variants, none better on held-out rows
    (``experiments/results/cost_aware_rules.md``): ``repeats`` fold assignments averaged, a
    one-sided ``confidence`` of losing at most that much, and
    ``tune_once`` (a tuned penalty tuned once per fold on every input).
    """

    max_accuracy_loss: float = DEFAULT_MAX_ACCURACY_LOSS
    max_cost: float | None = None
    repeats: int = 1
    confidence: float | None = None
    tune_once: bool = False
    tolerance: InitVar[float | None] = None  # deprecated name of max_accuracy_loss

    def __post_init__(self, tolerance: float | None) -> None:
        _renamed(self, "tolerance", "max_accuracy_loss", tolerance)
        loss = self.max_accuracy_loss
        if not _is_number(loss) or not 0 <= loss < 1:
            points = f", {loss * 100:g} points" if _is_number(loss) else ""
            raise OptionError(
                "max_accuracy_loss must be in [0, 1): the share of accuracy a cheaper input set "
                f"may lose against the best (0.003 is 0.3 points), got {loss!r}{points}.",
                param="max_accuracy_loss",
            )
        if self.max_cost is not None and not (
            _is_number(self.max_cost) and math.isfinite(self.max_cost) and self.max_cost > 0
        ):
            raise OptionError(
                f"max_cost must be > 0 seconds per 1,000 rows (e.g. 5), got {self.max_cost!r}.",
                param="max_cost",
            )
        _whole(self, "repeats", 1, "fold assignment(s) each input set's accuracy is averaged over")
        if self.confidence is not None and not (
            _is_number(self.confidence) and 0.5 <= self.confidence < 1
        ):
            raise OptionError(
                f"confidence must be in [0.5, 1) (e.g. 0.95) or None, got {self.confidence!r}.",
                param="confidence",
            )
        _flag(self, "tune_once")


@dataclass(frozen=True)
class CostPolicy:
    """What the judge's inputs may cost, and how their cost is measured (issue 15).

    ``inputs="cheap"`` (the default): each input's cost is measured and the judge reads the
    cheapest input families whose cross-validated accuracy loses at most ``max_accuracy_loss``
    against the best (:class:`InputRule`; ``tolerance`` is its deprecated name), costing at
    most ``max_cost`` seconds per 1,000 rows when given;
    ``"all"``: every input, and no cost measured unless ``max_cost`` is given. Costs are
    measured on at most ``sample`` of the labelled items and cached per machine;
    ``remeasure=True`` measures them again (:func:`~qaeval_core.calibrate.cost.measure_costs`).
    """

    inputs: str = "cheap"
    max_cost: float | None = None
    max_accuracy_loss: float = DEFAULT_MAX_ACCURACY_LOSS
    sample: int = 300
    remeasure: bool = False
    tolerance: InitVar[float | None] = None  # deprecated name of max_accuracy_loss

    def __post_init__(self, tolerance: float | None) -> None:
        _renamed(self, "tolerance", "max_accuracy_loss", tolerance)
        if self.inputs not in INPUT_RULES:
            raise OptionError(
                f"inputs must be one of {', '.join(INPUT_RULES)}, got {self.inputs!r}.",
                param="inputs",
            )
        self.rule()  # max_accuracy_loss and max_cost, checked by the rule that uses them
        _whole(self, "sample", 1, "labelled items the costs are measured on, e.g. 300")
        _flag(self, "remeasure")

    @property
    def measures_costs(self) -> bool:
        """Whether the calibration measures input costs (everything but ``"all"`` uncapped)."""
        return self.inputs != "all" or self.max_cost is not None

    def rule(self) -> InputRule:
        """The input-selection rule of this policy (its accuracy loss and cost cap)."""
        return InputRule(max_accuracy_loss=self.max_accuracy_loss, max_cost=self.max_cost)


def _grid_point(name: str, value: Any, grid: tuple[float, ...], meaning: str) -> float | None:
    """``value`` as the point of ``grid`` it equals (to 1e-9), None as None, else an error
    naming ``name`` that lists the grid."""
    if value is None:
        return None
    if _is_number(value):
        for point in grid:
            if abs(value - point) < 1e-9:
                return point
    raise OptionError(
        f"{name} must be one of {', '.join(f'{s:g}' for s in grid)} ({meaning}), got {value!r}.",
        param=name,
    )


@dataclass(frozen=True)
class LLMTierPolicy:
    """The LLM tier of a cascade (cheap judge -> LLM -> people): which LLM, asked how, and the
    shares of items it and people get.

    ``llm`` names the model (:func:`~qaeval_core.llm.packaged.resolve_llm`: the packaged alias,
    a ``.gguf`` file, a transformers folder or hub name, or with ``llm_url`` the model an
    OpenAI-compatible endpoint serves); ``llm_url`` is that endpoint (``http(s)://.../v1``;
    None or empty: the model runs here); ``llm_prompt`` is what it is asked
    (:data:`~qaeval_core.llm.prompts.PROMPTS`). The tier is cross-validated at every point of
    :data:`LLM_SHARES` x :data:`HUMAN_SHARES`, so a share given must be one of them:
    ``llm_share`` None keeps the smallest share within 0.5 points of the best accuracy with no
    people, ``human_share`` None starts at the point nearest the judge's triage band
    (:meth:`human_share_for`).

    The fields say ``llm`` where the functions of :mod:`qaeval_core.metrics.llm_judge` say
    ``model``, ``url`` and ``prompt``: elsewhere in qaeval ``model`` is the QA model that
    answered and ``url`` the store, and each field is named as the CLI's flag is
    (``--llm``, ``--llm-url``, ``--llm-prompt``, ``--llm-share``, ``--human-share``).
    """

    llm: str = DEFAULT_JUDGE_LLM
    llm_url: str | None = None
    llm_prompt: str = "naqt"
    llm_share: float | None = None
    human_share: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.llm, str) or not self.llm.strip():
            raise OptionError(
                f"llm must name a model ({DEFAULT_JUDGE_LLM!r}, a .gguf file, a model folder or "
                f"hub name, or the model an endpoint serves), got {self.llm!r}.",
                param="llm",
            )
        url = self.llm_url
        if isinstance(url, str) and not url.strip():
            url = None  # an empty address (a blank form field) is none
        if url is not None and not (
            isinstance(url, str) and url.strip().lower().startswith(("http://", "https://"))
        ):
            raise OptionError(
                "llm_url must be the http:// or https:// address of an OpenAI-compatible "
                f"endpoint (e.g. http://localhost:8080/v1), got {self.llm_url!r}.",
                param="llm_url",
            )
        object.__setattr__(self, "llm_url", None if url is None else url.strip())
        if not isinstance(self.llm_prompt, str) or self.llm_prompt not in PROMPTS:
            raise OptionError(
                f"llm_prompt must be one of {', '.join(PROMPTS)}, got {self.llm_prompt!r}.",
                param="llm_prompt",
            )
        object.__setattr__(
            self,
            "llm_share",
            _grid_point(
                "llm_share",
                self.llm_share,
                LLM_SHARES,
                "the shares the LLM tier is cross-validated at",
            ),
        )
        object.__setattr__(
            self,
            "human_share",
            _grid_point(
                "human_share",
                self.human_share,
                HUMAN_SHARES,
                "the shares an LLM tier is cross-validated at",
            ),
        )

    def check_triage(self, triage: TriagePolicy) -> None:
        """Refuse a triage policy this tier cannot honour yet; called before the calibration,
        whose band the tier starts from.

        With an LLM tier, people get what the whole cascade still doubts, at a share of its
        curve. A guarantee is tested on what the cheap judge decides alone, which the LLM
        changes; a target accuracy would be reached by the cheap judge's band, not by the
        cascade's. A human share (or none) is what the tier can take.
        """
        for name, given in (
            ("guarantee", triage.guarantee),
            ("target_accuracy", triage.target_accuracy),
        ):
            if given is not None:
                raise OptionError(
                    f"{name} is not available with an LLM tier yet: people get what the whole "
                    "cascade still doubts, at a share of its cross-validated curve. Give a "
                    "human share instead (human_share=S, one of "
                    f"{', '.join(f'{s:g}' for s in HUMAN_SHARES)}).",
                    param=name,
                )

    def human_share_for(self, band_share: float | None) -> float:
        """The human share the tier is fitted at, for a judge whose triage band routes
        ``band_share`` of the items to people (None: no band): ``human_share`` when given,
        else the point of :data:`HUMAN_SHARES` nearest the band. The curve is fitted at those
        points only, so a band chosen elsewhere (a slider) starts at the closest one it has.

        >>> LLMTierPolicy().human_share_for(0.12)
        0.1
        >>> LLMTierPolicy(human_share=0.2).human_share_for(0.12)
        0.2
        """
        if self.human_share is not None:
            return self.human_share
        share = 0.0 if band_share is None else float(band_share)
        return min(HUMAN_SHARES, key=lambda h: (abs(h - share), h))


_old_name(CrossValidation, "tolerance", "win_margin")
_old_name(InputRule, "tolerance", "max_accuracy_loss")
_old_name(CostPolicy, "tolerance", "max_accuracy_loss")
