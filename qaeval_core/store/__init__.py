"""The store: every SQL statement of qaeval lives in this package.

Layout:

- :mod:`~qaeval_core.store.session`: URL resolution, engines (SQLite pragmas), transactions,
  schema upgrades through Alembic;
- :mod:`~qaeval_core.store.orm`: the ORM schema (``store/models.py`` before; renamed so that
  "models" means the ML models of :mod:`qaeval_core.metrics` only);
- :mod:`~qaeval_core.store.repo`: datasets, imports, users, labels, scores, calibrations,
  exports, and the reads and writes behind :mod:`qaeval_core.analysis` and
  :mod:`qaeval_core.workflows`;
- :mod:`~qaeval_core.store.annotation`: the labelling workflow (queues, next item, labels);
- :mod:`~qaeval_core.store.auth` and :mod:`~qaeval_core.store.login_sessions`: passwords and
  browser logins.

Nothing outside this package imports SQLAlchemy (the Alembic environment in ``migrations/``
aside): the rest of qaeval gets DataFrames and frozen dataclasses, never ORM objects.

Passing the store
-----------------
Store functions take the store **first, as** ``db``: a store URL, ``None`` for the default store
(``QAEVAL_DATABASE_URL`` or the SQLite file under ``.qaeval/``), or an open SQLAlchemy
``Session``. With a URL or ``None`` the function runs in its own transaction; with a Session it
joins the caller's, so several calls read one snapshot or commit together. The type is
:data:`qaeval_core.store.repo.Store`; :func:`qaeval_core.store.repo.session_for` opens such a
session for callers that do not import SQLAlchemy. New store functions follow this convention.

The exceptions: the public functions of :mod:`~qaeval_core.store.annotation` take the store as
the keyword ``url=`` (a URL or ``None``, no Session), last, after what they act on (a user, an
item, a dataset). They are the app's hot path and each is its own short transaction by design
(a label is committed when ``save_label`` returns, which joining a caller's transaction would
break), and the app, the CLI and the tests call them with ``url=``, so their signatures stay.
:mod:`~qaeval_core.store.login_sessions` and :mod:`~qaeval_core.store.session` take a URL first
(``url``), as they always open their own connection.
"""
