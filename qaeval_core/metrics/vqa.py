"""VQA accuracy and soft VQA accuracy: agreement with a crowd of references.

VQA-style datasets have up to ten human answers per question; an answer counts as fully right
when three of them say the same (Antol et al. 2015), averaged over the leave-one-out subsets.
Soft VQA accuracy (Hu et al. 2022, LAVE's baseline) replaces string equality with one minus
the character error rate, so near-misses in spelling earn partial credit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qaeval_core.metrics.base import register
from qaeval_core.metrics.lexical import LexicalMetric, reference_at
from qaeval_core.text.normalize import normalize
from qaeval_core.text.profiles import ProfileParam, check_profile, pair_tokens

__all__ = ["vqa_accuracy", "soft_vqa_accuracy", "VQAAccuracy", "SoftVQAAccuracy"]


def _vqa_aggregate(sims: Sequence[float], *, full_at: int, loo_min: int) -> float:
    """VQA accuracy from per-reference match values: min(sum / full_at, 1), averaged over the
    leave-one-out subsets when there are at least ``loo_min`` references (Antol et al.)."""
    n = len(sims)
    if n == 0:
        return 0.0
    total = float(sum(sims))
    if n >= loo_min:
        # Rounded so that one match among ten gives exactly 0.3 (the default threshold).
        return round(sum(min((total - s) / full_at, 1.0) for s in sims) / n, 12)
    return min(total / full_at, 1.0)


def _pair_strings(candidate: str, reference: str, profile: str) -> tuple[str, str]:
    """Normalised candidate and reference under ``profile`` (SQuAD: the memoised strings)."""
    if profile == "spaced":
        return normalize(candidate), normalize(reference)
    ctoks, rtoks = pair_tokens(candidate, reference, profile)
    return " ".join(ctoks), " ".join(rtoks)


def vqa_accuracy(
    candidate: str,
    references: Sequence[str],
    *,
    full_at: int = 3,
    loo_min: int = 10,
    profile: str = "spaced",
) -> tuple[float, int]:
    """VQA accuracy: min(#references equal to the candidate / 3, 1), averaged over the
    leave-one-out subsets with 10 references. Returns (accuracy, number of matches).

    >>> vqa_accuracy("two", ["2", "two", "two"])
    (0.6666666666666666, 2)
    """
    if profile != "spaced":
        pairs = [_pair_strings(candidate, r, profile) for r in references]
        sims = [1.0 if c == r else 0.0 for c, r in pairs]
        return _vqa_aggregate(sims, full_at=full_at, loo_min=loo_min), int(sum(sims))
    cand = normalize(candidate)
    sims = [1.0 if normalize(r) == cand else 0.0 for r in references]
    return _vqa_aggregate(sims, full_at=full_at, loo_min=loo_min), int(sum(sims))


def soft_vqa_accuracy(
    candidate: str,
    references: Sequence[str],
    *,
    full_at: int = 3,
    loo_min: int = 10,
    profile: str = "spaced",
) -> tuple[float, list[float]]:
    """Soft VQA accuracy (Hu et al. 2022, the LAVE baseline): VQA accuracy with the equality
    replaced by ``max(0, 1 - CER)``, CER = Levenshtein distance / reference length (characters,
    normalised text). Returns (accuracy, per-reference similarity)."""
    from rapidfuzz.distance import Levenshtein

    sims: list[float] = []
    for ref in references:
        cand, r = _pair_strings(candidate, ref, profile)
        if not r:
            sims.append(1.0 if not cand else 0.0)
            continue
        cer = Levenshtein.distance(cand, r) / len(r)
        sims.append(max(0.0, 1.0 - cer))
    return _vqa_aggregate(sims, full_at=full_at, loo_min=loo_min), sims


class _VQA(ProfileParam, LexicalMetric):
    """VQA accuracy family. ``full_at`` references must agree for a score of 1 (3 in VQA);
    with at least ``loo_min`` references (10 in VQA) the score is averaged over the
    leave-one-out subsets. The default threshold 0.3 is what one matching reference gets
    among 10 (and 1/3 >= 0.3 with fewer), i.e. "at least one reference agrees"."""

    def __init__(
        self,
        *,
        full_at: int = 3,
        loo_min: int = 10,
        threshold: float = 0.3,
        normalize: str = "spaced",
    ) -> None:
        self.full_at = full_at
        self.loo_min = loo_min
        self.threshold = threshold
        self.normalize = check_profile(normalize)


@register
class VQAAccuracy(_VQA):
    """VQA accuracy (Antol et al. 2015) on SQuAD-normalised strings."""

    id = "vqa_accuracy"
    family = "vqa"
    calibrate_by_default = True
    description = "VQA accuracy: min(#equal references / 3, 1), leave-one-out with 10 refs."

    def _compute(self, cands, refs):
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            acc, matches = vqa_accuracy(
                cand, rs, full_at=self.full_at, loo_min=self.loo_min, profile=self.normalize
            )
            scores[i] = acc
            prof = self.normalize
            best = next((r for r in rs if len(set(_pair_strings(cand, r, prof))) == 1), None)
            details.append({"best_reference": best, "matches": matches, "n_references": len(rs)})
        return scores, details


@register
class SoftVQAAccuracy(_VQA):
    """Soft VQA accuracy (Hu et al. 2022): equality replaced by 1 - character error rate."""

    id = "soft_vqa_accuracy"
    family = "vqa"
    calibrate_by_default = True
    description = "Soft VQA accuracy: VQA accuracy with 1 - CER (rapidfuzz) instead of equality."

    def _compute(self, cands, refs):
        scores = np.zeros(len(cands))
        details: list[dict[str, Any]] = []
        for i, (cand, rs) in enumerate(zip(cands, refs, strict=True)):
            acc, sims = soft_vqa_accuracy(
                cand, rs, full_at=self.full_at, loo_min=self.loo_min, profile=self.normalize
            )
            scores[i] = acc
            j = int(np.argmax(sims)) if sims and max(sims) > 0 else -1
            details.append(
                {
                    "best_reference": reference_at(rs, j),
                    "best_similarity": sims[j] if j >= 0 else 0.0,
                    "n_references": len(rs),
                }
            )
        return scores, details
