"""Built-in metrics; importing this package registers every one (see ``base.register``).

The import order is the registration order, and that is the order of a default calibration's
inputs (:data:`qaeval_core.calibrate.inputs.DEFAULT_METRICS`, from each class's
``calibrate_by_default``): it fixes the columns of every judge calibrated on the defaults, so
it is kept as it is (``tests/metrics/test_declarations.py`` pins it) and a new module goes last.
"""

# isort: off
from qaeval_core.metrics import lexical  # noqa: F401  em, contains, f1, precision, recall, word_match
from qaeval_core.metrics import ngram  # noqa: F401  rouge1, rouge2, rougeL, bleu, meteor
from qaeval_core.metrics import vqa  # noqa: F401
from qaeval_core.metrics import panda  # noqa: F401
from qaeval_core.metrics import embedding  # noqa: F401  embed_cosine, bertscore
from qaeval_core.metrics import smile  # noqa: F401  smile, smile_paper
from qaeval_core.metrics import avert  # noqa: F401
from qaeval_core.metrics import extract  # noqa: F401
from qaeval_core.metrics import static  # noqa: F401
from qaeval_core.metrics import shape  # noqa: F401  the answer-shape inputs (feature_only)
from qaeval_core.metrics import crossjudge  # noqa: F401  (not calibrated by default)
from qaeval_core.metrics import lave  # noqa: F401  (not calibrated by default)
from qaeval_core.metrics import llm_judge  # noqa: F401  (not calibrated by default)
# isort: on
