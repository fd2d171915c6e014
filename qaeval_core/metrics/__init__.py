from qaeval_core.metrics import lexical  # noqa: F401
from qaeval_core.metrics import embedding  # noqa: F401
from qaeval_core.metrics import smile  # noqa: F401
from qaeval_core.metrics import avert  # noqa: F401
from qaeval_core.metrics import extract  # noqa: F401
from qaeval_core.metrics import panda  # noqa: F401
from qaeval_core.metrics import lave  # noqa: F401
