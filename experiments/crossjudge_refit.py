"""Experiment: does refitting ``crossjudge`` on the N calibration labels clear the NQ301 target?

Run from the repository root (CPU, 2 torch threads; default metric scores are read from the
cache that ``experiments/calibration.py`` fills)::

    .venv/bin/python experiments/crossjudge_refit.py                  # both sets, seeds 0-2
    .venv/bin/python experiments/crossjudge_refit.py --seeds 5 --folds 5

Hypothesis (issue 6): continuing the training of the shipped ``crossjudge`` cross-encoder on the
N in-domain labels (domain adaptation, as "PANDA refitted" does for PANDA) makes it much better
on the evaluation sets' answers, and the exported-judge stacker that reads the refit score
beats PEDANTS and the best uncalibrated metric by >= 2 points on NQ301 at N = 300.

Protocol, per dataset and seed (the held-out discipline of experiments/README.md):

1. ``held_out_split(n, N, groups=question, seed)`` exactly as ``experiments/calibration.py``:
   N rows for fitting, drawn by whole question; every other labelled row is the test set and is
   touched by no fitting or selection step.
2. Refit (all hyper-parameters fixed before any test row was looked at): start from the
   shipped weights (LoRA rank 16 factors, LayerNorms and head of
   ``qaeval_core/data/crossjudge``, base MiniLM frozen), continue training LoRA + LayerNorms +
   head with BCE, AdamW (lr ``--lr``, warm-up 10 % then linear decay, grad clip 1), ``--epochs``
   epochs, batches of ``--batch-size`` items. An item with several references is scored as in
   the metric, max over references, and the loss is taken on that max logit (multiple-instance
   form, so a correct answer need not match every reference). Mixed in: ``--panda-mix`` x N
   random rows of the PANDA training file (questions occurring in the evaluation sets dropped,
   as in ``scripts/train_crossjudge.py``) against forgetting. Input caps from the shipped
   ``meta.json`` (128 tokens).
3. Scores for the stacker without leakage: the N rows get out-of-fold refit scores (``--folds``
   folds of the N rows assigned by ``assign_folds`` grouped by question, one refit per fold on
   the other folds); the test rows get the scores of one refit on all N rows.
4. On the N rows: ``fit_judge`` exactly as ``qaeval calibrate`` / ``calibration.py`` run it
   (stacker vs threshold vs fusion by grouped 5-fold CV, winner refit on all N), on (a) the 24
   default inputs, (b) + the shipped ``crossjudge``, (c) + the refit score, (d) + both; judges
   are saved to JSON, loaded back and applied to the test rows' scores. The refit crossjudge
   alone: a threshold calibrated on its out-of-fold scores of the N rows, and at 0.5.
5. On the test rows: accuracy with a 95 % bootstrap CI over questions; paired bootstrap of the
   judges against PEDANTS and against the best uncalibrated default metric (chosen on the test
   rows, the oracle choice calibration.py makes).

Output: ``experiments/results/crossjudge_refit.md`` (rewritten after every split).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    DATASETS,
    FEATURE_ONLY,
    Data,
    cached_scores,
    load_data,
    score_columns,
)
from qaeval_core.calibrate import (
    CrossValidation,
    ThresholdClassifier,
    bootstrap_ci,
    fit_judge,
    held_out_split,
    paired_bootstrap,
)
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.calibrate.protocol import assign_folds, iter_folds
from qaeval_core.judge import FeatureSpec, Judge, items_frame
from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.crossjudge import (
    DELTA_FILE,
    META_FILE,
    CrossJudge,
    build_net,
    default_weights,
    encode_triples,
    pad_batch,
)
from qaeval_core.models.loading import DEFAULT_EMBEDDING_MODEL, resolve_model_path
from qaeval_core.schema import Item
from qaeval_core.text.squad import normalize_answer

RESULTS = Path(__file__).resolve().parent / "results"
PANDA_TRAIN = Path(__file__).resolve().parents[2] / "shared" / "data"
PANDA_TRAIN = PANDA_TRAIN / "pedants_ae_augmented_train.jsonl"
REFIT = "crossjudge_refit"


# -- the refit model ---------------------------------------------------------------------------
class Refitter:
    """The shipped crossjudge in its training form (LoRA unmerged), reset before every fit."""

    def __init__(self, threads: int) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        torch.set_num_threads(threads)
        folder = default_weights()
        self.meta = json.loads((folder / META_FILE).read_text("utf-8"))
        base = resolve_model_path(DEFAULT_EMBEDDING_MODEL)
        self.tok = AutoTokenizer.from_pretrained(base)
        self.net = build_net(
            base, lora_rank=int(self.meta["lora_rank"]), lora_alpha=float(self.meta["lora_alpha"])
        )
        params = dict(self.net.named_parameters())
        delta = load_file(str(folder / DELTA_FILE))
        with torch.no_grad():
            for k, v in delta.items():
                params[k].copy_(v.float())
        self.trainable = [p for p in self.net.parameters() if p.requires_grad]
        self.init = [p.detach().clone() for p in self.trainable]
        self.caps = {k: int(self.meta[k]) for k in ("max_length", "max_question", "max_reference")}

    def encode(self, items: list[Item]) -> list[list[list[int]]]:
        """Token ids of every (question, reference, candidate) triple, per item ([] = none)."""
        owner, qs, rs, cs = [], [], [], []
        for i, it in enumerate(items):
            cand = str(it.candidate or "")
            refs = [str(r) for r in it.references if r is not None and str(r).strip()]
            if not cand.strip():
                continue
            for r in refs:
                owner.append(i)
                qs.append(str(it.question or ""))
                rs.append(r)
                cs.append(cand)
        ids = encode_triples(self.tok, qs, rs, cs, **self.caps) if owner else []
        out: list[list[list[int]]] = [[] for _ in items]
        for o, x in zip(owner, ids, strict=True):
            out[o].append(x)
        return out

    def reset(self) -> None:
        import torch

        with torch.no_grad():
            for p, p0 in zip(self.trainable, self.init, strict=True):
                p.copy_(p0)

    def _item_logits(self, units: list[list[list[int]]]) -> object:
        """Max-over-references logit per unit (every unit has at least one triple)."""
        import torch

        flat = [x for u in units for x in u]
        input_ids, mask = pad_batch(flat)
        logits = self.net(input_ids, mask)
        width = max(len(u) for u in units)
        grid = torch.full((len(units), width), -1e4, dtype=logits.dtype)
        rows = torch.tensor([i for i, u in enumerate(units) for _ in u])
        cols = torch.tensor([j for u in units for j in range(len(u))])
        grid = grid.index_put((rows, cols), logits)
        return grid.max(dim=1).values

    def fit(
        self,
        units: list[list[list[int]]],
        y: np.ndarray,
        *,
        epochs: int,
        lr: float,
        batch_size: int,
        seed: int,
    ) -> dict[str, float]:
        """Continue training from the shipped weights on ``units`` (items with >= 1 triple)."""
        import torch

        self.reset()
        keep = [i for i, u in enumerate(units) if u]
        units = [units[i] for i in keep]
        yt = torch.tensor(np.asarray(y)[keep], dtype=torch.float32)
        rng = random.Random(seed)
        torch.manual_seed(seed)
        plan = []
        for _ in range(epochs):
            idx = list(range(len(units)))
            rng.shuffle(idx)
            plan += [idx[k : k + batch_size] for k in range(0, len(idx), batch_size)]
        total, warm = len(plan), max(1, len(plan) // 10)
        opt = torch.optim.AdamW(self.trainable, lr=lr, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
        )
        loss_fn = torch.nn.BCEWithLogitsLoss()
        self.net.train()
        t0, c0 = time.time(), time.process_time()
        for batch in plan:
            loss = loss_fn(self._item_logits([units[j] for j in batch]), yt[batch])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.trainable, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
        self.net.eval()
        return {
            "steps": total,
            "wall_s": time.time() - t0,
            "cpu_s": time.process_time() - c0,
            "last_loss": float(loss.detach()),
        }

    def score(self, units: list[list[list[int]]], batch_size: int = 128) -> np.ndarray:
        """P(correct) per item, max over references; 0 for an item without triples."""
        import torch

        flat, owner = [], []
        for i, u in enumerate(units):
            for x in u:
                flat.append(x)
                owner.append(i)
        out = np.zeros(len(units))
        if not flat:
            return out
        order = np.argsort([len(x) for x in flat], kind="stable")
        probs = np.zeros(len(flat))
        self.net.eval()
        with torch.inference_mode():
            for s in range(0, len(order), batch_size):
                chunk = order[s : s + batch_size]
                input_ids, mask = pad_batch([flat[j] for j in chunk])
                probs[chunk] = torch.sigmoid(self.net(input_ids, mask)).numpy()
        best = np.full(len(units), -1.0)
        np.maximum.at(best, np.asarray(owner), probs)
        return np.clip(best, 0.0, 1.0)


def panda_units(refitter: Refitter) -> tuple[list[list[list[int]]], np.ndarray]:
    """The PANDA training rows (first reference, as the shipped training) minus any question
    that occurs in an evaluation set."""
    eval_q = {normalize_answer(it.question) for d in DATASETS for it in load_data(d).items}
    rows = []
    with PANDA_TRAIN.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            if (r.get("human") or {}).get("label") not in (0, 1) or not r.get("references"):
                continue
            if normalize_answer(str(r["question"])) in eval_q:
                continue
            rows.append(r)
    items = [
        Item(
            question=str(r["question"]),
            references=(str(r["references"][0]),),
            candidate=str(r["candidate"]),
        )
        for r in rows
    ]
    return refitter.encode(items), np.array([int(r["human"]["label"]) for r in rows])


# -- one split ---------------------------------------------------------------------------------
def _acc(y: np.ndarray, pred: np.ndarray, groups: np.ndarray, seed: int, n_boot: int) -> dict:
    est, lo, hi = bootstrap_ci(y, pred, "accuracy", n_boot=n_boot, seed=seed, groups=groups)
    return {"accuracy": est, "lo": lo, "hi": hi}


def run_split(
    data: Data,
    scores: pd.DataFrame,
    units: list[list[list[int]]],
    refitter: Refitter,
    panda: tuple[list[list[list[int]]], np.ndarray],
    size: int,
    seed: int,
    args: argparse.Namespace,
    tmp: Path,
) -> tuple[list[dict], list[dict]]:
    y, g = data.y, data.groups
    tr, te = held_out_split(len(y), size, groups=g, seed=seed)
    yt, yte, gtr, gte = y[tr], y[te], g[tr], g[te]
    rng = np.random.default_rng(1000 + seed)
    n_mix = int(round(args.panda_mix * len(tr)))
    fits: list[dict] = []

    def refit(idx_in_tr: np.ndarray, tag: str) -> None:
        pick = rng.choice(len(panda[1]), size=n_mix, replace=False) if n_mix else []
        u = [units[tr[i]] for i in idx_in_tr] + [panda[0][j] for j in pick]
        lab = np.concatenate([yt[idx_in_tr].astype(int), panda[1][pick].astype(int)])
        info = refitter.fit(
            u, lab, epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, seed=seed
        )
        fits.append({"fit": tag, "rows": len(u), **info})
        print(
            f"    refit {tag}: {len(u)} rows, {info['steps']} steps, "
            f"{info['wall_s']:.0f}s wall / {info['cpu_s']:.0f}s CPU, loss {info['last_loss']:.3f}",
            flush=True,
        )

    # Out-of-fold refit scores for the N rows, one refit on all N for the test rows.
    oof = np.full(len(tr), np.nan)
    folds = assign_folds(len(tr), args.folds, groups=gtr, y=yt, seed=seed)
    for fold in iter_folds(folds, groups=gtr):
        refit(fold.train, f"fold {fold.index}")
        oof[fold.test] = refitter.score([units[tr[i]] for i in fold.test])
    refit(np.arange(len(tr)), "all N")
    t0 = time.process_time()
    test_scores = refitter.score([units[i] for i in te])
    fits[-1]["score_test_cpu_s"] = time.process_time() - t0
    col = np.zeros(len(y))
    col[tr], col[te] = oof, test_scores
    frame = scores.copy()
    frame[REFIT] = col

    rows: list[dict] = []

    def add(method: str, pred: np.ndarray, **extra: object) -> None:
        pred = np.asarray(pred, bool)
        rows.append({"method": method, **_acc(yte, pred, gte, seed, args.n_boot), **extra})

    cols = score_columns(scores)
    metrics = [c for c in cols if c not in FEATURE_ONLY]
    uncal = {c: scores[f"{c}__dec"].to_numpy()[te] for c in metrics}
    best_c = max(uncal, key=lambda c: np.mean(uncal[c] == yte))
    ped = scores["pedants__dec"].to_numpy()[te]
    add("PEDANTS (qa-metrics)", ped)
    add("best uncalibrated metric (chosen on test)", uncal[best_c], chosen=best_c)
    add("crossjudge shipped, 0.5", scores["crossjudge"].to_numpy()[te] >= 0.5)
    m = ThresholdClassifier().fit(scores[["crossjudge"]].iloc[tr], yt)
    add("crossjudge shipped, threshold on N", m.predict(scores[["crossjudge"]].iloc[te]))
    add("crossjudge refit, 0.5", test_scores >= 0.5)
    m = ThresholdClassifier().fit(pd.DataFrame({REFIT: oof}), yt)
    add(
        "crossjudge refit, threshold on N (out-of-fold)",
        m.predict(pd.DataFrame({REFIT: test_scores})),
        threshold=m.threshold_,
    )
    rows[-1]["oof_accuracy_on_N"] = float(np.mean((oof >= m.threshold_) == yt))

    by_col = {c: (mid, params) for c, mid, params in DEFAULT_METRICS}
    spec_of = {
        c: FeatureSpec.from_metric(get_metric(by_col[c][0], **by_col[c][1]), c) for c in cols
    }
    spec_of["crossjudge"] = FeatureSpec.from_metric(CrossJudge(), "crossjudge")
    # The refit column is named by a placeholder weights folder: it is not a shippable metric yet.
    refit_metric = CrossJudge(weights=f"refit:{data.name}:N{size}:seed{seed}")
    spec_of[REFIT] = FeatureSpec.from_metric(refit_metric, REFIT)
    variants = {
        "judge: default inputs": cols,
        "judge: + crossjudge (shipped)": [*cols, "crossjudge"],
        "judge: + crossjudge refit": [*cols, REFIT],
        "judge: + shipped + refit": [*cols, "crossjudge", REFIT],
    }
    texts = items_frame([data.items[i] for i in tr])
    for name, vcols in variants.items():
        judge, report = fit_judge(
            frame[vcols].iloc[tr].reset_index(drop=True),
            yt,
            [spec_of[c] for c in vcols],
            groups=gtr,
            texts=texts,
            cv=CrossValidation(n_boot=200, seed=seed),
            fitted_on={"dataset": data.name},
        )
        path = judge.save(tmp / f"judge_{data.name}_{size}_{seed}.json")
        loaded = Judge.from_config(path)
        pred = loaded.judge_scores(frame[loaded.columns].iloc[te].reset_index(drop=True))
        pred = pred["judge_correct"].to_numpy()
        coef = ""
        if report.winner == "stacker" and REFIT in loaded.columns:
            mdl = loaded.model
            names = [str(c) for c in mdl.feature_names_in_]
            coef = f"{float(mdl.coef_[names.index(REFIT)]):+.2f}"
        add(name, pred, chosen=f"{report.winner} on {len(loaded.columns)}", refit_coef=coef)
        for other_name, other in (("PEDANTS", ped), ("best uncalibrated", uncal[best_c])):
            d = paired_bootstrap(yte, pred, other, n_boot=args.n_boot, seed=seed, groups=gte)
            rows.append(
                {
                    "method": f"{name} - {other_name}",
                    "accuracy": d["diff"],
                    "lo": d["lo"],
                    "hi": d["hi"],
                }
            )
    for r in rows + fits:
        r.update(dataset=data.name, size=size, seed=seed, n_train=len(tr), n_test=len(te))
    return rows, fits


# -- report ------------------------------------------------------------------------------------
def _cell(v: float, diff: bool) -> str:
    return f"{'+' if diff and v >= 0 else ''}{100 * v:.1f}"


def write_report(rows: pd.DataFrame, fits: pd.DataFrame, args: argparse.Namespace) -> str:
    lines = [
        "# crossjudge refit on the N calibration labels (issue 6, NQ301 target)\n",
        "Protocol: docstring of `experiments/crossjudge_refit.py` (held-out split by question "
        f"as in `calibration.py`, N = {args.size}; refit from the shipped weights: "
        f"{args.epochs} epochs, lr {args.lr}, batches of {args.batch_size} items, "
        f"{args.panda_mix:g} x N PANDA training rows mixed in; out-of-fold refit scores for "
        f"the N rows from {args.folds} grouped folds, one refit on all N for the test rows). "
        "Test accuracy (%) on the rows not used for fitting; mean over seeds, mean of the "
        "per-split 95% bootstrap CI bounds (questions resampled) in brackets, then the "
        "per-seed values. Differences are paired bootstraps on the same test rows.\n",
    ]
    for ds in rows["dataset"].unique():
        sub = rows[rows["dataset"] == ds]
        seeds = sorted(sub["seed"].unique())
        lines.append(f"\n## {ds}\n")
        lines.append(
            f"{int(sub['n_test'].mean())} test rows on average; seeds {', '.join(map(str, seeds))}."
            "\n"
        )
        lines.append("| method | mean [CI] | " + " | ".join(f"seed {s}" for s in seeds) + " |")
        lines.append("|---|---|" + "---|" * len(seeds))
        for m in sub["method"].unique():
            r = sub[sub["method"] == m].set_index("seed")
            diff = " - " in m
            label = f"**{m}** (points)" if diff else m
            mean = (
                f"{_cell(r['accuracy'].mean(), diff)} "
                f"[{_cell(r['lo'].mean(), diff)}, {_cell(r['hi'].mean(), diff)}]"
            )
            cells = [_cell(r.loc[s, "accuracy"], diff) if s in r.index else "-" for s in seeds]
            lines.append(f"| {label} | {mean} | " + " | ".join(cells) + " |")
        extra = sub[sub["method"] == "crossjudge refit, threshold on N (out-of-fold)"]
        if not extra.empty:
            lines.append(
                "\nRefit crossjudge, out-of-fold accuracy on the N rows (at the threshold fitted "
                "on them): "
                + ", ".join(
                    f"seed {int(r.seed)} {100 * r.oof_accuracy_on_N:.1f} (thr {r.threshold:.2f})"
                    for r in extra.itertuples()
                )
            )
        for key in ("best uncalibrated metric (chosen on test)",):
            picks = sub[sub["method"] == key]["chosen"].tolist()
            lines.append(f"\nBest uncalibrated metric per seed: {', '.join(picks)}.")
        j = sub[sub["method"].str.startswith("judge: ") & ~sub["method"].str.contains(" - ")]
        lines.append(
            "\nExported judge winners / refit coefficient (standardised) per seed: "
            + "; ".join(
                f"{r.method.removeprefix('judge: ')} s{int(r.seed)}: {r.chosen}"
                + (f" ({r.refit_coef})" if isinstance(r.refit_coef, str) and r.refit_coef else "")
                for r in j.itertuples()
                if "refit" in r.method
            )
            + "."
        )
        f = fits[fits["dataset"] == ds]
        if not f.empty:
            folds = f[f["fit"] != "all N"]
            full = f[f["fit"] == "all N"]
            lines.append(
                f"\nCPU cost (2 threads): fold refit {folds['cpu_s'].mean():.0f} s CPU / "
                f"{folds['wall_s'].mean():.0f} s wall ({folds['rows'].mean():.0f} rows, "
                f"{folds['steps'].mean():.0f} steps); refit on all N {full['cpu_s'].mean():.0f} "
                f"s CPU / {full['wall_s'].mean():.0f} s wall ({full['rows'].mean():.0f} rows, "
                f"{full['steps'].mean():.0f} steps); scoring the test rows "
                f"{full['score_test_cpu_s'].mean():.0f} s CPU."
            )
    text = "\n".join(lines) + "\n"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--panda-mix", type=float, default=0.5, help="PANDA rows per in-domain row")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=RESULTS / "crossjudge_refit.md")
    args = ap.parse_args()

    t_start = time.time()
    refitter = Refitter(args.threads)
    panda = panda_units(refitter)
    print(f"PANDA mix pool: {len(panda[1])} rows", flush=True)
    all_rows: list[dict] = []
    all_fits: list[dict] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in args.datasets:
            data = load_data(name)
            scores = cached_scores(data, log=lambda m: print(m, flush=True))
            if "crossjudge" not in scores.columns or "pedants" not in scores.columns:
                raise SystemExit(f"{name}: the cache lacks crossjudge or pedants scores.")
            units = refitter.encode(data.items)
            for seed in range(args.seeds):
                t0 = time.time()
                print(f"{name} N={args.size} seed={seed}", flush=True)
                rows, fits = run_split(
                    data, scores, units, refitter, panda, args.size, seed, args, Path(tmpdir)
                )
                all_rows += rows
                all_fits += fits
                show = {r["method"]: r["accuracy"] for r in rows}
                print(
                    "  "
                    + ", ".join(
                        f"{k}: {100 * show[k]:.1f}"
                        for k in (
                            "PEDANTS (qa-metrics)",
                            "crossjudge refit, threshold on N (out-of-fold)",
                            "judge: + crossjudge (shipped)",
                            "judge: + crossjudge refit",
                            "judge: + shipped + refit",
                        )
                    )
                    + f" ({time.time() - t0:.0f}s)",
                    flush=True,
                )
                text = write_report(pd.DataFrame(all_rows), pd.DataFrame(all_fits), args)
                args.out.write_text(text, "utf-8")
    print(text)
    print(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
