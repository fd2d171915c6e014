"""Compute the LLM verdicts of the shared sets on another machine (a lent GPU), then merge them.

The packaged GGUF runs through llama.cpp here (a CPU wheel: 5-9 s per item on 2 loaded cores).
On a GPU machine transformers reads the same file, dequantised, in bfloat16
(``llm_judge runtime=transformers``); those verdicts are cached under their own key
(``...|transformers@cuda``), never mixed with llama.cpp's. The other machine needs neither the
shared data nor qaeval's store: this script writes the exact messages and cache keys here,
computes there with qaeval's own backend, and merges the verdicts back::

    .venv/bin/python experiments/llm_verdicts_offload.py export .offload/items.jsonl.gz
    # there: python3 experiments/llm_verdicts_offload.py run .offload/items.jsonl.gz \\
    #            --model /tmp/model.gguf --out $OUT/verdicts.sqlite --bench $OUT/bench.json
    .venv/bin/python experiments/llm_verdicts_offload.py merge verdicts.sqlite

``run`` also measures what bench/README reports for a GPU: load time, items/s at batch 1 (the
default: a value independent of its batch) and at batch 16, peak GPU memory.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RUNTIME = {"runtime": "transformers", "device": "cuda"}


def export(target: Path, prompt_name: str = "naqt") -> None:
    from common import DATASETS, load_data

    from qaeval_core.llm.prompts import get_prompt
    from qaeval_core.llm.verdict_cache import verdict_key
    from qaeval_core.metrics.base import get_metric

    metric = get_metric("llm_judge", prompt=prompt_name, **RUNTIME)
    prompt = get_prompt(metric.prompt)
    fingerprint = metric.fingerprint()
    rows: dict[str, list[dict[str, str]]] = {}
    for name in DATASETS:
        for it in load_data(name).items:
            if (it.candidate or "").strip():  # the metric's rule: empty answers get no call
                messages = prompt.messages(it)[0]
                rows[verdict_key(fingerprint, prompt.key, messages)] = messages
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8") as fh:
        json.dump(
            {"fingerprint": fingerprint, "prompt": prompt_name, "key": prompt.key, "rows": rows}, fh
        )
    print(f"{len(rows)} conversations for {fingerprint} -> {target}")


def run(
    items: Path,
    model: str,
    out: Path,
    bench: Path | None,
    bench_rows: int,
    device: str = "cuda",
    limit: int = 0,
) -> None:
    import torch

    from qaeval_core.llm.next_token import TransformersBackend
    from qaeval_core.llm.prompts import get_prompt, probability_from_logprobs
    from qaeval_core.llm.verdict_cache import CachedVerdict, VerdictCache

    with gzip.open(items, "rt", encoding="utf-8") as fh:
        payload = json.load(fh)
    prompt = get_prompt(payload["prompt"])
    assert payload["key"] == prompt.key, "the items were written for another prompt version"
    keys = list(payload["rows"])[: limit or None]
    convs = [payload["rows"][k] for k in keys]
    backend = TransformersBackend(model, device=device, batch_size=1)
    started = time.perf_counter()
    backend.next_tokens(convs[:1])  # loads (dequantises once) and warms up
    load_s = time.perf_counter() - started
    store = VerdictCache(out)
    started = time.perf_counter()
    results = backend.next_tokens(convs)
    batch1_s = time.perf_counter() - started
    unreadable = 0
    for key, res in zip(keys, results, strict=True):
        p = probability_from_logprobs(prompt, res.top)
        unreadable += p is None
        store.put(key, CachedVerdict(p, res.text, res.seconds))
    cuda = device.startswith("cuda")
    dtype = "float32"
    if cuda:
        dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    report = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "dtype": dtype,
        "rows": len(keys),
        "unreadable": unreadable,
        "load_seconds": round(load_s, 1),
        "batch1_items_per_s": round(len(keys) / batch1_s, 1),
    }
    if bench is not None:
        sample = convs[:bench_rows]
        wide = TransformersBackend(model, device=device, batch_size=16)
        started = time.perf_counter()
        wide_results = wide.next_tokens(sample)
        report["batch16_items_per_s"] = round(len(sample) / (time.perf_counter() - started), 1)
        diffs = [
            abs(
                (probability_from_logprobs(prompt, a.top) or 0.5)
                - (probability_from_logprobs(prompt, b.top) or 0.5)
            )
            for a, b in zip(results[: len(sample)], wide_results, strict=True)
        ]
        report["batch16_vs_batch1_max_abs_diff"] = round(max(diffs), 6)
        if cuda:
            report["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        bench.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


def merge(source: Path) -> None:
    from qaeval_core.llm.verdict_cache import VerdictCache

    found = VerdictCache(source).everything()
    mirror = Path(__file__).parent / "cache" / "llm_verdicts.sqlite"
    for target in (VerdictCache(), VerdictCache(mirror)):
        for key, verdict in found.items():
            target.put(key, verdict)
        print(f"{len(found)} verdicts -> {target.path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    e = sub.add_parser("export")
    e.add_argument("target", type=Path)
    e.add_argument("--prompt", default="naqt", help="naqt or lave")
    r = sub.add_parser("run")
    r.add_argument("items", type=Path)
    r.add_argument("--model", required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--bench", type=Path)
    r.add_argument("--bench-rows", type=int, default=512)
    r.add_argument("--device", default="cuda")
    r.add_argument("--limit", type=int, default=0)
    m = sub.add_parser("merge")
    m.add_argument("source", type=Path)
    args = ap.parse_args()
    if args.step == "export":
        export(args.target, args.prompt)
    elif args.step == "run":
        run(args.items, args.model, args.out, args.bench, args.bench_rows, args.device, args.limit)
    else:
        merge(args.source)


if __name__ == "__main__":
    main()
