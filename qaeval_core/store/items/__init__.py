"""Items: reading a dataset's items (:mod:`.records`) and importing files into a dataset.

Importing (:mod:`.imports`, item identity and idempotent re-imports are described there) runs
its own short transactions: a new dataset is written in chunks under a hidden name and renamed
at the end (:mod:`.import_pending`); rows for an existing dataset are staged and adopted chunk
by chunk (:mod:`.import_existing`, :mod:`.import_adopt`); :mod:`.import_staging` holds what
every path writes. Everything public is importable from :mod:`qaeval_core.store`.
"""
