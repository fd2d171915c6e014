"""The cascade (cheap judge -> LLM -> people) on real labelled data (issue 22's protocol).

    .venv/bin/python experiments/llm_verdicts.py   # once: the LLM on every row (cached)
    .venv/bin/python experiments/cascade.py        # both sets, 5 seeds, N = 300

Per dataset and seed (0-4), as in ``calibration.py`` and ``triage_ppi.py``: the cheap judge is
calibrated (``fit_judge``, default inputs and candidates) on 300 labels drawn by whole question;
its out-of-fold probabilities on those rows, the LLM's verdicts (``llm_judge``, the packaged
Qwen2.5-Coder-1.5B, read from the verdict cache) and the labels fit the LLM tier
(:func:`qaeval_core.calibrate.cascade.fit_cascade`: LLM share chosen by 5-fold CV); every other
labelled row is the test set. Reported on the test rows, mean over seeds:

* judge alone (no people): the cheap judge, the cascade, and the share of rows the LLM read;
* 20% to people: the 20% most doubtful test rows (final doubt) go to people (counted right);
* PPI: 95% intervals of each QA model's accuracy from 100 random labels per draw, the
  cascade's probability as the prediction (``triage_ppi._ppi_rows``), width over human-only.

The LLM verdicts are computed most doubtful first (``llm_verdicts.py``); where some rows have
none yet, only LLM shares whose band is fully covered on both sides of the
split are considered (a 0.05 margin on the calibration side, where the CV folds' thresholds
vary), and the table says how far it went.
Output: ``experiments/results/cascade.md`` and ``cascade_<dataset>.csv``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments import triage_ppi
from experiments.common import (
    CACHE,
    DATASETS,
    RESULTS,
    Data,
    cached_scores,
    load_data,
    score_columns,
    write_result,
)
from experiments.triage_ppi import _ppi_rows
from qaeval_core.calibrate import CrossValidation, fit_judge, held_out_split
from qaeval_core.calibrate.cascade import fit_cascade
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.calibrate.options import LLM_SHARES
from qaeval_core.judge import FeatureSpec
from qaeval_core.judge.triage import doubt
from qaeval_core.llm.prompts import get_prompt
from qaeval_core.llm.verdict_cache import VerdictCache, verdict_key
from qaeval_core.metrics.base import get_metric

SIZE = 300
SEEDS = range(5)
PEOPLE = 0.2
MARGIN = 0.05


#: Which cached verdicts the LLM tier reads: llama.cpp's (the default runtime, computed here by
#: llm_verdicts.py) or, with ``--llm-runtime transformers``, the same GGUF read by transformers on
#: a GPU (llm_verdicts_offload.py). ``main`` sets it from the command line.
LLM_PARAMS: dict[str, str] = {}


def llm_probabilities(data: Data) -> tuple[np.ndarray, np.ndarray]:
    """The cached LLM P(correct) per row (NaN where not computed yet) and its seconds."""
    metric = get_metric("llm_judge", **LLM_PARAMS)
    prompt = get_prompt(metric.prompt)
    fingerprint = metric.fingerprint()
    keys = [verdict_key(fingerprint, prompt.key, prompt.messages(it)[0]) for it in data.items]
    found = VerdictCache().get_many(keys)
    p = np.array(
        [
            np.nan
            if k not in found
            else (found[k].probability if found[k].probability is not None else 0.5)
            for k in keys
        ]
    )
    s = np.array([found[k].seconds if k in found else np.nan for k in keys])
    for i, it in enumerate(data.items):  # the metric's rule: empty answers score 0, no call
        if not (it.candidate or "").strip():
            p[i], s[i] = 0.0, 0.0
    return p, s


def _covered_shares(d_cal: np.ndarray, d_te: np.ndarray, ok_cal, ok_te) -> list[float]:
    """LLM shares whose verdicts are all there: the calibration rows the CV folds' bands reach
    (the share + the margin) and the test rows in the band (the share itself)."""
    shares = []
    ranked = np.sort(d_cal)[::-1]
    for s in LLM_SHARES:
        if s == 0:
            shares.append(s)
            continue
        t_cal = ranked[int(round(min(1.0, s + MARGIN) * len(d_cal))) - 1]
        t_te = ranked[int(round(s * len(d_cal))) - 1]
        if ok_cal[d_cal >= t_cal].all() and ok_te[d_te >= t_te].all():
            shares.append(s)
    return shares


def tier1(data: Data, scores: pd.DataFrame, seed: int) -> dict[str, np.ndarray]:
    """The cheap judge of one split: its out-of-fold P(correct) on the calibration rows and its
    P(correct) on the test rows (cached in ``cache/cascade_tier1_*.npz``: the fit is the slow
    part, and the LLM verdicts the cascade needs depend on it)."""
    path = CACHE / f"cascade_tier1_{data.name}_{seed}_{data.sha256[:12]}.npz"
    if path.exists():
        return dict(np.load(path))
    cols = score_columns(scores)
    by_col = {c: (mid, params) for c, mid, params in DEFAULT_METRICS}
    specs = [FeatureSpec.from_metric(get_metric(by_col[c][0], **by_col[c][1]), c) for c in cols]
    X, y, g = scores[cols], data.y, data.groups
    tr, te = held_out_split(len(y), SIZE, groups=g, seed=seed)
    judge, report = fit_judge(
        X.iloc[tr].reset_index(drop=True),
        y[tr],
        specs,
        groups=g[tr],
        cv=CrossValidation(n_boot=200, seed=seed),
    )
    assert judge.probability is not None
    out = {
        "tr": tr,
        "te": te,
        "p_cal": judge.probability.predict(report.oof_proba[report.winner]),
        "p_te": judge.probability.predict(
            judge.model.predict_proba(X.iloc[te][judge.columns].reset_index(drop=True))[:, 1]
        ),
    }
    np.savez(path, **out)
    return out


def needed_rows(fit: dict[str, np.ndarray], max_share: float) -> np.ndarray:
    """Rows whose LLM verdict a cascade with LLM shares up to ``max_share`` can ask for: the
    calibration rows the CV folds' bands can reach (``max_share`` + the margin) and the test
    rows in the widest band."""
    d_cal = doubt(fit["p_cal"], fit["p_cal"] >= 0.5)
    d_te = doubt(fit["p_te"], fit["p_te"] >= 0.5)
    k = int(round(min(1.0, max_share + MARGIN) * len(d_cal)))
    t_margin = np.sort(d_cal)[::-1][k - 1]
    t_band = np.sort(d_cal)[::-1][max(1, int(round(max_share * len(d_cal)))) - 1]
    return np.concatenate([fit["tr"][d_cal >= t_margin], fit["te"][d_te >= t_band]])


def run_seed(
    data: Data, scores: pd.DataFrame, p_llm, secs, seed: int, max_share: float
) -> tuple[dict, pd.DataFrame]:
    fit = tier1(data, scores, seed)
    tr, te, p_cal, p_te = fit["tr"], fit["te"], fit["p_cal"], fit["p_te"]
    y, g = data.y, data.groups
    ok = np.isfinite(p_llm)
    shares = [
        s
        for s in _covered_shares(
            doubt(p_cal, p_cal >= 0.5), doubt(p_te, p_te >= 0.5), ok[tr], ok[te]
        )
        if s <= max_share + 1e-9
    ]
    llm_feature = FeatureSpec.from_metric(get_metric("llm_judge", **LLM_PARAMS))
    measured = secs[np.isfinite(secs) & (secs > 0)]
    tier = fit_cascade(
        p_cal,
        np.where(ok[tr], p_llm[tr], 0.5),
        y[tr],
        llm_feature,
        groups=g[tr],
        seed=seed,
        llm_seconds_per_item=float(np.median(measured)) if len(measured) else 0.0,
    )
    if tier.llm_share not in shares:  # the CV chose a share beyond the computed verdicts
        alone = [r for r in tier.curve if r["human_share"] == 0 and r["llm_share"] in shares]
        best = max(r["cv_accuracy"] for r in alone)
        pick = min(r["llm_share"] for r in alone if r["cv_accuracy"] >= best - 0.005)
        tier = tier.at(llm_share=pick, human_share=0.0)
    res = tier.decide(p_te, np.where(ok[te], p_llm[te], np.nan))
    yte = y[te]
    v1 = p_te >= 0.5

    def with_people(verdict: np.ndarray, d: np.ndarray) -> float:
        order = np.argsort(-d, kind="stable")
        routed = np.zeros(len(te), dtype=bool)
        routed[order[: int(round(PEOPLE * len(te)))]] = True
        return float(np.mean(np.where(routed, yte, verdict) == yte))

    row = {
        "dataset": data.name,
        "seed": seed,
        "n_test": len(te),
        "cheap_alone": float(np.mean(v1 == yte)),
        "cascade_alone": float(np.mean(res.verdict == yte)),
        "cheap_people20": with_people(v1, doubt(p_te, v1)),
        "cascade_people20": with_people(res.verdict, res.doubt),
        "llm_share_chosen": tier.llm_share,
        "llm_share_test": float(np.mean(res.tier == "llm")),
        "max_share_covered": max(shares),
        "coef_cheap": tier.coef_cheap,
        "coef_llm": tier.coef_llm,
        "llm_auc_cal": tier.llm_auc,
        "cv_accuracy": tier.cv_accuracy,
    }
    if ok[te].all():
        lp = p_llm[te]
        row["llm_alone_test"] = float(np.mean((lp >= 0.5) == yte))
    out = pd.DataFrame(
        {
            "qa_model": [data.items[i].qa_model or "" for i in te],
            "judge_probability": res.probability,
        }
    )
    return row, out


def main() -> None:
    import argparse

    triage_ppi.LABELS = (100,)  # the one label budget this table reports
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--seeds", type=int, default=len(SEEDS))
    ap.add_argument("--max-llm-share", type=float, default=0.4)
    ap.add_argument(
        "--needs",
        action="store_true",
        help="only fit the cheap judges and write cache/cascade_needs.json: the rows whose LLM "
        "verdicts the cascade can ask for (llm_verdicts.py --needs computes them first)",
    )
    ap.add_argument(
        "--llm-runtime",
        choices=("auto", "transformers"),
        default="auto",
        help="whose verdicts: llama.cpp's (auto) or transformers' on a GPU (results get a suffix)",
    )
    ap.add_argument("--llm-device", default="cuda", help="with --llm-runtime transformers")
    args = ap.parse_args()
    suffix = ""
    if args.llm_runtime == "transformers":
        LLM_PARAMS.update(runtime="transformers", device=args.llm_device)
        suffix = f"_transformers_{args.llm_device.split(':')[0]}"
    if args.needs:
        needs = {}
        for name in args.datasets:
            data = load_data(name)
            scores = cached_scores(data, log=print, rescore=False)
            rows: set[int] = set()
            for seed in range(args.seeds):
                rows |= set(needed_rows(tier1(data, scores, seed), args.max_llm_share).tolist())
                print(f"{name} seed {seed}: {len(rows)} rows needed so far", flush=True)
            needs[name] = sorted(int(i) for i in rows)
        (CACHE / "cascade_needs.json").write_text(json.dumps(needs))
        return
    lines = [
        "| dataset | LLM verdicts | judge alone: cheap | judge alone: cascade | LLM share (test) "
        "| 20% to people: cheap | 20% to people: cascade | PPI width / human-only (cascade) "
        "| PPI coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.datasets:
        data = load_data(name)
        scores = cached_scores(data, log=print, rescore=False)
        p_llm, secs = llm_probabilities(data)
        rows, ppi = [], []
        for seed in range(args.seeds):
            t0 = time.time()
            row, out = run_seed(data, scores, p_llm, secs, seed, args.max_llm_share)
            rows.append(row)
            te = held_out_split(len(data.y), SIZE, groups=data.groups, seed=seed)[1]
            ppi += _ppi_rows(data, te, out, seed)
            print(f"{name} seed {seed}: {row} ({time.time() - t0:.0f}s)", flush=True)
        frame = pd.DataFrame(rows)
        RESULTS.mkdir(exist_ok=True)
        frame.to_csv(RESULTS / f"cascade_{name}{suffix}.csv", index=False)
        p = pd.DataFrame(ppi)
        per_model = p[~p["overall"]]
        m = frame.mean(numeric_only=True)
        sd = frame.std(numeric_only=True, ddof=0)
        lines.append(
            f"| {name} | {np.isfinite(p_llm).mean():.0%} of rows (shares up to "
            f"{frame['max_share_covered'].min():.0%}) | {100 * m.cheap_alone:.1f} ± "
            f"{100 * sd.cheap_alone:.1f} | {100 * m.cascade_alone:.1f} ± "
            f"{100 * sd.cascade_alone:.1f} | {100 * m.llm_share_test:.0f}% | "
            f"{100 * m.cheap_people20:.1f} | {100 * m.cascade_people20:.1f} | "
            f"{(per_model['ppi_width'] / per_model['human_width']).mean():.2f} | "
            f"{per_model['ppi_covers'].mean():.3f} |"
        )
    runtime = (
        "LLM verdicts: the packaged GGUF through llama.cpp on this machine's CPU."
        if not suffix
        else f"LLM verdicts: the packaged GGUF read by transformers, bfloat16 on "
        f"{args.llm_device} (experiments/llm_verdicts_offload.py)."
    )
    write_result(
        f"cascade{suffix}.md",
        [
            "Cascade on the test rows (cheap judge calibrated on 300 labels, LLM tier fitted "
            "on the same 300 by 5-fold CV; mean ± sd over 5 seeds). PPI: 100 random labels per "
            f"draw, per-model intervals pooled over models with >= 10 labels. {runtime}",
            f"LLM shares allowed up to {args.max_llm_share:.0%}.",
            "",
            *lines,
        ],
    )


if __name__ == "__main__":
    main()
