"""Neural models the metrics run: loading them, and encoding text with them.

* :mod:`.loading` - models by local path, packaged alias or hub name, on the best device;
* :mod:`.encoder` - sentence and token vectors from one forward pass (the torch encoder);
  :mod:`.onnx_encoder` - the same weights under ONNX Runtime, exported and verified locally;
  :mod:`.backends` - which encoder runs a model;
* :mod:`.embedding_cache` - each (model, text) encoded once per run and persisted in the
  embedding store (:mod:`qaeval_core.caches.vector_store`).

LLM clients (local chat model, OpenAI-compatible endpoints) live in :mod:`qaeval_core.llm`.
"""
