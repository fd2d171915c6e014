"""Tiny random BERT models built inside the tests (no download): a word-level vocabulary, a
fast tokenizer and a 1-layer model saved to a folder, loadable by path like any hub model."""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _tokenizer(folder: Path, texts: Iterable[str]):
    from transformers import BertTokenizerFast

    words = {w for t in texts for w in t.lower().replace("'", " ' ").split()}
    words |= set(string.ascii_lowercase) | set(string.digits) | set(string.punctuation)
    vocab = _SPECIAL + sorted(w for w in words if w not in _SPECIAL)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    tok.save_pretrained(folder)
    return tok


def _config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **extra,
    )


def tiny_cross_encoder(folder: Path, texts: Iterable[str], seed: int = 0) -> Path:
    """A 1-label BertForSequenceClassification (a 'reranker' with random weights)."""
    import torch
    from transformers import BertForSequenceClassification

    tok = _tokenizer(folder, texts)
    torch.manual_seed(seed)
    BertForSequenceClassification(_config(len(tok), num_labels=1)).save_pretrained(folder)
    return folder


def tiny_extractive_qa(folder: Path, texts: Iterable[str], seed: int = 0) -> Path:
    """A BertForQuestionAnswering with random weights."""
    import torch
    from transformers import BertForQuestionAnswering

    tok = _tokenizer(folder, texts)
    torch.manual_seed(seed)
    BertForQuestionAnswering(_config(len(tok))).save_pretrained(folder)
    return folder
