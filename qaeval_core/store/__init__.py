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
  browser logins;
- :mod:`~qaeval_core.store.own_transaction`: the ``db`` of the functions that always run their
  own transaction, and the check that refuses a Session there.

Nothing outside this package imports SQLAlchemy (the Alembic environment in ``migrations/``
aside): the rest of qaeval gets DataFrames and frozen dataclasses, never ORM objects.

Passing the store
-----------------
Every store function takes the store **first, as** ``db``, positional: a store URL, or ``None``
for the default store (``QAEVAL_DATABASE_URL`` or the SQLite file under ``.qaeval/``).

- The functions of :mod:`~qaeval_core.store.repo` also accept an open SQLAlchemy ``Session``
  and then join the caller's transaction, so several calls read one snapshot or commit
  together; with a URL or ``None`` each runs in its own transaction. The type is
  :data:`qaeval_core.store.repo.Store`; :func:`qaeval_core.store.repo.store_scope` opens such a
  session for callers that do not import SQLAlchemy.
- The functions of :mod:`~qaeval_core.store.annotation` and
  :mod:`~qaeval_core.store.login_sessions` always run their own short transaction (a label is
  committed when ``save_label`` returns, which joining a caller's transaction would break):
  their ``db`` is a :data:`~qaeval_core.store.own_transaction.StoreURL` (a URL or ``None``) and
  a Session is refused with a message naming the function
  (:func:`~qaeval_core.store.own_transaction.own_transaction`).

New store functions follow this convention. :mod:`~qaeval_core.store.session` is the layer
below: it turns a ``url`` into an engine or a transaction, so its functions name it ``url``.
:mod:`~qaeval_core.store.auth` hashes and checks passwords and never touches the store.
"""
