"""Invariance experiment: does formatting that keeps the meaning change the judge's verdict?

Run from the repository root::

    .venv/bin/python experiments/invariance.py                       # NQ301, 400 test rows
    .venv/bin/python experiments/invariance.py --datasets answer_matching_mmlu_pro --rows 500
    .venv/bin/python experiments/invariance.py --datasets pedants_ae_augmented_train \
        --rows 150 --long 400
    .venv/bin/python experiments/invariance.py --table-only          # rebuild the .md from CSVs
    # only the robust judge again, the spaced rows kept from the CSV (the spaced profile's
    # scores do not change when the robust profile does):
    .venv/bin/python experiments/invariance.py --profiles robust
    # issue 33: the default judge (robust since then) on NQ301 and MMLU-Pro (the same rows as
    # the spaced judge's: 400 on NQ301, every held-out row on MMLU-Pro)
    .venv/bin/python experiments/invariance.py --profiles robust --rows 400
    .venv/bin/python experiments/invariance.py --profiles robust \
        --datasets answer_matching_mmlu_pro --rows 500

Protocol, per dataset:

1. ``held_out_split`` (N = 300 labelled rows by whole question, seed 0), as
   ``calibration.py`` does; ``--rows`` test rows are drawn at random from the rest, plus up to
   ``--long`` further test rows whose answer is over 20 words (the long-answer target needs
   several hundred copies, and most shared answers are short).
2. Two exported judges are fitted with ``fit_judge`` on the same 300 rows:
   *spaced* - the calibration defaults before issue 33 (``DEFAULT_METRICS`` at each metric's
   own reading: punctuation read as a space, neural metrics on the raw answer; called "today"
   and "squad" until then); *robust* - the same columns with every input at
   ``normalize="robust"`` (:func:`~qaeval_core.workflows.calibration.profile_specs`, what
   ``qaeval calibrate`` fits by default since issue 33:
   :data:`~qaeval_core.calibrate.inputs.DEFAULT_PROFILE`): the lexical metrics repair glued
   tokens in their tokens; PANDA, extraction, embeddings, BERTScore, SMILE, A-VERT and the
   answer-shape inputs (``robust_text="reader"``, numbers as written) read the candidate's
   :func:`~qaeval_core.text.profiles.reader_text` (formatting removed, glued tokens split and
   footnote digits dropped against the item's references).
3. From every sampled test row, perturbed copies that keep the meaning (:func:`perturb`):
   markdown bold / a markdown link around the answer's mention, citation markers, a footnote
   digit (plain or superscript) glued to the mention, spaces removed around the mention, HTML
   entities and tags, mojibake, and numbers / dates in another spelling. A kind that cannot
   apply to a row (no mention, no number) makes no copy.
4. Each judge scores the original and its copies; the rate is the share of copies whose
   verdict equals the original's, overall, for answers over 20 words, and per kind.

Every score is computed here (the experiment never reads or writes ``experiments/cache``, so
it can run beside ``calibration.py``). Output: ``experiments/results/invariance.md`` (tables),
``invariance_rows_<dataset>.csv`` (one line per copy and profile; the texts of the copies whose
verdict flipped, with the input columns that moved, for reading the failures).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import RESULTS, load_data
from qaeval_core.calibrate import CrossValidation, fit_judge, held_out_split
from qaeval_core.calibrate.inputs import FEATURE_ONLY, metric_specs
from qaeval_core.judge import FeatureSpec, items_frame
from qaeval_core.metrics.base import Metric
from qaeval_core.schema import Item
from qaeval_core.workflows.calibration import profile_specs

KINDS = (
    "bold",
    "link",
    "citation",
    "footnote_digit",
    "footnote_superscript",
    "spaces_removed",
    "html",
    "mojibake",
    "number_format",
    "date_format",
)
_MONTH_TEXT = (
    "January February March April May June July August September October November December"
)
_MONTHS = _MONTH_TEXT.split()


def _mention(candidate: str, references: tuple[str, ...]) -> re.Match[str] | None:
    """The first place the candidate mentions a reference (case-insensitive, on word edges)."""
    for ref in sorted((r for r in references if r and r.strip()), key=len, reverse=True):
        m = re.search(rf"(?<!\w){re.escape(ref.strip())}(?!\w)", candidate, re.I)
        if m:
            return m
    return None


#: A mention ending in a word of three letters or more: a footnote digit glued to "v" or "km"
#: reads as "v1" or a power, not a footnote (``strip_citations`` draws the same line).
_WORD_END = re.compile(r"[^\W\d_]{3}$")


def _thousands(m: re.Match[str]) -> str:
    """A number with thousands separators, except a possible year (1000-2099): nobody writes
    "2,018" for the year 2018, so "April 10, 2,018" would not keep the meaning (the first
    version of this experiment did this and counted the flips as failures)."""
    value = int(m.group(0))
    return m.group(0) if len(m.group(0)) == 4 and 1000 <= value < 2100 else f"{value:,}"


def perturb(candidate: str, references: tuple[str, ...], kind: str) -> str | None:
    """A copy of ``candidate`` with one meaning-preserving change, or None when ``kind`` does
    not apply (no mention of a reference, no number to reformat, nothing would change)."""
    m = _mention(candidate, references)
    a, b = (m.start(), m.end()) if m else (0, len(candidate))
    head, span, tail = candidate[:a], candidate[a:b], candidate[b:]
    out: str | None = None
    if kind == "bold":
        out = f"{head}**{span}**{tail}"
    elif kind == "link" and m:
        slug = span.replace(" ", "_")
        out = f"{head}[{span}](https://en.wikipedia.org/wiki/{slug}){tail}"
    elif kind == "citation":
        sentence_end = re.search(r"[.!?](\s|$)", candidate[b:])
        at = b + sentence_end.start() if sentence_end else len(candidate)
        out = candidate[:at] + " [1]" + candidate[at:] + " [2][3]"
    elif kind == "footnote_digit" and m and _WORD_END.search(span):  # glued to a word
        out = f"{head}{span}1{tail}"
    elif kind == "footnote_superscript" and m and _WORD_END.search(span):
        out = f"{head}{span}\u00b9{tail}"
    elif kind == "spaces_removed" and m and (head.endswith(" ") or tail.startswith(" ")):
        out = f"{head.rstrip(' ')}{span}{tail[1:] if tail.startswith(' ') else tail}"
    elif kind == "html":
        out = candidate.replace("&", "&amp;").replace("'", "&#39;").replace('"', "&quot;")
        out = f"{out[:a]}<b>{out[a : a + len(span)]}</b>{out[a + len(span) :]}" if m else out
        out = out.replace(". ", ".<br> ", 1)
    elif kind == "mojibake":
        text = candidate if not candidate.isascii() else f"{head.rstrip(' ')}\u00a0{span}{tail}"
        if text.isascii():
            return None
        try:
            out = text.encode("utf-8").decode("latin-1")
        except UnicodeDecodeError:
            return None
    elif kind == "number_format":
        out = re.sub(r"(?<![\d.,])\d{4,9}(?![\d.,])", _thousands, candidate)
        if out == candidate:  # no long number: a small one as a word
            names = "two three four five six seven eight nine"
            words = dict(zip("23456789", names.split(" "), strict=True))
            small = r"(?<!\S)([2-9])(?= [A-Za-z])"  # a count before a word, not maths
            out = re.sub(small, lambda x: words[x[1]], candidate, count=1)
    elif kind == "date_format":
        pat = rf"\b([12]?\d|3[01]) ({'|'.join(_MONTHS)}),? (\d{{4}})\b"
        out = re.sub(pat, lambda x: f"{x[2][:3]} {x[1]}, {x[3]}", candidate)
        if out == candidate:
            pat = rf"\b({'|'.join(_MONTHS)}) ([12]?\d|3[01]),? (\d{{4}})\b"
            out = re.sub(pat, lambda x: f"{x[2]} {x[1]} {x[3]}", candidate)
    if out is None or out == candidate:
        return None
    return out


#: ``robust_reader``: the robust judge with the answer-shape inputs on the reader text with
#: LaTeX flattened (``robust_text="reader"``), the default from issue 33's follow-up until the
#: shape inputs kept LaTeX as written (``"reader_latex"``); measured beside ``robust`` on the
#: same copies.
PREVIOUS_SHAPE_TEXT = "reader"


def _specs(profile: str) -> list[tuple[str, Metric]]:
    """``(column, metric)`` of one judge's inputs: the calibration defaults at ``profile``
    (``robust_reader``: at robust, the answer-shape inputs on :data:`PREVIOUS_SHAPE_TEXT`)."""
    if profile != "robust_reader":
        return profile_specs(metric_specs(), profile)
    return [
        (c, type(m)(**{**m.get_params(), "robust_text": PREVIOUS_SHAPE_TEXT}))
        if c in FEATURE_ONLY
        else (c, m)
        for c, m in profile_specs(metric_specs(), "robust")
    ]


def score(
    items: list[Item], specs: list[tuple[str, Metric]], log, memo: dict | None = None
) -> pd.DataFrame:
    """Every input column of a judge on ``items``; ``memo`` (config hash -> scores, one per
    item list) lets two judges that share inputs score them once."""
    frame = pd.DataFrame(index=range(len(items)))
    memo = {} if memo is None else memo
    for col, metric in specs:
        key = metric.config_hash()
        if key not in memo:
            t0 = time.time()
            memo[key] = np.asarray(metric.score_batch(items).scores, dtype=float)
            log(f"    {col}: {time.time() - t0:.1f} s")
        frame[col] = memo[key]
    return frame


def _moved(a: pd.Series, b: pd.Series, cols: list[str]) -> str:
    """The input columns whose score moved by more than 0.01 between two rows."""
    return " ".join(f"{c}:{a[c]:.2f}->{b[c]:.2f}" for c in cols if abs(a[c] - b[c]) > 0.01)


def run(
    name: str,
    rows: int,
    seed: int,
    long_rows: int = 0,
    profiles: tuple[str, ...] = ("spaced", "robust"),
    log=print,
) -> pd.DataFrame:
    data = load_data(name)
    # a few PEDANTS answers are JSON numbers (42, not "42"): every metric reads text
    items = [replace(it, candidate=str(it.candidate)) for it in data.items]
    tr, te = held_out_split(len(data.y), 300, groups=data.groups, seed=seed)
    rng = np.random.default_rng(seed)
    sample = rng.choice(te, size=min(rows, len(te)), replace=False)
    if long_rows:
        rest = np.setdiff1d(te, sample)
        rest = rest[[len(items[i].candidate.split()) > 20 for i in rest]]
        extra = rng.choice(rest, size=min(long_rows, len(rest)), replace=False)
        sample = np.concatenate([sample, extra])
    sample = np.sort(sample)
    originals = [items[i] for i in sample]
    copies: list[Item] = []
    owner: list[int] = []
    kinds: list[str] = []
    for k, it in enumerate(originals):
        for kind in KINDS:
            text = perturb(it.candidate, it.references, kind)
            if text is not None:
                copies.append(replace(it, candidate=text, id=f"{it.id}~{kind}"))
                owner.append(k)
                kinds.append(kind)
    log(f"{name}: {len(originals)} test rows, {len(copies)} perturbed copies")
    records = []
    memos: dict[str, dict] = {"train": {}, "orig": {}, "pert": {}}
    for profile in profiles:
        specs = _specs(profile)
        log(f"  {profile}: scoring {len(tr)} training rows")
        train = score([items[i] for i in tr], specs, log, memos["train"])
        log(f"  {profile}: scoring {len(originals)} test rows")
        orig = score(originals, specs, log, memos["orig"])
        log(f"  {profile}: scoring {len(copies)} copies")
        pert = score(copies, specs, log, memos["pert"])
        features = [FeatureSpec.from_metric(m, c) for c, m in specs]
        judge, report = fit_judge(
            train,
            data.y[tr],
            features,
            groups=data.groups[tr],
            texts=items_frame([items[i] for i in tr]),
            cv=CrossValidation(n_boot=200, seed=seed),
            fitted_on={"dataset": name, "profile": profile},
        )
        before = judge.judge_scores(orig[judge.columns], originals)["judge_correct"].to_numpy()
        after = judge.judge_scores(pert[judge.columns], copies)["judge_correct"].to_numpy()
        acc = float(np.mean(before == data.y[sample]))
        log(f"  {profile}: judge = {report.winner}, accuracy on the sampled rows {acc:.3f}")
        for j, k in enumerate(owner):
            it = originals[k]
            same = bool(before[k] == after[j])
            records.append(
                {
                    "dataset": name,
                    "profile": profile,
                    "kind": kinds[j],
                    "long": len(it.candidate.split()) > 20,
                    "same": same,
                    "row": it.id,
                    "judge": report.winner,
                    "accuracy": acc,
                    "references": "" if same else " || ".join(it.references),
                    "original": "" if same else it.candidate,
                    "perturbed": "" if same else copies[j].candidate,
                    "moved": "" if same else _moved(orig.iloc[k], pert.iloc[j], judge.columns),
                }
            )
    return pd.DataFrame(records)


def _rates(part: pd.DataFrame) -> list[str]:
    """Copies, the spaced and the robust rate (%), overall and for answers over 20 words."""
    cells = []
    for long_only in (False, True):
        p = part[part["long"]] if long_only else part
        n = int((p["profile"] == "spaced").sum())
        rates = [
            p[p["profile"] == prof]["same"].mean() * 100 if n else float("nan")
            for prof in ("spaced", "robust")
        ]
        cells += [str(n), *(f"{r:.1f}" for r in rates)]
    return cells


_HEADER = (
    "| {first} | copies | spaced | robust | copies (> 20 words) | spaced (> 20 words) "
    "| robust (> 20 words) |\n|---|---|---|---|---|---|---|"
)


def summary(frame: pd.DataFrame) -> str:
    """Every dataset together: per dataset and per kind, against the targets."""
    lines = [
        "\n### All datasets together\n",
        "Targets (issue 16): robust keeps >= 99.5% of all copies and >= 99% of the copies "
        "made from answers over 20 words.\n",
        _HEADER.format(first="dataset"),
    ]
    for ds, sub in frame.groupby("dataset", sort=False):
        lines.append(f"| {ds} | " + " | ".join(_rates(sub)) + " |")
    lines.append("| **all** | " + " | ".join(_rates(frame)) + " |")
    lines += ["", _HEADER.format(first="perturbation")]
    for kind in KINDS:
        part = frame[frame["kind"] == kind]
        if not part.empty:
            lines.append(f"| {kind} | " + " | ".join(_rates(part)) + " |")
    return "\n".join(lines) + "\n"


def table(frame: pd.DataFrame) -> str:
    lines = []
    for ds, sub in frame.groupby("dataset", sort=False):
        n_rows = sub["row"].nunique()
        judges = sub.groupby("profile")["judge"].first().to_dict()
        accs = sub.groupby("profile")["accuracy"].first().to_dict()
        n_copies = int(sub.groupby("profile").size().max())
        lines += [
            f"\n### {ds}: {n_rows} held-out rows, {n_copies} perturbed copies\n",
            "Share of perturbed copies whose verdict equals the original's (%), with the count "
            "of copies. *spaced*: each metric's own reading (the calibration default before issue "
            "33); *robust*: the calibration default since (`profile_specs` at "
            '`normalize="robust"`: neural inputs, PANDA, extraction and, since issue 33\'s '
            "follow-up, the answer-shape inputs read `reader_text`; PEDANTS was measured before "
            "that, with the answer-shape inputs on the canonical text).\n",
            _HEADER.format(first="perturbation"),
        ]
        for kind in [*KINDS, "all"]:
            part = sub if kind == "all" else sub[sub["kind"] == kind]
            if part.empty:
                continue
            label = "**all**" if kind == "all" else kind
            lines.append(f"| {label} | " + " | ".join(_rates(part)) + " |")
        lines.append(
            f"\nJudges (fit_judge on 300 labelled rows, seed 0): spaced = {judges.get('spaced')}, "
            f"robust = {judges.get('robust')}; accuracy on the sampled unperturbed rows: spaced "
            f"{100 * accs.get('spaced', float('nan')):.1f}%, robust "
            f"{100 * accs.get('robust', float('nan')):.1f}%."
        )
        prev = sub[sub["profile"] == "robust_reader"]
        if not prev.empty:
            lines.append(
                f"\nThe default before the answer-shape inputs kept LaTeX (`robust_text="
                f'"{PREVIOUS_SHAPE_TEXT}"`), on the same copies: {100 * prev["same"].mean():.1f}% '
                f"of {len(prev)} copies ({100 * prev[prev['long']]['same'].mean():.1f}% of "
                f"{int(prev['long'].sum())} over 20 words); judge = {judges.get('robust_reader')}, "
                f"accuracy on the sampled rows {100 * accs['robust_reader']:.1f}%."
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["kamalloo_nq301"])
    ap.add_argument("--rows", type=int, default=400)
    ap.add_argument("--long", type=int, default=0, help="extra test rows over 20 words")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--table-only", action="store_true", help="rebuild the .md from the CSVs")
    ap.add_argument(
        "--profiles",
        nargs="+",
        default=["spaced", "robust"],
        choices=["spaced", "robust", "robust_reader"],
        help="judges to fit and score again; the other profile's rows are kept from the CSV",
    )
    args = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if not args.table_only:
        for name in args.datasets:
            frame = run(name, args.rows, args.seed, args.long, tuple(args.profiles))
            path = RESULTS / f"invariance_rows_{name}.csv"
            if path.exists():  # the profiles not run again keep their rows
                old = pd.read_csv(path, keep_default_na=False)
                old["profile"] = old["profile"].replace({"squad": "spaced"})  # until issue 33
                old = old[~old["profile"].isin(args.profiles)]
                frame = pd.concat([old, frame], ignore_index=True)
                order = {"spaced": 0, "robust": 1, "robust_reader": 2}
                frame = frame.sort_values("profile", key=lambda s: s.map(order), kind="stable")
            frame.to_csv(path, index=False)
    order = ["kamalloo_nq301", "answer_matching_mmlu_pro", "pedants_ae_augmented_train"]
    paths = sorted(RESULTS.glob("invariance_rows_*.csv"), key=lambda p: _rank(p, order))
    frame = pd.concat([pd.read_csv(p, keep_default_na=False) for p in paths])
    frame["profile"] = frame["profile"].replace({"squad": "spaced"})  # its name until issue 33
    frame["same"] = frame["same"].astype(str) == "True"
    frame["long"] = frame["long"].astype(str) == "True"
    text = "## Invariance to meaning-preserving formatting\n" + summary(frame) + table(frame)
    (RESULTS / "invariance.md").write_text(text, "utf-8")
    print(text)


def _rank(path: Path, order: list[str]) -> int:
    name = path.stem.removeprefix("invariance_rows_")
    return order.index(name) if name in order else len(order)


if __name__ == "__main__":
    main()
