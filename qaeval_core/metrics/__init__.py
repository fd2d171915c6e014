from qaeval_core.metrics import lexical  # noqa: F401
from qaeval_core.metrics import embedding  # noqa: F401
