"""Score JSONL rows with the PANDA authors' PEDANTS (qa-metrics 0.2.42): the comparison anchor.

Runs in the anchor's own virtual environment (qa-metrics pins scikit-learn 1.3.2 and loads
pickles, so it never shares qaeval's venv); see ../shared/anchors/qa-metrics/README.md:

    NLTK_DATA=../shared/anchors/qa-metrics/nltk_data HF_HUB_OFFLINE=1 \\
        /tmp/qam-venv/bin/python experiments/pedants_anchor.py IN.jsonl OUT.csv

Writes one row per input row: id, pedants_score (max over references of ``get_score``) and
pedants_correct (``evaluate(references, candidate, question)``, the package's own decision).
"""

from __future__ import annotations

import csv
import json
import sys
import time


def main(src: str, dst: str) -> None:
    from qa_metrics.pedant import PEDANT

    pedant = PEDANT()
    with open(src, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    t0 = time.time()
    with open(dst, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["id", "pedants_score", "pedants_correct"])
        for r in rows:
            refs = [str(x) for x in r["references"]]
            cand = str(r["candidate"] or "")
            q = str(r["question"])
            score = max((float(pedant.get_score(ref, cand, q)) for ref in refs), default=0.0)
            correct = bool(pedant.evaluate(refs, cand, q)) if cand else False
            out.writerow([r["id"], f"{score:.6f}", int(correct)])
    print(f"{len(rows)} rows in {time.time() - t0:.1f}s -> {dst}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
