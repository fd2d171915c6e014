"""SMILE's synthetic answers: a short reference rewritten as a full-sentence answer.

SMILE (papers/smile.txt, section 4) embeds a *synthetic answer* ``s~ = g(q, r)`` instead of the
bare reference, so a one-word gold answer ("8") is compared with a chatty model answer in the
same style ("The conversion rate of an event is 8"). The answer depends only on the question and
reference, so it is made once and stored.

Two generators:

* ``"template"`` (the default for scoring): a few rules that turn the question into a
  declarative sentence around the reference ("What is X?" + r -> "X is r."; "Who wrote Y?" + r
  -> "r wrote Y."; anything unrecognised -> "The answer is r."). Deterministic, instant and
  offline. **Decision:** it is the default because the SMILE paper's ablation (section 5.2,
  appendix F.1) found that the generator barely matters (GPT-3.5 vs Llama-3.2-3B synthetic
  answers gave comparable correlation, "generating synthetic answers is a fairly simple task"),
  and the only offline LLM here (SmolLM2-135M) is small enough to drop or change reference
  words, which the validation below catches anyway.
* any local instruct LLM by alias/path/hub name (``"smollm2"``, the packaged SmolLM2-135M-
  Instruct): the authors' prompt (appendix A.1 and their code), greedy decoding. An output that
  does not contain every word of the reference ("Response SHOULD ALWAYS USE THE WORDS FROM
  ANSWER") is replaced by the template answer, and the record says so (source
  ``"template-fallback"``).

Every answer is stored once per (generator, question, reference) in
``<cache_dir>/synthetic_answers.sqlite``; the generator id carries a version so a change of
prompt or rules never reuses stale answers.

Why it is one module: the template rules, the LLM generator and the validation that falls back
to the template make one answer together, and the store keys it by all three (the generator
id's version covers both rule sets); split, a change to one could reuse the other's answers.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from qaeval_core.caches.location import cache_dir
from qaeval_core.text.squad import tokens

__all__ = [
    "SYNTH_SYSTEM_PROMPT",
    "SYNTH_USER_TEMPLATE",
    "SyntheticAnswer",
    "SyntheticAnswerStore",
    "template_answer",
    "contains_reference_words",
    "clean_generation",
    "generator_id",
    "synthetic_answers",
]

TEMPLATE_VERSION = "1"
PROMPT_VERSION = "1"

#: The authors' system prompt (SMILE appendix A.1).
SYNTH_SYSTEM_PROMPT = (
    "You are an intelligent chatbot designed for generating answer as a sentence from "
    "question-answer pairs.\n"
    "Your task is to generate a single sentence answer using the question and the answer "
    "already provided. Here's how you can accomplish the task:\n"
    "##INSTRUCTIONS:\n"
    "- Look at the provided answer.\n"
    "- Generate a short single sentence response using the question and the answer\n"
    "- Response SHOULD ALWAYS USE THE WORDS FROM ANSWER\n"
    "- DO NOT USE THE QUESTION AS IT IS IN THE RESPONSE.\n"
    "- Return only the response and nothing else."
)
#: The authors' user prompt (SMILE appendix A.1).
SYNTH_USER_TEMPLATE = (
    "Please phrase a short single sentence answer using question-answer pair only:\n"
    "Question: {question}\n"
    "Answer: {answer}\n"
    "DO NOT PROVIDE ANY OTHER OUTPUT APART FROM A SINGLE SHORT SENTENCE"
)


class SyntheticAnswer(NamedTuple):
    text: str
    #: "template", "llm" or "template-fallback" (the LLM output lacked reference words).
    source: str


# -- template generator (pure) ----------------------------------------------------------------
_BE = {"is", "are", "was", "were", "'s"}
_DO = {"do", "does", "did"}
_MODAL = {"can", "could", "will", "would", "should", "shall", "may", "might", "must"}
_TIME_NOUNS = {"year", "date", "day", "month", "time", "century", "decade", "season", "era"}
_WH_ANY = {"who", "whom", "whose", "what", "which", "when", "where", "why", "how"}
_WH_SUBJECT = {"who", "what"}
_WH_DET = {"which", "whose", "what"}
_PREPOSITIONS = {
    "in",
    "on",
    "at",
    "near",
    "under",
    "over",
    "inside",
    "outside",
    "behind",
    "beside",
    "by",
    "from",
    "to",
    "into",
    "onto",
    "between",
    "above",
    "below",
    "across",
    "along",
    "around",
    "during",
    "before",
    "after",
    "since",
    "until",
    "within",
    "through",
}
_PARTICIPLES = {
    "born",
    "made",
    "built",
    "held",
    "found",
    "won",
    "sold",
    "written",
    "done",
    "set",
    "put",
    "given",
    "taken",
    "known",
    "seen",
    "shown",
    "drawn",
    "chosen",
    "spoken",
    "stolen",
    "sung",
    "begun",
    "thrown",
    "grown",
    "run",
    "killed",
    "founded",
    "released",
    "signed",
    "elected",
}
_SPACES = re.compile(r"\s+")


def _finish(sentence: str) -> str:
    sentence = _SPACES.sub(" ", sentence).strip()
    if not sentence:
        return sentence
    sentence = sentence[0].upper() + sentence[1:]
    return sentence if sentence[-1] in ".!?" else sentence + "."


def _with_prep(answer: str, default: str) -> str:
    first = answer.split()[0].lower() if answer.split() else ""
    return answer if first in _PREPOSITIONS or not default else f"{default} {answer}"


def _time_prep(answer: str) -> str:
    # "in 1945", "in September 1945" but "on Sep 2, 1945"-style dates keep "in" too: the
    # embedding cares about the content words, not the preposition.
    return _with_prep(answer, "in")


def _be_statement(subject: list[str], be: str, tail: str) -> str:
    """'X be tail', moving a trailing participle after the verb ('Obama born' -> 'Obama was
    born')."""
    if subject and (subject[-1].lower() in _PARTICIPLES or subject[-1].lower().endswith("ed")):
        return f"{' '.join(subject[:-1])} {be} {subject[-1]} {tail}"
    return f"{' '.join(subject)} {be} {tail}"


def template_answer(question: str, reference: str) -> str:
    """A declarative sentence that states ``reference`` as the answer to ``question``.

    The reference is inserted verbatim (minus a trailing full stop), so the sentence always
    contains every reference word. Rules, tried in order (first token lower-cased):

    - empty question or a reference that is already a sentence (>= 6 words): the reference;
    - yes/no answers: "Yes." / "No." followed by nothing (a restated polar question needs a
      parser; the embedding of the bare polarity is what matters);
    - "how many/much N ..." -> "r N ..." (or "S V r N" after do-support);
    - "wh- be X" -> "X be r" (where/when add "in" unless r starts with a preposition);
    - "wh- N be X" -> "X be r"; "wh- (N) do S V" -> "S V r" (when/where: "S V in r");
    - "who/what V ..." -> "r V ..."; "which/whose N V ..." -> "r V ...";
    - a wh-word inside the sentence ("X is in which country") is replaced by r;
    - otherwise "The answer is r."

    >>> template_answer("What is the Conversion Rate for Event?", "8")
    'The Conversion Rate for Event is 8.'
    >>> template_answer("Who wrote Hamlet?", "Shakespeare")
    'Shakespeare wrote Hamlet.'
    >>> template_answer("When was Barack Obama born?", "1961")
    'Barack Obama was born in 1961.'
    """
    ref = reference.strip()
    ref = ref[:-1].rstrip() if ref.endswith(".") else ref
    if not ref:
        return ""
    q = question.strip().rstrip("?").strip()
    words = q.split()
    if words and words[0].lower().endswith(("'s", "’s")) and words[0][:-2].lower() in _WH_ANY:
        words = [words[0][:-2], "is", *words[1:]]  # "what's X" -> "what is X"
    if not words or len(ref.split()) >= 6:
        return _finish(ref)
    lw = [w.lower() for w in words]
    w0 = lw[0]
    if ref.lower() in {"yes", "no"}:
        return _finish(ref.capitalize())

    # how many / how much
    if w0 == "how" and len(lw) > 1 and lw[1] in {"many", "much"}:
        rest, lrest = words[2:], lw[2:]
        do_at = next((i for i, w in enumerate(lrest) if w in _DO), None)
        if do_at is not None:
            noun = " ".join(rest[:do_at])
            return _finish(f"{' '.join(rest[do_at + 1 :])} {ref} {noun}")
        return _finish(f"{ref} {' '.join(rest)}")

    det = w0 in _WH_DET  # "which/whose/what N ..." may put a noun before the verb
    if det and len(lw) > 1 and lw[1] in _TIME_NOUNS:
        w0 = "when"  # "what year did X end" is a when-question
    if w0 in _WH_ANY and len(lw) > 1:
        # wh- be X / wh- N be X
        for at in (1, 2):
            if len(lw) > at + 1 and lw[at] in _BE and (at == 1 or det):
                subject = words[at + 1 :]
                be = "is" if lw[at] == "'s" else words[at]
                if w0 in {"when", "where"}:
                    return _finish(_be_statement(subject, be, _time_prep(ref)))
                if w0 == "why":
                    return _finish(_be_statement(subject, be, f"because {ref}"))
                if w0 == "how":
                    return _finish(_be_statement(subject, be, ref))
                return _finish(f"{' '.join(subject)} {be} {ref}")
        # wh- (N) do S V / wh- (N) modal S V
        for at in (1, 2):
            if len(lw) > at + 1 and lw[at] in _DO | _MODAL and (at == 1 or det):
                clause = " ".join(words[at + 1 :])
                if lw[at] in _MODAL:
                    clause = f"{words[at + 1]} {words[at]} {' '.join(words[at + 2 :])}"
                if w0 in {"when", "where"}:
                    return _finish(f"{clause} {_time_prep(ref)}")
                if w0 == "why":
                    return _finish(f"{clause} because {ref}")
                if w0 == "how":
                    return _finish(f"{clause} by {ref}")
                return _finish(f"{clause} {ref}")
        # subject questions
        if w0 in _WH_SUBJECT:
            return _finish(f"{ref} {' '.join(words[1:])}")
        if w0 in _WH_DET and len(words) > 2:
            return _finish(f"{ref} {' '.join(words[2:])}")
    # a wh-word inside the sentence: "X is in which country" -> "X is in r"
    inner = next((i for i, w in enumerate(lw) if i > 0 and w in _WH_ANY), None)
    if inner is not None:
        span = 2 if lw[inner] in _WH_DET and inner + 1 < len(lw) else 1
        return _finish(" ".join([*words[:inner], ref, *words[inner + span :]]))
    return _finish(f"The answer is {ref}")


def contains_reference_words(text: str, reference: str) -> bool:
    """Whether every (SQuAD-normalised) word of ``reference`` occurs in ``text``."""
    ref = set(tokens(reference))
    return bool(ref) and ref <= set(tokens(text))


_PREFIX = re.compile(r"^\s*(?:response|answer|sentence)\s*:\s*", re.IGNORECASE)


def clean_generation(text: str) -> str:
    """First non-empty line of an LLM output, without a 'Response:' prefix or wrapping quotes."""
    for line in text.strip().splitlines():
        line = _PREFIX.sub("", line).strip().strip("\"'“”").strip()
        if line:
            return line
    return ""


# -- persistent store -------------------------------------------------------------------------
def _key(question: str, reference: str) -> bytes:
    blob = question.encode("utf-8") + b"\x00" + reference.encode("utf-8")
    return hashlib.blake2b(blob, digest_size=16).digest()


class SyntheticAnswerStore:
    """Synthetic answers in SQLite, keyed by (generator id, question, reference)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "synthetic_answers.sqlite"
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS synth (generator TEXT NOT NULL, key BLOB NOT NULL, "
                "question TEXT, reference TEXT, answer TEXT, source TEXT, "
                "PRIMARY KEY (generator, key))"
            )
        return self._db

    def get_many(
        self, generator: str, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], SyntheticAnswer]:
        by_key = {_key(q, r): (q, r) for q, r in pairs}
        keys = list(by_key)
        found: dict[tuple[str, str], SyntheticAnswer] = {}
        with self._lock:
            conn = self._conn()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                rows = conn.execute(
                    f"SELECT key, answer, source FROM synth WHERE generator = ? AND key IN "
                    f"({','.join('?' * len(chunk))})",
                    [generator, *chunk],
                ).fetchall()
                for key, answer, source in rows:
                    found[by_key[key]] = SyntheticAnswer(answer, source)
        return found

    def put_many(self, generator: str, rows: dict[tuple[str, str], SyntheticAnswer]) -> None:
        if not rows:
            return
        with self._lock:
            conn = self._conn()
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO synth VALUES (?, ?, ?, ?, ?, ?)",
                    [(generator, _key(q, r), q, r, a.text, a.source) for (q, r), a in rows.items()],
                )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


_STORES: dict[str, SyntheticAnswerStore] = {}
_STORES_LOCK = threading.Lock()


def _store() -> SyntheticAnswerStore:
    path = str(cache_dir() / "synthetic_answers.sqlite")
    with _STORES_LOCK:
        if path not in _STORES:
            _STORES[path] = SyntheticAnswerStore(path)
        return _STORES[path]


# -- generation -------------------------------------------------------------------------------
def generator_id(generator: str) -> str:
    """The stored id of a generator: its name plus the rules/prompt version."""
    if generator == "template":
        return f"template-v{TEMPLATE_VERSION}"
    return f"llm-v{PROMPT_VERSION}:{generator}"


def _llm_answers(
    pairs: list[tuple[str, str]], generator: str, device: str | None
) -> list[SyntheticAnswer]:
    from qaeval_core.llm.chat_clients import LocalChatLM

    lm = LocalChatLM(generator, device=device, max_new_tokens=48)
    conversations = [
        [
            {"role": "system", "content": SYNTH_SYSTEM_PROMPT},
            {"role": "user", "content": SYNTH_USER_TEMPLATE.format(question=q, answer=r)},
        ]
        for q, r in pairs
    ]
    out = []
    for (q, r), raw in zip(pairs, lm.generate(conversations), strict=True):
        text = clean_generation(raw)
        if text and len(text.split()) <= 60 and contains_reference_words(text, r):
            out.append(SyntheticAnswer(text, "llm"))
        else:
            out.append(SyntheticAnswer(template_answer(q, r), "template-fallback"))
    return out


def synthetic_answers(
    pairs: Sequence[tuple[str, str]],
    generator: str = "template",
    *,
    device: str | None = None,
    persist: bool = True,
) -> list[SyntheticAnswer]:
    """One synthetic answer per (question, reference) pair, aligned with ``pairs``.

    Repeated pairs are generated once; with ``persist`` every new answer is stored, and stored
    answers are reused across runs. ``generator`` is ``"template"`` or a local causal LM alias,
    path or hub name (``"smollm2"``).
    """
    pairs = [(str(q or ""), str(r or "")) for q, r in pairs]
    unique = list(dict.fromkeys(pairs))
    gid = generator_id(generator)
    store = _store() if persist else None
    known: dict[tuple[str, str], SyntheticAnswer] = store.get_many(gid, unique) if store else {}
    missing = [p for p in unique if p not in known]
    if missing:
        if generator == "template":
            new = [SyntheticAnswer(template_answer(q, r), "template") for q, r in missing]
        else:
            new = _llm_answers(missing, generator, device)
        fresh = dict(zip(missing, new, strict=True))
        known.update(fresh)
        if store:
            store.put_many(gid, fresh)
    return [known[p] for p in pairs]
