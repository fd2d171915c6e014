"""``qaeval check``: a CI gate that scores a pinned gold set with a judge config.

Why a command of its own: a judge config is code in all but name (thresholds, weights), and
a change to it, to a metric it reads or to the normaliser under it can silently change
verdicts. ``qaeval check --config judge.json --gold labelled.jsonl`` scores the gold set,
compares the judge's verdicts with the people's and fails (exit 1, a one-line reason, and a
JUnit file for CI systems with ``--junit``) when

* the agreement with the labels is below ``--min-accuracy`` (default: the low end of the
  cross-validated accuracy interval the config recorded at calibration), shown with its
  Wilson interval; or
* with ``--baseline previous.json`` (written by ``--save-baseline``), any verdict changed.

A gold item's verdict is its raters' majority: clearly correct (2) against incorrect (0);
unclear labels and ties are left out and counted.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from qaeval_core.cli.common import console
from qaeval_core.errors import ConfigError, QAEvalError

__all__ = ["CheckFailed", "CheckResult", "add_commands", "run_check"]

BASELINE_KIND = "qaeval-check-baseline"


class CheckFailed(QAEvalError):
    """The judge failed the check; the message is the one-line reason (exit code 1)."""


@dataclass
class CheckResult:
    """What one check found: the agreement, its interval, the bound and changed verdicts."""

    n: int
    agreement: float
    ci: tuple[float, float]
    bound: float | None
    verdicts: dict[str, bool]
    skipped: int = 0
    changed: list[tuple[str, bool, bool]] = field(default_factory=list)
    compared: int = 0

    @property
    def below(self) -> bool:
        return self.bound is not None and self.agreement < self.bound

    def agreement_text(self) -> str:
        low, high = self.ci
        return f"agreement {self.agreement:.3f} [{low:.3f}, {high:.3f}] on {self.n} gold item(s)"

    def reasons(self) -> list[str]:
        out = []
        if self.below:
            out.append(f"{self.agreement_text()} is below the bound {self.bound:.3f}")
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


def _gold_verdict(values: list[int]) -> bool | None:
    correct, incorrect = values.count(2), values.count(0)
    return None if correct == incorrect else correct > incorrect


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def _default_bound(config: dict[str, Any]) -> float | None:
    ci = (config.get("quality") or {}).get("cv_accuracy_ci")
    return float(ci[0]) if isinstance(ci, list | tuple) and ci else None


def run_check(
    config_path: Path,
    gold: Path,
    *,
    min_accuracy: float | None = None,
    baseline: Path | None = None,
    fmt: str | None = None,
    confidence: float = 0.95,
) -> CheckResult:
    """Score ``gold`` with the judge of ``config_path`` and compare (module docstring)."""
    import pandas as pd

    from qaeval_core import io
    from qaeval_core.judge import Judge

    judge = Judge.from_config(config_path)
    items = io.read_items(gold, fmt=fmt)
    labelled = [(it, _gold_verdict([lab.value for lab in it.labels])) for it in items]
    kept = [(it, v) for it, v in labelled if v is not None]
    if not kept:
        raise ConfigError(
            f"{gold} has no item with a clear human label (label 0/1, or raters' labels): "
            "a gold set for `qaeval check` needs the people's verdicts."
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
    bound = min_accuracy
    if bound is None and baseline is None:
        bound = _default_bound(judge.to_config())
        if bound is None:
            raise ConfigError(
                f"{config_path} records no cross-validated accuracy: give --min-accuracy A "
                "or --baseline previous.json."
            )
    result = CheckResult(
        n=len(kept),
        agreement=agree / len(kept),
        ci=_wilson(agree, len(kept), confidence),
        bound=bound,
        verdicts={str(k): bool(v) for k, v in verdicts.items()},
        skipped=len(items) - len(kept),
    )
    if baseline is not None:
        before = _read_baseline(baseline)
        common = [i for i in result.verdicts if i in before]
        result.compared = len(common)
        now = result.verdicts
        result.changed = [(i, before[i], now[i]) for i in common if before[i] != now[i]]
    return result


def _read_baseline(path: Path) -> dict[str, bool]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"No such baseline: {path} (write one with --save-baseline).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not a `qaeval check` baseline: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != BASELINE_KIND:
        raise ConfigError(
            f"{path} is not a `qaeval check` baseline (write one with --save-baseline)."
        )
    return {str(k): bool(v) for k, v in (data.get("verdicts") or {}).items()}


def _write_baseline(path: Path, result: CheckResult, config: Path, gold: Path) -> None:
    data = {
        "kind": BASELINE_KIND,
        "config": config.name,
        "gold": gold.name,
        "n": result.n,
        "agreement": result.agreement,
        "verdicts": result.verdicts,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def write_junit(path: Path, result: CheckResult, *, baseline: bool) -> None:
    """One JUnit test suite: the agreement case and, with a baseline, the verdicts case."""
    cases: list[tuple[str, str | None]] = [
        ("agreement with the gold labels", result.reasons()[0] if result.below else None)
    ]
    if baseline:
        changed = next((r for r in result.reasons() if "changed" in r), None)
        cases.append(("verdicts unchanged since the baseline", changed))
    failures = sum(reason is not None for _, reason in cases)
    suites = ET.Element("testsuites", tests=str(len(cases)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name="qaeval check", tests=str(len(cases)), failures=str(failures)
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("agreement", f"{result.agreement:.4f}"), ("n", str(result.n))):
        ET.SubElement(props, "property", name=key, value=value)
    for name, reason in cases:
        case = ET.SubElement(suite, "testcase", classname="qaeval.check", name=name)
        if reason is not None:
            ET.SubElement(case, "failure", message=reason).text = reason
        else:
            ET.SubElement(case, "system-out").text = result.agreement_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def add_commands(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        config: Annotated[
            Path, typer.Option("--config", help="Judge config to check (from `qaeval calibrate`).")
        ],
        gold: Annotated[
            Path,
            typer.Option("--gold", help="Pinned gold set: items with human labels (any format)."),
        ],
        min_accuracy: Annotated[
            float | None,
            typer.Option(
                "--min-accuracy",
                min=0.0,
                max=1.0,
                help="Fail below this agreement with the labels (default: the low end of the "
                "config's cross-validated accuracy interval, unless --baseline is given).",
            ),
        ] = None,
        baseline: Annotated[
            Path | None,
            typer.Option("--baseline", help="Fail when a verdict differs from this baseline."),
        ] = None,
        save_baseline: Annotated[
            Path | None,
            typer.Option("--save-baseline", help="Write this run's verdicts as a baseline."),
        ] = None,
        junit: Annotated[
            Path | None, typer.Option("--junit", help="Write a JUnit XML report here.")
        ] = None,
        fmt: Annotated[
            str | None, typer.Option("--format", help="Format of the gold file (default: detect).")
        ] = None,
        confidence: Annotated[
            float, typer.Option(min=0.5, max=0.999, help="Level of the agreement's interval.")
        ] = 0.95,
    ) -> None:
        """Score a pinned gold set with a judge config; exit 1 (one-line reason) when the
        agreement falls below the bound or a verdict changed since the baseline."""
        result = run_check(
            config, gold, min_accuracy=min_accuracy, baseline=baseline, fmt=fmt,
            confidence=confidence,
        )  # fmt: skip
        if save_baseline is not None:
            _write_baseline(save_baseline, result, config, gold)
        if junit is not None:
            write_junit(junit, result, baseline=baseline is not None)
        reasons = result.reasons()
        if reasons:
            raise CheckFailed("qaeval check failed: " + "; ".join(reasons) + ".")
        bound = f", bound {result.bound:.3f}" if result.bound is not None else ""
        same = f", {result.compared} verdict(s) as in the baseline" if baseline else ""
        skipped = f" ({result.skipped} unclear left out)" if result.skipped else ""
        console.print(
            f"qaeval check passed: {result.agreement_text()}{skipped}{bound}{same}.",
            markup=False,
            soft_wrap=True,
        )
