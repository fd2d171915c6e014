"""``llm_judge``: P(correct) from an LLM's next-token probabilities (never sampled).

An LLM reads the NAQT-derived rules (or LAVE's task, ``prompt="lave"``), the question, the
references and the candidate, and the score is the probability mass it puts on "yes" against
"no" for its first answer token (:mod:`qaeval_core.llm.prompts`). Unlike ``lave``, which lets a
model write a rationale and parses a rating, nothing is generated: the value is deterministic,
costs one forward pass over the item's own tokens (the instruction shared by every item is
evaluated once, a question and its references once for all its candidates), and is a graded
probability a calibrator can use. ``lave`` stays as the paper's method; this is the judge that
knows some facts, and the cascade's second tier.

The default model is the packaged Qwen2.5-Coder-1.5B-Instruct (``qwen-coder-1.5b``, the
``llm`` extra; the offline model measured best here, ROC AUC 0.87 on NQ301 answers); any
``.gguf`` file, transformers folder or hub name, or an OpenAI-compatible endpoint (``url=``)
works the same. Verdicts are cached on disk by model fingerprint + prompt version + item, so a
rerun, the cascade and the Explorer's trace never pay twice.

**No verdict.** An item the model gave no usable answer for (an endpoint that failed, timed out
or answered a malformed body, or top tokens that read as neither yes nor no) has *no verdict*:
its score is NaN, its decision not correct, and ``details["no_verdict"]`` says why
(:data:`qaeval_core.metrics.base.NO_VERDICT`). It is never 0.0 or 0.5 (a guess that looks like a
verdict) and never cached, so a rerun asks again while the verdicts that worked stay cached.
The scoring loop keeps the NaN; the CLI exits non-zero naming how many and why; the store keeps
no score for the item; a judge reports it as ``judge_error`` and leaves it to people.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM, resolve_llm
from qaeval_core.llm.prompts import (
    get_prompt,
    probability_from_logprobs,
    probability_from_text,
    question_prefix,
)
from qaeval_core.llm.verdict_cache import CachedVerdict, VerdictCache, verdict_key
from qaeval_core.metrics.base import BY_MODEL, NO_VERDICT, Metric, MetricResult, register
from qaeval_core.schema import Item

__all__ = ["LLMJudge"]

#: How a model file is run: ``auto`` picks llama.cpp for GGUF files, transformers otherwise.
RUNTIMES = ("auto", "transformers")
#: Show a progress bar when at least this many items need the model.
_PROGRESS_FROM = 20
#: The start of the reason an answer that reads as neither yes nor no has no verdict.
UNREADABLE = "the model's answer reads as neither yes nor no"
#: An endpoint that fails this many items in a row is taken for dead: the rest are not sent.
FAILURES_IN_A_ROW = 3


@register
class LLMJudge(Metric):
    """An LLM's probability that the candidate is correct.

    Parameters
    ----------
    model : packaged alias (``qwen-coder-1.5b``), ``.gguf`` file, transformers folder or hub
        name; with ``url``, the model name sent to the endpoint.
    prompt : ``naqt`` (the annotators' rules, yes/no) or ``lave`` (LAVE's 1-3 rating).
    url : an OpenAI-compatible base URL (``http://localhost:8080/v1``) or None.
    api_key_env, timeout, max_retries, concurrency : endpoint settings.
    runtime : ``auto`` (llama.cpp for a ``.gguf`` file or the packaged alias, transformers for a
        folder or hub name) or ``transformers`` (a GGUF read by transformers, dequantised: the
        way onto a GPU where llama.cpp is a CPU wheel). A forced runtime computes in other
        precision, so its verdicts are cached under their own key (``|transformers@cuda``).
    device, batch_size : transformers settings. ``batch_size`` 0 means 1: a verdict that does
        not depend on the items beside it. Larger batches are faster on a GPU (98 vs 43 items/s
        on an H200) but left padding moved P(correct) by up to 0.05 in bfloat16 there.
    cache : keep verdicts on disk (``<cache>/llm_verdicts.sqlite``).
    threshold : correct when P(correct) >= threshold.
    """

    id = "llm_judge"
    family = BY_MODEL
    version = "1"
    kind = "llm"
    description = "LLM judge: P(yes) from next-token log-probabilities (Qwen2.5-Coder-1.5B)"
    needs_models = True

    def __init__(
        self,
        *,
        model: str = DEFAULT_JUDGE_LLM,
        prompt: str = "naqt",
        url: str | None = None,
        runtime: str = "auto",
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        device: str | None = None,
        batch_size: int = 0,
        cache: bool = True,
        threshold: float = 0.5,
    ) -> None:
        self.model = model
        self.prompt = prompt
        self.url = url
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
        self.runtime = runtime
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.device = device
        self.batch_size = batch_size
        self.cache = cache
        self.threshold = threshold

    def config(self) -> dict[str, Any]:
        """The parameters, plus what else decides a verdict: the prompt's version and the
        model's fingerprint (so stored scores are never reused for other weights or wording)."""
        cfg = super().config()
        if self.runtime == "auto":  # the default: configs (and hashes) from before it stay valid
            cfg["params"].pop("runtime", None)
        cfg["identity"] = {
            "prompt": get_prompt(self.prompt).key,
            "model": self.fingerprint(),
        }
        return cfg

    def _gguf_through_transformers(self, kind: str) -> bool:
        return kind == "gguf" and self.runtime == "transformers"

    def fingerprint(self) -> str:
        """The model's identity (packaged hash, file edges, endpoint + name), plus the runtime
        and device class where a GGUF is read by transformers (other arithmetic, other bits)."""
        resolved = resolve_llm(self.model, url=self.url, assemble=False)
        if not self._gguf_through_transformers(resolved.kind):
            return resolved.fingerprint
        from qaeval_core.models.loading import choose_device

        device = choose_device(self.device).split(":")[0]
        return f"{resolved.fingerprint}|transformers@{device}"

    def cache_identity(self) -> str:
        """What the verdict cache keys besides prompt and messages: the fingerprint, and for
        llama.cpp how a verdict is computed. Since issue 35 it is cached instruction + cached
        question + the candidate's tokens, which rounds otherwise than the whole item after the
        instruction did (up to 0.025 in P on NQ301 rows), so those verdicts get their own
        entries and a cache never mixes the two. (Not part of :meth:`config`: stored scores and
        judge files stay valid.)"""
        fingerprint = self.fingerprint()
        resolved = resolve_llm(self.model, url=self.url, assemble=False)
        if resolved.kind == "gguf" and not self._gguf_through_transformers(resolved.kind):
            return f"{fingerprint}|llama.cpp:question-prefix"
        return fingerprint

    def backend(self) -> Any:
        from qaeval_core.llm.next_token import (
            EndpointBackend,
            LlamaCppBackend,
            TransformersBackend,
        )

        resolved = resolve_llm(self.model, url=self.url)
        if resolved.kind == "endpoint":
            return EndpointBackend(
                resolved.location,
                self.model if self.url else "default",
                api_key_env=self.api_key_env,
                timeout=float(self.timeout),
                max_retries=int(self.max_retries),
                concurrency=int(self.concurrency),
                max_failures_in_a_row=FAILURES_IN_A_ROW,
            )
        if resolved.kind == "gguf" and not self._gguf_through_transformers(resolved.kind):
            return LlamaCppBackend(resolved.location)
        return TransformersBackend(
            resolved.location, device=self.device, batch_size=int(self.batch_size)
        )

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        prompt = get_prompt(self.prompt)
        n = len(items)
        scores = np.zeros(n)
        details: list[dict[str, Any]] = [{} for _ in range(n)]
        todo: dict[int, tuple[str, list[dict[str, str]], bool]] = {}
        for i, it in enumerate(items):
            if not (it.candidate or "").strip():
                details[i] = {"reason": "empty candidate (no LLM call)"}
                continue
            messages, cut = prompt.messages(it)
            todo[i] = ("", messages, cut)
        if not todo:
            return MetricResult(scores, self.decide(scores), details)
        fingerprint = self.cache_identity()
        keys = {i: verdict_key(fingerprint, prompt.key, m) for i, (_, m, _) in todo.items()}
        store = VerdictCache() if self.cache else None
        # A cached entry without a probability (written before no-verdicts were kept out) is
        # asked again, like any item without a verdict.
        found: dict[str, CachedVerdict | str] = {
            k: v
            for k, v in (store.get_many(keys.values()) if store else {}).items()
            if v.probability is not None
        }
        missing: dict[str, list[dict[str, str]]] = {}
        for i, key in keys.items():
            if key not in found:
                missing.setdefault(key, todo[i][1])
        if missing:
            found.update(self._run(prompt, missing, store))
        for i, key in keys.items():
            verdict = found[key]
            if isinstance(verdict, str):  # no verdict, and why
                scores[i] = np.nan
                details[i] = {NO_VERDICT: verdict, "prompt": prompt.key}
                if verdict.startswith(UNREADABLE):  # the model's own answer, not a failure
                    details[i]["unreadable"] = True
            else:
                scores[i] = verdict.probability
                details[i] = {
                    "probability": verdict.probability,
                    "answer": verdict.text,
                    "seconds": round(verdict.seconds, 4),
                    "prompt": prompt.key,
                }
            if todo[i][2]:
                details[i]["candidate_cut"] = True
        return MetricResult(scores, self.decide(scores), details)

    def _run(
        self, prompt: Any, missing: dict[str, list[dict[str, str]]], store: VerdictCache | None
    ) -> dict[str, CachedVerdict | str]:
        """The model's verdict on each missing key, or why there is none (a string). Only
        verdicts are cached: a failure or an unreadable answer is asked again next time."""
        backend = self.backend()
        # The items of one question next to each other: a backend that keeps its cache (the
        # llama.cpp one) reads their question and references once. The values do not depend on
        # this order; the cost does.
        group = {
            k: json.dumps([m[:-1], question_prefix(m[-1]["content"]) if m else None])
            for k, m in missing.items()
        }
        first: dict[str, int] = {}
        for n, g in enumerate(group.values()):
            first.setdefault(g, n)
        keys = sorted(missing, key=lambda k: first[group[k]])
        bar = None
        if len(keys) >= _PROGRESS_FROM:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(keys), desc="llm_judge", unit="item", file=sys.stderr)
        out: dict[str, CachedVerdict | str] = {}
        # Small chunks so a crash or an interrupt keeps what was computed (the cache is written
        # as each chunk finishes).
        for start in range(0, len(keys), 4):
            chunk = keys[start : start + 4]
            results = backend.next_tokens(
                [missing[k] for k in chunk], progress=bar.update if bar else None
            )
            for key, res in zip(chunk, results, strict=True):
                if getattr(res, "error", None):
                    out[key] = str(res.error)
                    continue
                p = (
                    probability_from_logprobs(prompt, res.top)
                    if res.top is not None
                    else probability_from_text(prompt, res.text)
                )
                if p is None:
                    shown = " ".join((res.text or "").split())[:80]
                    tokens = [t for t, _ in (res.top or ())][:5]
                    seen = f"top tokens {tokens}" if res.top is not None else f"text {shown!r}"
                    out[key] = f"{UNREADABLE}: {seen}"
                    continue
                verdict = CachedVerdict(p, res.text, res.seconds)
                out[key] = verdict
                if store is not None:
                    store.put(key, verdict)
        if bar is not None:
            bar.close()
        return out
