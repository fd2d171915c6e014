"""LLM verdicts: an LLM reads question, references and candidate and says how likely the
candidate is correct, from the probabilities of its next token (never sampled).

Floors: :mod:`.prompts` (what the model is asked, versioned), :mod:`.packaged` (the offline
default model, assembled from PyPI chunks and hash-checked), :mod:`.next_token` (backends:
llama.cpp, transformers, OpenAI-compatible endpoints), :mod:`.verdict_cache` (a disk cache
keyed by model fingerprint + prompt version + item); :mod:`.chat_clients` and :mod:`.llama_chat`
write whole completions (LAVE's rationale, SMILE's synthetic answers). The metric that uses them is
:mod:`qaeval_core.metrics.llm_judge`; the cascade that runs it only where the cheap judge
doubts is :mod:`qaeval_core.judge.cascade`.
"""
