"""Text generation backends shared by SMILE's synthetic answers and LAVE.

Two backends answer the same question, "complete these chat prompts greedily":

* :class:`LocalChatLM`: a transformers causal LM loaded by local path, packaged alias
  (``smollm2``) or hub name. A GGUF file (the packaged SmolLM2 ships one) is dequantised once
  (~17-20 s) and saved as a safetensors copy under :func:`qaeval_core.caches.location.cache_dir`, so
  later loads take under a second.
* :class:`OpenAIChatClient`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM,
  llama.cpp server, Ollama, hosted APIs) given by URL, with the API key read from an environment
  variable, retries with exponential back-off on 429/5xx/connection errors, and one-line errors
  that say what to fix. It uses only :mod:`urllib` (no extra dependency).

Both take a list of conversations (each a list of ``{"role", "content"}`` dicts) and return one
string per conversation, in order. Decoding is greedy (temperature 0), as SMILE and LAVE ask.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

from qaeval_core.caches.location import cache_dir
from qaeval_core.errors import ModelLoadError
from qaeval_core.llm.endpoint_http import (  # LLMEndpointError re-exported: its old home
    MAX_RESPONSE_BYTES,
    LLMEndpointError,
    chat_url,
    error_detail,
    late,
    one_line,
    parse_json,
    read_body,
)
from qaeval_core.llm.prompts import Message  # re-exported: one chat message, role and content
from qaeval_core.models.loading import choose_device, resolve_model_path

__all__ = [
    "LLMEndpointError",
    "Message",
    "LocalChatLM",
    "OpenAIChatClient",
    "chat_backend",
    "load_causal_lm",
    "materialize_gguf",
]

_LOAD_LOCK = threading.Lock()


# -- local transformers models ----------------------------------------------------------------
def materialize_gguf(gguf_path: str | Path) -> Path:
    """A folder with a dequantised safetensors copy of a GGUF model (made once, then reused).

    transformers can read GGUF but dequantises every tensor on each load (~17 s for SmolLM2),
    and refuses ``save_pretrained`` on the loaded model because it still carries the GGUF
    quantizer. We drop the quantizer marker and save in bfloat16 (half the size of float32,
    lossless for Q4 weights). The copy is written to a temporary folder and renamed, so a crash
    or a concurrent process never leaves a half-written model behind.
    """
    gguf_path = Path(gguf_path)
    target = cache_dir() / "models" / f"{gguf_path.stem}-bf16"
    if (target / "config.json").exists() and (target / "model.safetensors").exists():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.bfloat16
        )
    except Exception as exc:  # one clear message for any loader failure
        raise ModelLoadError(
            f"Could not read the GGUF model {str(gguf_path)!r}: {exc}. transformers needs the "
            "'gguf' and 'accelerate' packages to load GGUF files."
        ) from exc
    if hasattr(model, "hf_quantizer"):
        del model.hf_quantizer
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first: keep its copy
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return target


@cache
def _causal_lm(path: str, device: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # float32 on CPU: bfloat16 matmuls are slower than float32 on most CPUs. On a GPU bfloat16
    # where the card has it: float16's range overflows in some models' activations (Qwen2).
    dtype = torch.float32
    if device.startswith("cuda"):
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    model.to(device)
    model.eval()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"  # decoder-only models generate after the last prompt token
    return model, tok


def load_causal_lm(name_or_path: str, device: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for a causal LM by local path, alias or hub name; loaded once."""
    dev = choose_device(device)
    path = resolve_model_path(name_or_path)
    with _LOAD_LOCK:
        try:
            if path.endswith(".gguf") and os.path.isfile(path):
                path = str(materialize_gguf(path))
            return _causal_lm(path, dev)
        except ModelLoadError:
            raise
        except Exception as exc:
            raise ModelLoadError(
                f"Could not load causal LM {name_or_path!r}: {exc}. Give an existing local "
                "folder or .gguf file, the packaged alias 'smollm2', or a hub name while online."
            ) from exc


class LocalChatLM:
    """Greedy chat completion with a local transformers model.

    Conversations are rendered with the tokenizer's chat template when it has one, else the
    message contents are joined by blank lines (a plain completion prompt).

    ``batch_size`` is 1 by default, so a prompt's completion never depends on the prompts sent
    with it (issue 21: a verdict must not depend on the batch). A batch left-pads its shorter
    prompts, and the padded shapes round the logits differently in the last bits; greedy
    decoding turns a near-tie into another token, so LAVE's rating of one item could change with
    the items around it. Larger batches are faster on a GPU and are the caller's choice.
    """

    def __init__(
        self,
        model: str,
        *,
        device: str | None = None,
        max_new_tokens: int = 64,
        batch_size: int = 1,
    ) -> None:
        self.model = model
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size

    @property
    def name(self) -> str:
        return f"local:{self.model}"

    def _render(self, tok: Any, conversation: Sequence[Message]) -> str:
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(
                list(conversation), tokenize=False, add_generation_prompt=True
            )
        return "\n\n".join(m["content"] for m in conversation)

    def generate(self, conversations: Sequence[Sequence[Message]]) -> list[str]:
        if not conversations:
            return []
        import torch

        model, tok = load_causal_lm(self.model, self.device)
        prompts = [self._render(tok, c) for c in conversations]
        # Length-sorted batches waste less padding; results go back in the original order.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out: list[str] = [""] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = tok(
                [prompts[i] for i in idx],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            ).to(model.device)
            with torch.inference_mode():
                gen = model.generate(
                    **enc,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    pad_token_id=tok.pad_token_id,
                )
            new = gen[:, enc["input_ids"].shape[1] :]
            for i, row in zip(idx, new, strict=True):
                out[i] = tok.decode(row, skip_special_tokens=True).strip()
        return out


# -- OpenAI-compatible HTTP endpoints ---------------------------------------------------------
class OpenAIChatClient:
    """Greedy chat completions from an OpenAI-compatible HTTP endpoint.

    Parameters
    ----------
    url : base URL (``http://host:8000/v1``) or the full ``.../chat/completions`` URL.
    model : model name sent in the request body.
    api_key_env : environment variable holding the API key; unset means no Authorization header
        (local servers usually need none).
    timeout : seconds for a whole response (from sending to its last byte), per try.
    max_retries : retries after the first try on HTTP 408/409/429/5xx and connection errors,
        waiting 1, 2, 4 ... seconds (``Retry-After`` when given); a try past its deadline is
        not retried.
    concurrency : requests in flight at once.
    max_response_bytes : the largest answer read (an endless body is cut off there).
    """

    _RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        max_new_tokens: int = 256,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        concurrency: int = 4,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.url = url
        self.model = model
        self.api_key_env = api_key_env
        self.max_new_tokens = max_new_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.max_response_bytes = max_response_bytes

    @property
    def name(self) -> str:
        return f"openai:{self.model}@{self.url}"

    @property
    def chat_url(self) -> str:
        """The ``/chat/completions`` URL (a malformed ``url`` raises here, before any item)."""
        return chat_url(self.url)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(self, conversation: Sequence[Message]) -> str:
        """One chat completion (greedy), retried on transient failures."""
        payload = self.request(conversation, max_tokens=self.max_new_tokens)
        return _message_text(payload, chat_url(self.url))

    def request(self, conversation: Sequence[Message], **options: Any) -> Any:
        """The endpoint's JSON answer to one greedy chat request with extra body ``options``
        (``max_tokens``, ``logprobs`` ...), retried on transient failures.

        Each try has a deadline for the whole response (``timeout`` seconds from sending to the
        last byte, not per read: a server that trickles bytes is cut off) and a size limit
        (``max_response_bytes``: an endless body is cut off). A try that runs out of time is not
        retried: a hanging server would hang again, and the caller's rerun picks the item up.
        Every failure is one :class:`LLMEndpointError` line.
        """
        url = chat_url(self.url)
        body = json.dumps(
            {"model": self.model, "messages": list(conversation), "temperature": 0, **options}
        ).encode("utf-8")
        last: str = ""
        for attempt in range(self.max_retries + 1):
            req = urllib.request.Request(url, data=body, headers=self._headers(), method="POST")
            wait = self.backoff * (2**attempt)
            deadline = time.monotonic() + float(self.timeout)
            try:
                with urllib.request.urlopen(req, timeout=float(self.timeout)) as resp:
                    raw = read_body(resp, deadline, int(self.max_response_bytes), url)
            except urllib.error.HTTPError as exc:
                detail = error_detail(exc)
                last = f"HTTP {exc.code} from {url}: {detail}"
                if exc.code in (401, 403):
                    raise LLMEndpointError(
                        f"{last}. The endpoint refused the credentials: set the API key in the "
                        f"environment variable {self.api_key_env!r}."
                    ) from None
                if exc.code not in self._RETRY_STATUS:
                    raise LLMEndpointError(
                        f"{last}. Check the URL (it should end in /v1 or /chat/completions) and "
                        f"the model name {self.model!r}."
                    ) from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    wait = min(float(retry_after), 60.0)
            except LLMEndpointError:
                raise
            except TimeoutError:
                raise LLMEndpointError(late(url, self.timeout)) from None
            except (
                urllib.error.URLError,
                ConnectionError,
                OSError,
                http.client.HTTPException,
            ) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, TimeoutError):
                    raise LLMEndpointError(late(url, self.timeout)) from None
                last = f"could not reach {url}: {one_line(str(reason) or type(reason).__name__)}"
            else:
                return parse_json(raw, url)
            if attempt < self.max_retries:
                time.sleep(wait)
        raise LLMEndpointError(
            f"LLM endpoint failed after {self.max_retries + 1} tries: {last}. Is the server "
            "running and the URL right?"
        )

    def generate(self, conversations: Sequence[Sequence[Message]]) -> list[str]:
        if not conversations:
            return []
        if self.concurrency <= 1 or len(conversations) == 1:
            return [self.complete(c) for c in conversations]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self.complete, conversations))


def _message_text(payload: Any, url: str) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMEndpointError(
            f"{url} answered without choices[0].message.content: {one_line(str(payload))}"
        ) from None
    return (content or "").strip()


def chat_backend(
    model: str,
    *,
    url: str | None = None,
    device: str | None = None,
    max_new_tokens: int = 64,
    api_key_env: str = "OPENAI_API_KEY",
    timeout: float = 60.0,
    max_retries: int = 3,
    concurrency: int = 4,
) -> LocalChatLM | OpenAIChatClient:
    """The HTTP client when ``url`` is given, else a local transformers model."""
    if url:
        return OpenAIChatClient(
            url,
            model,
            api_key_env=api_key_env,
            max_new_tokens=max_new_tokens,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
        )
    return LocalChatLM(model, device=device, max_new_tokens=max_new_tokens)
