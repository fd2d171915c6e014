from qaeval_core.metrics import lexical  # noqa: F401
