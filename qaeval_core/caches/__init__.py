"""qaeval's on-disk caches: where they live and the conventions they keep.

Every cache sits under one folder, :func:`.location.cache_dir` (``QAEVAL_CACHE_DIR`` or
``~/.cache/qaeval``), and holds only what can be recomputed: deleting the folder costs time,
never a result. The caches and their homes:

* sentence embeddings, ``embeddings.sqlite``: :mod:`.vector_store` (the table layout and every
  SQL statement), filled by :mod:`qaeval_core.models.embedding_cache`;
* ONNX exports, ``onnx/``: :mod:`qaeval_core.models.onnx_encoder`;
* LLM verdicts, ``llm_verdicts.sqlite``: :mod:`qaeval_core.llm.verdict_cache`;
* the packaged LLM and converted GGUF models, ``models/``: :mod:`qaeval_core.llm.packaged`,
  :mod:`qaeval_core.llm.chat_clients`;
* SMILE's synthetic answers, ``synthetic_answers.sqlite``:
  :mod:`qaeval_core.metrics.smile_answers`;
* WordNet with its generated ``lexnames``, ``nltk_data/``: :mod:`qaeval_core.text.wordnet`;
* measured input costs: :mod:`qaeval_core.calibrate.cost`.

**Why raw ``sqlite3``, not the store** (:mod:`qaeval_core.store`, SQLAlchemy): a cache is a
per-machine, throw-away file that scoring a file or applying a saved judge must reach without a
database URL, a migration or SQLAlchemy (``tests/test_layout.py`` keeps SQLAlchemy under
``store/`` and out of applying a judge); each cache is one table or two keyed by a hash, for
which the standard library's driver is enough.

**Conventions** every cache follows, so several processes (a Ray worker per core, the app and
the CLI) can share one folder:

* SQLite files open with ``journal_mode=WAL`` (readers never block the writer) and a busy
  timeout of 30 s (``sqlite3.connect(..., timeout=30)``), and write in short transactions, so a
  crash loses at most the rows being written;
* files and folders are written under a temporary name in the same folder and renamed into
  place (``os.replace`` / ``Path.rename``), so no process ever reads half a file; a loser of a
  race discards its copy;
* a key says everything its value depends on (model fingerprint, prompt version, the text),
  so a changed input never hits an old entry, and nothing is ever trusted without that key.
"""
