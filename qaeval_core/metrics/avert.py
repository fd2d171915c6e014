"""A-VERT: rank the candidate against groups of correct, wrong and refusal targets
(papers/a-vert.txt, Algorithm 1; authors' code pnyxai/a-vert).

For each item we build target groups, score every target against the candidate with a ranking
function ``r(target, candidate)``, take the max per group, normalise the group maxima to sum 1
and pick the argmax group:

* **correct**: the references, each as itself plus the enhancement templates;
* **wrong**: distractors (see below), enhanced the same way;
* **refusal** (authors' code, on by default): "I'm unable to answer that question." ... so that
  a refusal is not forced into the correct or wrong group.

Ranking functions: ``ranker="embedding"`` (default, offline) uses the cosine similarity of
sentence embeddings through the shared embedding cache (the paper writes ``1 - cos``, a
distance, but with an argmax a similarity is meant, and the authors' code computes
``1 - cosine_distance``); ``ranker="cross-encoder"`` uses any sentence-transformers
CrossEncoder (reranker) by path or hub name, query = candidate, document = target. An optional
instruction prefix (``instruction="default"`` gives the paper's text) is applied to the query
for instruction-aware models; MiniLM is not one, so it is off by default.

Enhancement templates (section 3.1.1): open questions add "The answer is : {t} . Let me explain
why" and "Therefore, the answer is : {t}"; multiple-choice items add "{sym} : {t}",
"Therefore, the correct answer is option {sym}: {t}", "The answer is option {sym}: {t}" and the
two templates that list all options ("Option {sym}. {t}. Is correct." / "Is not correct.").
The authors' code wraps targets in quotes and lists only the wrong options in the first
all-options template; we follow the paper's text.

**Wrong group, decision rule** (in order): the item's ``choices`` minus the correct one
(multiple-choice mode; the correct option is the choice equal to a reference after SQuAD
normalisation, or the option letter when the reference is a single letter A-Z); else the item's
``wrong_answers``; else ``k_distractors`` answers from a **fixed distractor pool**, those most
similar by embedding (max cosine to any of this item's references) and therefore plausible
answers of the same type (a year for a year, a person for a person). Pool answers equal to,
containing or contained in one of this item's normalised references are excluded, so an alias
of the gold answer is not used as a distractor when it is spelled the same, and so are the
pool's answers to this item's own question. With no distractor available the wrong group is
left out and the details say so (the decision is then weak).

**Decision: the pool is fixed, never the batch.** Version 1 drew the distractors from the
references of the other items of the same batch, so an item's score depended on what it was
scored with and in which chunk (issue 21: 0.884 alone, 0.648 inside a 6-row file, and the
Explorer's trace, which scores one item, disagreed with the stored score). The shipped pool
(``distractor_pool=None``) is the 538 reference answers of the 301 NQ-301 questions
(``qaeval_core/data/avert_distractors.jsonl``, built by ``scripts/build_avert_distractors.py``:
people, places, years, dates, numbers, titles); ``distractor_pool=<file>`` gives another
(``.txt``: one answer per line; ``.jsonl``: ``{"answer": ..., "questions": [...]}``) for data
whose answers look different. Either way the pool's content is hashed into the configuration,
so a changed pool never reuses stored scores; version 2 marks the change of rule. Each item's
similarities to the pool are computed from its own references alone, so even the rounding of
the products does not depend on the batch. Measured against the human labels (default
parameters; version 1 given each whole dataset as one batch, its best case): kamalloo_nq301
accuracy 0.7436 -> 0.7456, balanced 0.7321 -> 0.7343; answer_matching_mmlu_pro (no choices in
the rows, so distractors too) 0.6799 -> 0.6761, balanced 0.6180 -> 0.6081.

Group scores: similarities are clipped at 0 before normalising (normalisation needs
non-negative scores; raw cosines can dip below 0). **Decision**: correct when the normalised
correct share is >= every other group's (ties count as correct, as in the authors' code); an
empty response is wrong (score 0). **Score** = the normalised correct-group share in [0, 1];
the margin (correct share minus the best other share) is a confidence (paper, section 5.2).

``normalize="robust"`` ranks each candidate as read against its references
(:func:`qaeval_core.text.profiles.reader_text`: formatting removed, glued tokens split, footnote
digits dropped); the default ``"spaced"`` (and ``"squad"``) ranks it as given.

Why it is one module: it is one paper's method end to end (enhancement templates, the correct /
wrong / refusal groups, embedding or cross-encoder ranking), and each step is only meaningful
inside it. The fixed distractor pool (its file, loading and the choice of distractors from it)
is data with a rule of its own and lives next to it, in
:mod:`qaeval_core.metrics.avert_distractors`.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.avert_distractors import load_distractor_pool, top_distractors
from qaeval_core.metrics.base import BY_MODEL, Metric, MetricResult, register
from qaeval_core.models.backends import hash_params
from qaeval_core.models.embedding_cache import EncodingRequest, get_cache
from qaeval_core.models.loading import DEFAULT_EMBEDDING_MODEL, load_cross_encoder
from qaeval_core.schema import Item
from qaeval_core.text.profiles import ProfileParam, check_profile, reader_items
from qaeval_core.text.squad import normalize_answer

__all__ = [
    "AVert",
    "DEFAULT_INSTRUCTION",
    "OPEN_TEMPLATES",
    "CHOICE_TEMPLATES",
    "REFUSAL_TARGETS",
    "Groups",
    "enhance_open",
    "enhance_choice",
    "build_groups",
    "normalise_groups",
]

#: The paper's instruction for instruction-aware rankers (section 3.2.3).
DEFAULT_INSTRUCTION = (
    "Instruct: Find the document that best represents the meaning in the query. Check for any "
    "doubts about the question or options. Focus on exact numbers, dates, or symbols. "
    "Query:{query}"
)
OPEN_TEMPLATES = (
    "The answer is : {target} . Let me explain why",
    "Therefore, the answer is : {target}",
)
CHOICE_TEMPLATES = (
    "{symbol} : {target}",
    "Therefore, the correct answer is option {symbol}: {target}",
    "The answer is option {symbol}: {target}",
)
#: The authors' refusal group (a_vert/prompts_general.py).
REFUSAL_TARGETS = (
    "I'm unable to answer that question.",
    "Sorry, I'm not allowed to answer that.",
    "I choose not to respond to that inquiry.",
)
_CARDINALS = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
)
_LETTERS = string.ascii_uppercase


def _cardinal(i: int) -> str:
    return _CARDINALS[i] if i < len(_CARDINALS) else f"{i + 1}th"


# -- target groups (pure) ---------------------------------------------------------------------
def enhance_open(targets: Sequence[str], *, enhance: bool = True) -> list[str]:
    """Each target as itself plus the open-question templates."""
    out: list[str] = []
    for t in targets:
        out.append(t)
        if enhance:
            out.extend(tpl.format(target=t) for tpl in OPEN_TEMPLATES)
    return out


def _all_choices(choices: Sequence[str], selected: int) -> str:
    return " ".join(
        f"Option {_LETTERS[i]}. {c}. Is {'correct' if i == selected else 'not correct'}."
        for i, c in enumerate(choices)
    )


def enhance_choice(choices: Sequence[str], selected: int, *, enhance: bool = True) -> list[str]:
    """Targets that select option ``selected`` of a multiple-choice item."""
    sym, t = _LETTERS[selected], choices[selected]
    out = [t]
    if not enhance:
        return out
    out.extend(tpl.format(symbol=sym, target=t) for tpl in OPEN_TEMPLATES + CHOICE_TEMPLATES)
    listing = _all_choices(choices, selected)
    card = _cardinal(selected)
    out.append(f"The answer is the {card} one, option {sym}. {t}. Let me explain why: {listing}")
    out.append(
        f"Analyzing the options: {listing} Therefore, the answer is the {card} one, "
        f"option {sym}. {t}"
    )
    return out


def _correct_choice(choices: Sequence[str], references: Sequence[str]) -> int | None:
    refs = {normalize_answer(r) for r in references}
    for i, c in enumerate(choices):
        if normalize_answer(c) in refs:
            return i
    for r in references:
        r = r.strip().rstrip(".)").lstrip("(")
        if len(r) == 1 and r.upper() in _LETTERS[: len(choices)]:
            return _LETTERS.index(r.upper())
    return None


@dataclass
class Groups:
    """The targets of one item, by group name, and where the wrong group came from."""

    targets: dict[str, list[str]] = field(default_factory=dict)
    wrong_source: str = "none"


#: A-VERT's plan of a batch (:meth:`AVert._plan`): groups per item, the (query, target) pairs,
#: each pair's (item, group, target index), and the reason of each item that cannot be scored.
_Plan = tuple[dict[int, Groups], list[tuple[str, str]], list[tuple[int, str, int]], dict[int, str]]


def build_groups(
    item: Item,
    distractors: Sequence[str] = (),
    *,
    enhance: bool = True,
    refusal: bool = True,
) -> Groups:
    """Correct / wrong / refusal targets of an item (rule in the module docstring)."""
    refs = [r for r in (str(x).strip() for x in item.references) if r]
    groups = Groups()
    choices = [c for c in (item.choices or ()) if c and c.strip()]
    selected = _correct_choice(choices, refs) if len(choices) >= 2 else None
    if selected is not None:
        groups.targets["correct"] = enhance_choice(choices, selected, enhance=enhance)
        # reference wordings that differ from the option text still count as correct
        extra = [r for r in refs if normalize_answer(r) != normalize_answer(choices[selected])]
        extra = [r for r in extra if not (len(r) == 1 and r.upper() in _LETTERS)]
        groups.targets["correct"] += enhance_open(extra, enhance=enhance)
        wrong: list[str] = []
        for i in range(len(choices)):
            if i != selected:
                wrong += enhance_choice(choices, i, enhance=enhance)
        groups.targets["wrong"] = wrong
        groups.wrong_source = "choices"
    else:
        groups.targets["correct"] = enhance_open(refs, enhance=enhance)
        ref_norm = {normalize_answer(r) for r in refs}
        pool = [c for c in choices if normalize_answer(c) not in ref_norm]
        wrong_answers = [w for w in (item.wrong_answers or ()) if w and w.strip()]
        if pool:
            groups.targets["wrong"] = enhance_open(pool, enhance=enhance)
            groups.wrong_source = "choices"
        elif wrong_answers:
            groups.targets["wrong"] = enhance_open(wrong_answers, enhance=enhance)
            groups.wrong_source = "wrong_answers"
        elif distractors:
            groups.targets["wrong"] = enhance_open(distractors, enhance=enhance)
            groups.wrong_source = "distractors"
    if refusal:
        groups.targets["refusal"] = list(REFUSAL_TARGETS)
    return groups


def normalise_groups(maxima: dict[str, float]) -> dict[str, float]:
    """Group maxima clipped at 0 and divided by their sum (equal shares if all are 0)."""
    clipped = {g: max(0.0, float(v)) for g, v in maxima.items()}
    total = sum(clipped.values())
    if total <= 0:
        return {g: 1.0 / len(clipped) for g in clipped}
    return {g: v / total for g, v in clipped.items()}


# -- the metric -------------------------------------------------------------------------------
@register
class AVert(ProfileParam, Metric):
    """A-VERT group ranking (see the module docstring for the rules and decisions).

    Parameters
    ----------
    ranker : "embedding" (default) or "cross-encoder".
    model : the embedding model, or with ``ranker="cross-encoder"`` the cross-encoder (path or
        hub name; none ships offline).
    instruction : None, "default" (the paper's instruction) or a template with ``{query}``.
    enhance : apply the enhancement templates.
    refusal : include the refusal group.
    k_distractors : distractors taken from the distractor pool when an item has no choices
        or known wrong answers.
    distractor_model : embedding model that picks those distractors; None means ``model``
        with the embedding ranker and the default MiniLM with a cross-encoder.
    distractor_pool : file of answers to draw distractors from (``.txt`` or ``.jsonl``, see
        :func:`~qaeval_core.metrics.avert_distractors.load_distractor_pool`); None uses the
        shipped NQ-301 answers. Its content, not its path, identifies the scores.
    threshold : used only when re-deciding from scores (``decide``); ``score_batch`` decides by
        argmax, which for two groups equals share >= 0.5.
    backend : embedding encoder backend (:mod:`qaeval_core.models.backends`); ``"auto"`` and
        the other score-preserving ones are not part of the configuration hash.
    normalize : ``"spaced"`` (default) or ``"squad"`` ranks the candidate as given;
        ``"robust"`` ranks its :func:`qaeval_core.text.profiles.reader_text`.
    """

    id = "avert"
    family = BY_MODEL
    calibrate_by_default = True
    #: 2: distractors from a fixed pool instead of the batch (issue 21), so version-1 scores,
    #: which depended on the batch, are never reused.
    version = "2"
    kind = "embedding"
    description = "A-VERT: max-similarity ranking of correct / wrong / refusal target groups"
    needs_models = True
    repairs_glue = True

    def __init__(
        self,
        *,
        ranker: Literal["embedding", "cross-encoder"] = "embedding",
        model: str = DEFAULT_EMBEDDING_MODEL,
        instruction: str | None = None,
        enhance: bool = True,
        refusal: bool = True,
        k_distractors: int = 4,
        distractor_model: str | None = None,
        distractor_pool: str | None = None,
        threshold: float = 0.5,
        device: str | None = None,
        backend: str = "auto",
        normalize: str = "spaced",
    ) -> None:
        self.ranker = ranker
        self.model = model
        self.instruction = instruction
        self.enhance = enhance
        self.refusal = refusal
        self.k_distractors = k_distractors
        self.distractor_model = distractor_model
        self.distractor_pool = distractor_pool
        self.threshold = threshold
        self.device = device
        self.backend = backend
        self.normalize = check_profile(normalize)

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        hash_params(cfg["params"])
        # The pool is identified by its content: an edited file never reuses stored scores.
        pool = cfg["params"].pop("distractor_pool", None)
        if int(self.k_distractors) > 0:
            cfg["distractor_pool_sha256"] = load_distractor_pool(pool).sha256
        return cfg

    # -- helpers ------------------------------------------------------------------------------
    def _validate(self) -> None:
        if self.ranker not in ("embedding", "cross-encoder"):
            raise ConfigError(
                f"A-VERT ranker must be 'embedding' or 'cross-encoder', got {self.ranker!r}."
            )
        if self.ranker == "cross-encoder" and self.model == DEFAULT_EMBEDDING_MODEL:
            raise ConfigError(
                "A-VERT with ranker='cross-encoder' needs model=<cross-encoder path or hub "
                "name> (for example a local copy of BAAI/bge-reranker-v2-m3); none ships "
                "offline, so the default ranker is 'embedding'."
            )
        if self.instruction not in (None, "", "default") and "{query}" not in self.instruction:
            raise ConfigError(
                f"A-VERT instruction must contain '{{query}}' (or be 'default'), got "
                f"{self.instruction!r}."
            )
        if int(self.k_distractors) < 0:
            raise ConfigError(f"k_distractors must be >= 0, got {self.k_distractors!r}.")

    def _query(self, candidate: str) -> str:
        if not self.instruction:
            return candidate
        template = DEFAULT_INSTRUCTION if self.instruction == "default" else self.instruction
        return template.replace("{query}", candidate)

    def _distractors(self, items: Sequence[Item], need: list[int]) -> dict[int, list[str]]:
        """Distractors for the items in ``need``, from the fixed pool (module docstring).

        Items that share a question and references share their distractors, so each unique
        (question, references) key is one small product of its reference vectors with the
        pool's, computed alone: its value, rounding included, is the same in any batch.
        """
        k = int(self.k_distractors)
        if not need or k == 0:
            return {}
        chooser = self.distractor_model or (
            self.model if self.ranker == "embedding" else DEFAULT_EMBEDDING_MODEL
        )
        cache = get_cache(chooser, self.device, self.backend)
        pool = load_distractor_pool(self.distractor_pool)
        keys: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i in need:
            refs = tuple(str(r).strip() for r in items[i].references if str(r).strip())
            if refs:
                q = normalize_answer(items[i].question or "")
                keys.setdefault((q, refs), []).append(i)
        # The pool and every reference in one encoder pass; each key then reads its vectors.
        answers = list(pool.answers)
        pool_vecs = cache.encode([*answers, *(r for _, refs in keys for r in refs)])
        pool_vecs = pool_vecs[: len(answers)]
        out: dict[int, list[str]] = {}
        for (q, refs), owners in keys.items():
            sims = (cache.encode(list(refs)) @ pool_vecs.T).max(axis=0)
            chosen = top_distractors(refs, sims, pool.answers, pool.owners, q, k)
            for i in owners:
                out[i] = chosen
        return out

    def _rank(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Scores of (query, target) pairs, deduplicated."""
        unique = list(dict.fromkeys(pairs))
        if self.ranker == "embedding":
            texts = list(dict.fromkeys(t for pair in unique for t in pair))
            emb = get_cache(self.model, self.device, self.backend).encode(texts)
            pos = {t: k for k, t in enumerate(texts)}
            a = np.array([pos[q] for q, _ in unique])
            b = np.array([pos[t] for _, t in unique])
            vals = np.einsum("ij,ij->i", emb[a], emb[b])
        else:
            import torch

            model = load_cross_encoder(self.model, self.device)
            with torch.inference_mode():
                raw = model.predict(
                    [list(p) for p in unique], batch_size=32, show_progress_bar=False
                )
            raw = np.asarray(raw, dtype=float)
            if raw.ndim == 2:  # several labels: probability of the last ("relevant") one
                e = np.exp(raw - raw.max(axis=1, keepdims=True))
                raw = (e / e.sum(axis=1, keepdims=True))[:, -1]
            vals = raw
        lookup = dict(zip(unique, vals, strict=True))
        return np.array([lookup[p] for p in pairs], dtype=float)

    def _plan(self, items: Sequence[Item]) -> _Plan:
        """Per item its target groups, and the (query, target) pairs to rank; items that
        cannot be scored get a reason instead."""
        reasons: dict[int, str] = {}
        n = len(items)
        items = reader_items(items, self.normalize)

        live = [i for i, it in enumerate(items) if it.candidate and it.candidate.strip()]
        for i in set(range(n)) - set(live):
            reasons[i] = "empty response (counted as wrong)"
        need = [
            i
            for i in live
            if not items[i].choices and not items[i].wrong_answers and items[i].references
        ]
        distractors = self._distractors(items, need)

        groups: dict[int, Groups] = {}
        pairs: list[tuple[str, str]] = []
        owners: list[tuple[int, str, int]] = []  # (item, group, target index)
        for i in live:
            g = build_groups(
                items[i],
                distractors.get(i, ()),
                enhance=bool(self.enhance),
                refusal=bool(self.refusal),
            )
            if not g.targets.get("correct"):
                reasons[i] = "no reference (counted as wrong)"
                continue
            groups[i] = g
            query = self._query(items[i].candidate.strip())
            for name, targets in g.targets.items():
                for k, t in enumerate(targets):
                    pairs.append((query, t))
                    owners.append((i, name, k))
        return groups, pairs, owners, reasons

    def encoding_requests(self, items: Sequence[Item]) -> list[EncodingRequest]:
        """What ``score_batch`` will embed and can be known without vectors: the queries,
        the reference, choice and refusal targets, and for the distractors the pool and the
        references. The distractors' templated targets depend on which are chosen (by those
        vectors): they are embedded when scoring, in a small pass of their own."""
        self._validate()
        if not items:
            return []
        texts: list[str] = []
        refs: list[str] = []  # of the items that draw distractors (as ``_distractors``)
        for it in reader_items(items, self.normalize):
            if not it.candidate or not it.candidate.strip():
                continue
            if not it.choices and not it.wrong_answers:
                refs.extend(r for r in (str(x).strip() for x in it.references) if r)
            if self.ranker == "embedding":
                texts.append(self._query(it.candidate.strip()))
                groups = build_groups(
                    it, (), enhance=bool(self.enhance), refusal=bool(self.refusal)
                )
                texts.extend(t for targets in groups.targets.values() for t in targets)
        out = []
        if self.ranker == "embedding":
            out.append(EncodingRequest(get_cache(self.model, self.device, self.backend), texts))
        if int(self.k_distractors) > 0 and refs:
            chooser = self.distractor_model or (
                self.model if self.ranker == "embedding" else DEFAULT_EMBEDDING_MODEL
            )
            pool = list(load_distractor_pool(self.distractor_pool).answers)
            out.append(EncodingRequest(get_cache(chooser, self.device, self.backend), pool + refs))
        return out

    # -- scoring ------------------------------------------------------------------------------
    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        self._validate()
        n = len(items)
        scores = np.zeros(n)
        decisions = np.zeros(n, dtype=bool)
        details: list[dict[str, Any]] = [{} for _ in range(n)]
        if n == 0:
            return MetricResult(scores, decisions, details)
        groups, pairs, owners, reasons = self._plan(items)
        for i, reason in reasons.items():
            details[i] = {"reason": reason}
        vals = self._rank(pairs) if pairs else np.zeros(0)

        best: dict[tuple[int, str], tuple[float, int]] = {}
        for (i, name, k), v in zip(owners, vals, strict=True):
            key = (i, name)
            if key not in best or v > best[key][0]:
                best[key] = (float(v), k)
        for i, g in groups.items():
            maxima = {name: best[(i, name)][0] for name in g.targets}
            shares = normalise_groups(maxima)
            correct = shares["correct"]
            others = {k: v for k, v in shares.items() if k != "correct"}
            top_other = max(others.values()) if others else 0.0
            label = "correct" if correct >= top_other else max(others, key=others.__getitem__)
            scores[i] = correct
            decisions[i] = correct >= top_other
            details[i] = {
                "group": label,
                "shares": {k: round(v, 6) for k, v in shares.items()},
                "maxima": {k: round(v, 6) for k, v in maxima.items()},
                "margin": round(correct - top_other, 6),
                "best_targets": {name: g.targets[name][best[(i, name)][1]] for name in g.targets},
                "wrong_source": g.wrong_source,
                "ranker": self.ranker,
            }
            if "wrong" not in g.targets:
                details[i]["warning"] = "no wrong targets: decision is correct vs refusal only"
        return MetricResult(scores, decisions, details)
