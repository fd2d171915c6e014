"""Train the default PANDA model shipped as ``qaeval_core/data/panda_default.json.gz``.

How the shipped model was made (run from the repository root)::

    .venv/bin/python scripts/train_panda.py

1. Data: ``../shared/data/pedants_ae_augmented_train.jsonl`` (15,077 rows), the PANDA augmented
   training set of Li et al. 2024 (PEDANTS / PANDA; repo zli12321/Answer_Equivalence_Dataset):
   SQuAD-based human answer-equivalence pairs mixed with rule-derived synthetic pairs, binary
   labels. Research data without a licence file: it is used for training only and no row is
   shipped (the model file holds a vocabulary, idf values and weights).
2. Held-out estimate: 20 % of the *questions* (grouped by SQuAD-normalised question text, so the
   same question never sits on both sides; seed 668) are held out; a model fitted on the other
   80 % is scored on them (accuracy, balanced accuracy), next to token F1 >= 0.5 as a baseline.
3. The shipped model is then fitted on all rows with the paper's settings
   (``SGDClassifier(loss="log_loss", penalty="l2", tol=1e-3, random_state=668)``).
4. Out-of-domain check (not used for training or tuning): accuracy on the human-labelled
   ``kamalloo_nq301.jsonl`` and ``answer_matching_mmlu_pro.jsonl`` (rows with a binary label),
   max over references.

The numbers are printed and stored in the model file's ``metadata``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qaeval_core.metrics.panda import PandaClassifier, overlap_features  # noqa: E402
from qaeval_core.text.squad import normalize_answer, tokens  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def _rows(path: Path) -> list[dict]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            label = (row.get("human") or {}).get("label")
            if label is None or not row.get("references"):
                continue
            out.append(row)
    return out


def _triples(rows: list[dict]) -> tuple[list[tuple[str, str, str]], np.ndarray]:
    X = [(str(r["candidate"]), str(r["references"][0]), str(r["question"])) for r in rows]
    y = np.array([int(r["human"]["label"]) for r in rows])
    return X, y


def _balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    rec = [float(np.mean(pred[y == c] == c)) for c in (0, 1) if np.any(y == c)]
    return float(np.mean(rec))


def _ood(clf: PandaClassifier, path: Path) -> dict | None:
    if not path.exists():
        return None
    rows = _rows(path)
    owner, X = [], []
    for i, r in enumerate(rows):
        for ref in r["references"]:
            owner.append(i)
            X.append((str(r["candidate"]), str(ref), str(r["question"])))
    proba = clf.predict_proba(X)[:, 1]
    best = np.zeros(len(rows))
    np.maximum.at(best, np.asarray(owner), proba)
    y = np.array([int(r["human"]["label"]) for r in rows])
    pred = (best >= 0.5).astype(int)
    return {
        "rows": len(rows),
        "accuracy": round(float(np.mean(pred == y)), 4),
        "balanced_accuracy": round(_balanced_accuracy(y, pred), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=SHARED / "pedants_ae_augmented_train.jsonl")
    ap.add_argument(
        "--out", type=Path, default=REPO / "qaeval_core" / "data" / "panda_default.json.gz"
    )
    ap.add_argument("--test-size", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=668)
    args = ap.parse_args(argv)

    from sklearn.model_selection import GroupShuffleSplit

    rows = _rows(args.data)
    X, y = _triples(rows)
    groups = [normalize_answer(q) for _, _, q in X]
    split = GroupShuffleSplit(n_splits=1, test_size=args.test_size, random_state=args.seed)
    train_idx, test_idx = next(split.split(X, y, groups))
    clf = PandaClassifier().fit([X[i] for i in train_idx], y[train_idx])
    Xt, yt = [X[i] for i in test_idx], y[test_idx]
    pred = clf.predict(Xt)
    f1 = overlap_features([tokens(c) for c, _, _ in Xt], [tokens(r) for _, r, _ in Xt])[:, 0]
    heldout = {
        "rows": len(test_idx),
        "split": f"GroupShuffleSplit by normalised question, test_size={args.test_size}, "
        f"random_state={args.seed}",
        "accuracy": round(float(np.mean(pred == yt)), 4),
        "balanced_accuracy": round(_balanced_accuracy(yt, pred), 4),
        "baseline_f1_ge_0.5_accuracy": round(float(np.mean((f1 >= 0.5).astype(int) == yt)), 4),
        "majority_class_accuracy": round(float(max(np.mean(yt), 1 - np.mean(yt))), 4),
    }
    print("held-out:", json.dumps(heldout))

    final = PandaClassifier().fit(X, y)
    ood = {
        name: _ood(final, SHARED / f"{name}.jsonl")
        for name in ("kamalloo_nq301", "answer_matching_mmlu_pro")
    }
    print("out-of-domain (final model):", json.dumps(ood))
    import sklearn

    metadata = {
        "trained_by": "scripts/train_panda.py",
        "data": "pedants_ae_augmented_train.jsonl (Li et al. 2024, PANDA augmented training "
        "set; zli12321/Answer_Equivalence_Dataset); rows are not shipped",
        "rows": len(rows),
        "positives": int(y.sum()),
        "heldout": heldout,
        "out_of_domain": ood,
        "sklearn": sklearn.__version__,
        "n_iter": final.n_iter_,
    }
    final.save(args.out, metadata)
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB, "
        f"{len(final.vocabulary_)} terms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
