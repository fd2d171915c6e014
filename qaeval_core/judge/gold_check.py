"""A judge checked against a pinned gold set: the logic behind ``qaeval check`` (a CI gate).

Why a check of its own: a judge config is code in all but name (thresholds, weights), and a
change to it, to a metric it reads or to the normaliser under it can silently change verdicts.
:func:`run_check` scores the gold set with the judge, compares its verdicts with the people's
and, given a baseline (:func:`write_baseline` of an earlier run), with the baseline's. The
check fails (:meth:`CheckResult.reasons`) when

* the agreement with the labels is below ``min_accuracy`` (default: the low end of the
  cross-validated accuracy interval the config recorded at calibration), shown with its
  Wilson interval;
* it compared fewer than ``min_items`` gold items (default :data:`DEFAULT_MIN_ITEMS`): an
  agreement on a handful of items passes any bound by luck (one right answer is 100%, with a
  95% Wilson interval of [0.21, 1]), so too small a gold set fails whatever its agreement;
* with a baseline, any verdict changed, or fewer than ``min_items`` of the gold items are in
  the baseline (none: it was written for another gold set), since a baseline that matches
  nothing compares nothing.

A gold item's verdict is its raters' majority over the 3-point values (:func:`gold_verdict`,
the rule of the final label everywhere else): clearly correct (2) or incorrect (0); items whose
majority is unclear (1), or whose raters tie, are left out and counted. Every file error (the
baseline missing, a directory, not JSON, not a baseline; an output path that cannot be
written) is a one-line
:class:`~qaeval_core.errors.ConfigError` or :class:`~qaeval_core.errors.InputError`, and the
output paths are checked before anything is scored (:func:`check_output_path`).

Why it is one module: the check is one run (:func:`check_judge`) whose result, failure
reasons and two files (the baseline it reads back, the JUnit report) change together: a new
reason is a new JUnit case and a new line of the message, and the CLI only parses its flags.
"""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, InputError, QAEvalError
from qaeval_core.judge.file_summary import judge_summary
from qaeval_core.stats import majority_vote, wilson_ci

__all__ = [
    "BASELINE_KIND",
    "DEFAULT_MIN_ITEMS",
    "CheckFailed",
    "CheckResult",
    "check_judge",
    "check_output_path",
    "gold_verdict",
    "read_baseline",
    "run_check",
    "write_baseline",
    "write_junit",
]

BASELINE_KIND = "qaeval-check-baseline"
#: Fewest gold items (with a clear human verdict) a check compares before it may pass; the
#: same floor for the items a baseline shares with the gold set. At 30 items a perfect
#: agreement's 95% Wilson interval starts at 0.89, at 1 item at 0.21.
DEFAULT_MIN_ITEMS = 30


class CheckFailed(QAEvalError):
    """The judge failed the check; the message is the one-line reason (exit code 1)."""


@dataclass
class CheckResult:
    """What one check found: the agreement, its interval, the bound, and the baseline's
    comparison (``compared`` items in both, ``changed`` verdicts; ``baseline_size``: how many
    verdicts the baseline held, None without one)."""

    n: int
    agreement: float
    ci: tuple[float, float]
    bound: float | None
    verdicts: dict[str, bool]
    skipped: int = 0
    changed: list[tuple[str, bool, bool]] = field(default_factory=list)
    compared: int = 0
    min_items: int = DEFAULT_MIN_ITEMS
    baseline_size: int | None = None

    @property
    def below(self) -> bool:
        return self.bound is not None and self.agreement < self.bound

    @property
    def too_few(self) -> bool:
        """Fewer gold items with a clear verdict than ``min_items``."""
        return self.n < self.min_items

    @property
    def baseline_too_few(self) -> bool:
        """A baseline was given and shares fewer than ``min_items`` items with the gold set."""
        return self.baseline_size is not None and self.compared < min(self.min_items, self.n)

    def agreement_text(self) -> str:
        low, high = self.ci
        return f"agreement {self.agreement:.3f} [{low:.3f}, {high:.3f}] on {self.n} gold item(s)"

    def agreement_reasons(self) -> list[str]:
        """Why the agreement case fails (too few items, below the bound); empty: it passes."""
        out = []
        if self.too_few:
            out.append(
                f"only {self.n} gold item(s) with a clear human label, fewer than min_items="
                f"{self.min_items}: on so few an agreement passes any bound by chance (label "
                "more gold items, or set min_items=N to accept fewer)"
            )
        if self.below:
            out.append(f"{self.agreement_text()} is below the bound {self.bound:.3f}")
        return out

    def baseline_reasons(self) -> list[str]:
        """Why the baseline case fails (it matches too few items, verdicts changed)."""
        out = []
        if self.baseline_too_few:
            if self.compared == 0:
                out.append(
                    f"the baseline shares no item id with the gold set (its "
                    f"{self.baseline_size} verdict(s) are for other items), so nothing was "
                    "compared: write a baseline from this gold set"
                )
            else:
                out.append(
                    f"only {self.compared} of the {self.n} gold item(s) are in the baseline, "
                    f"fewer than min_items={self.min_items}: write a baseline from this gold set"
                )
        if self.changed:
            shown = ", ".join(
                f"{i} ({'correct' if a else 'incorrect'} -> {'correct' if b else 'incorrect'})"
                for i, a, b in self.changed[:5]
            )
            more = f" and {len(self.changed) - 5} more" if len(self.changed) > 5 else ""
            out.append(
                f"{len(self.changed)} of {self.compared} verdict(s) changed since the "
                f"baseline: {shown}{more}"
            )
        return out

    def reasons(self) -> list[str]:
        """Every reason the check fails, in one list (empty: it passed)."""
        return self.agreement_reasons() + self.baseline_reasons()

    def passed_text(self) -> str:
        """The one line a check that passed says: agreement, bound, minimum, baseline."""
        bound = f", bound {self.bound:.3f}" if self.bound is not None else ""
        bound += f", minimum {self.min_items} item(s)"
        same = (
            f", {self.compared} verdict(s) as in the baseline"
            if self.baseline_size is not None
            else ""
        )
        skipped = f" ({self.skipped} unclear left out)" if self.skipped else ""
        return f"qaeval check passed: {self.agreement_text()}{skipped}{bound}{same}."


def gold_verdict(values: Sequence[int]) -> bool | None:
    """A gold item's verdict: its raters' majority (:func:`qaeval_core.stats.majority_vote`
    over the 3-point values, the rule of the final label) when it is clearly correct (2) or
    incorrect (0); None when the majority says unclear (1), or no value leads alone.

    >>> gold_verdict([2, 2, 0]), gold_verdict([2, 1, 1]), gold_verdict([2, 0])
    (True, None, None)
    """
    counts = [sum(1 for v in values if v == value) for value in (0, 1, 2)]
    vote = int(majority_vote([counts])[0])
    return {2: True, 0: False}.get(vote)


def _default_bound(config: Mapping[str, Any]) -> float | None:
    ci = judge_summary(config).cv_accuracy_ci
    return None if ci is None else ci[0]


def check_min_items(min_items: Any) -> int:
    """``min_items`` as a whole number >= 1, else an :class:`InputError` naming it."""
    if isinstance(min_items, bool) or not isinstance(min_items, int) or min_items < 1:
        raise InputError(
            f"min_items must be a whole number >= 1, got {min_items!r}.", param="min_items"
        )
    return min_items


def run_check(
    config_path: Path,
    gold: Path,
    *,
    min_accuracy: float | None = None,
    baseline: Path | None = None,
    fmt: str | None = None,
    confidence: float = 0.95,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> CheckResult:
    """Score ``gold`` with the judge of ``config_path`` and compare (module docstring). The
    baseline is read before anything is scored, so a bad one costs no scoring."""
    import pandas as pd

    from qaeval_core import io
    from qaeval_core.judge import Judge

    min_items = check_min_items(min_items)
    judge = Judge.from_config(config_path)
    before = read_baseline(baseline) if baseline is not None else None
    items = io.read_items(gold, fmt=fmt)
    labelled = [(it, gold_verdict([lab.value for lab in it.labels])) for it in items]
    kept = [(it, v) for it, v in labelled if v is not None]
    if not kept:
        raise ConfigError(
            f"{gold} has no item with a clear human label (label 0/1, or raters' labels): "
            "a gold set for a check needs the people's verdicts."
        )
    bound = min_accuracy
    if bound is None and baseline is None:
        bound = _default_bound(judge.to_config())
        if bound is None:
            raise ConfigError(
                f"{config_path} records no cross-validated accuracy: give min_accuracy=A "
                "or baseline=PATH."
            )
    frame = pd.DataFrame(
        {
            "id": [it.external_id for it, _ in kept],
            "question": [it.question for it, _ in kept],
            "references": [list(it.references) for it, _ in kept],
            "candidate": [it.candidate for it, _ in kept],
            "context": [it.context for it, _ in kept],
        }
    )
    scored = judge.judge(frame)
    verdicts = dict(zip(frame["id"], scored["judge_correct"].astype(bool), strict=True))
    agree = sum(verdicts[it.external_id] == v for it, v in kept)
    result = CheckResult(
        n=len(kept),
        agreement=agree / len(kept),
        ci=wilson_ci(agree, len(kept), confidence),
        bound=bound,
        verdicts={str(k): bool(v) for k, v in verdicts.items()},
        skipped=len(items) - len(kept),
        min_items=min_items,
    )
    if before is not None:
        common = [i for i in result.verdicts if i in before]
        result.baseline_size = len(before)
        result.compared = len(common)
        now = result.verdicts
        result.changed = [(i, before[i], now[i]) for i in common if before[i] != now[i]]
    return result


def check_judge(
    config_path: Path,
    gold: Path,
    *,
    min_accuracy: float | None = None,
    baseline: Path | None = None,
    save_baseline: Path | None = None,
    junit: Path | None = None,
    fmt: str | None = None,
    confidence: float = 0.95,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> CheckResult:
    """The whole check, as ``qaeval check`` runs it: the output paths checked before anything
    is scored, :func:`run_check`, the baseline (``save_baseline``) and JUnit (``junit``) files
    written, then :class:`CheckFailed` with every reason in one line, or the result."""
    for path, param in ((junit, "junit"), (save_baseline, "save_baseline")):
        if path is not None:
            check_output_path(path, param)
    result = run_check(
        config_path,
        gold,
        min_accuracy=min_accuracy,
        baseline=baseline,
        fmt=fmt,
        confidence=confidence,
        min_items=min_items,
    )
    if save_baseline is not None:
        write_baseline(save_baseline, result, config_path, gold)
    if junit is not None:
        write_junit(junit, result, baseline=baseline is not None)
    reasons = result.reasons()
    if reasons:
        raise CheckFailed("qaeval check failed: " + "; ".join(reasons) + ".")
    return result


def _not_a_baseline(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"{path} is not a check baseline ({why}); write one with save_baseline=PATH."
    )


def read_baseline(path: Path) -> dict[str, bool]:
    """The verdicts of a baseline file ({item id: correct}), or a one-line ConfigError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"No such baseline: {path} (write one with save_baseline=PATH)."
        ) from None
    except IsADirectoryError:
        raise _not_a_baseline(path, "it is a directory") from None
    except UnicodeDecodeError:
        raise _not_a_baseline(path, "not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the baseline {path}: {exc.strerror or exc}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _not_a_baseline(path, f"not JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise _not_a_baseline(path, "nested too deep") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise _not_a_baseline(path, f"no kind {BASELINE_KIND!r}")
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, dict) or not all(isinstance(v, bool) for v in verdicts.values()):
        raise _not_a_baseline(path, "verdicts must map item ids to true or false")
    if not verdicts:
        raise _not_a_baseline(path, "it holds no verdicts")
    return {str(k): v for k, v in verdicts.items()}


def check_output_path(path: Path, param: str) -> Path:
    """``path`` if a file can be written there (its folder may still have to be made), else a
    one-line :class:`InputError` naming ``param``: checked before a check scores anything."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{param} {path} is a directory; give a file name.", param=param)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(
            f"{param} {path} cannot be written: {folder} is a file, not a folder.", param=param
        )
    target = path if path.exists() else folder
    if not _writable(target):
        raise InputError(f"{param} {path} cannot be written: {target} is read-only.", param=param)
    return path


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK)


def _write_atomically(path: Path, param: str, write: Callable[[Path], None]) -> None:
    """``write`` to a temporary file beside ``path``, then rename it over ``path``: an earlier
    file there is replaced whole or kept, never left half-written. Errors are one line."""
    path = Path(path)
    check_output_path(path, param)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        try:
            write(Path(tmp))
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise InputError(
            f"{param} {path} cannot be written: {exc.strerror or exc}.", param=param
        ) from None


def write_baseline(path: Path, result: CheckResult, config: Path, gold: Path) -> None:
    """This run's verdicts as a baseline file (read back by :func:`read_baseline`)."""
    data = {
        "kind": BASELINE_KIND,
        "config": Path(config).name,
        "gold": Path(gold).name,
        "n": result.n,
        "agreement": result.agreement,
        "verdicts": result.verdicts,
    }
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    _write_atomically(path, "save_baseline", lambda p: p.write_text(text, encoding="utf-8"))


def write_junit(path: Path, result: CheckResult, *, baseline: bool) -> None:
    """One JUnit test suite: the agreement case and, with a baseline, the verdicts case."""
    agreement = result.agreement_reasons()
    cases: list[tuple[str, str | None]] = [
        ("agreement with the gold labels", "; ".join(agreement) if agreement else None)
    ]
    if baseline:
        compared = result.baseline_reasons()
        cases.append(("verdicts unchanged since the baseline", "; ".join(compared) or None))
    failures = sum(reason is not None for _, reason in cases)
    suites = ET.Element("testsuites", tests=str(len(cases)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name="qaeval check", tests=str(len(cases)), failures=str(failures)
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("agreement", f"{result.agreement:.4f}"),
        ("n", str(result.n)),
        ("min_items", str(result.min_items)),
        ("compared", str(result.compared)),
    ):
        ET.SubElement(props, "property", name=key, value=value)
    for name, reason in cases:
        case = ET.SubElement(suite, "testcase", classname="qaeval.check", name=name)
        if reason is not None:
            ET.SubElement(case, "failure", message=reason).text = reason
        else:
            ET.SubElement(case, "system-out").text = result.agreement_text()
    tree = ET.ElementTree(suites)
    _write_atomically(
        path, "junit", lambda p: tree.write(p, encoding="utf-8", xml_declaration=True)
    )
