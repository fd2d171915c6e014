"""Build A-VERT's shipped distractor pool, ``qaeval_core/data/avert_distractors.jsonl``.

How the shipped file was made (run from the repository root)::

    .venv/bin/python scripts/build_avert_distractors.py

Why a fixed pool: A-VERT needs wrong answers for open questions that bring none (no choices,
no ``wrong_answers``). It used to take them from the *other items of the batch*, so one item's
score depended on what it was scored with (issue 21: 0.884 alone, 0.648 in a 6-row file). The
pool must therefore not depend on the batch; a fixed list of real short answers of many types
(people, places, years, dates, numbers, titles) lets the metric still pick the plausible ones
(a year for a year) by embedding.

Source: every reference of the 301 questions of ``../shared/data/kamalloo_nq301.jsonl``
(Kamalloo et al. 2023, repo ehsk/OpenQA-eval, MIT; questions from Natural Questions, CC BY-SA
3.0; see ``qaeval_core/data/LICENSE-avert_distractors.md``). Each line is ``{"answer": text,
"questions": [SQuAD-normalised questions it answers]}``: A-VERT never uses an answer of the item's
own question as a distractor. Text is repaired (``ftfy``: mojibake) and its white space
collapsed (no-break spaces); answers are sorted, so the file is byte-stable.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import ftfy

from qaeval_core.text.squad import normalize_answer

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "kamalloo_nq301.jsonl"
TARGET = ROOT / "qaeval_core" / "data" / "avert_distractors.jsonl"


def build(source: Path) -> list[dict[str, object]]:
    """The pool's rows: each distinct cleaned reference with the questions it answers."""
    owners: dict[str, set[str]] = {}
    for line in source.open(encoding="utf-8"):
        row = json.loads(line)
        question = normalize_answer(str(row["question"]))
        for ref in row["references"]:
            text = " ".join(ftfy.fix_text(str(ref)).split())
            if text:
                owners.setdefault(text, set()).add(question)
    return [{"answer": a, "questions": sorted(owners[a])} for a in sorted(owners)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args()
    rows = build(args.source)
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    args.out.write_text(text, encoding="utf-8")
    print(f"Wrote {len(rows)} answers to {args.out}")


if __name__ == "__main__":
    main()
