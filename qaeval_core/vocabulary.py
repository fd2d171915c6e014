"""The small sets of names the library, the CLI and the app share, with no heavy import.

Why a module of its own: ``qaeval --help`` lists some of these (roles, exports, aggregates) in
its options, and importing them from where they are used (the ORM, the store's exports, the
Dawid-Skene aggregation) would load SQLAlchemy, pandas and scikit-learn just to print help.
Each set is defined once, here; the modules that use it import it from here.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "AGGREGATES",
    "DEFAULT_PROFILE",
    "Aggregate",
    "EXPORTS",
    "FAST_METRICS",
    "FINAL_EXPORT",
    "INPUT_RULES",
    "LOGIN_ROLES",
    "PROFILES",
    "Profile",
    "ROLES",
    "SCORE_POLICIES",
    "STORE_EXPORTS",
    "ScorePolicy",
]

#: Roles of a user. ``external`` raters come from imported files and cannot log in.
ROLES = ("annotator", "researcher", "admin", "external")

#: The roles a person can log in with (every role but ``external``).
LOGIN_ROLES = ("annotator", "researcher", "admin")

#: The exports the store makes by itself, each a table's rows
#: (:func:`qaeval_core.store.export_store_records`).
STORE_EXPORTS = ("items", "labels", "labels-history", "scores")
#: The export of the final labels, one per item (:func:`qaeval_core.workflows.final_labels`).
FINAL_EXPORT = "final"
#: What a dataset's export can hold (``qaeval export --what``, the app's Data page,
#: :func:`qaeval_core.workflows.export_records`): the store's and the final labels.
EXPORTS = (*STORE_EXPORTS, FINAL_EXPORT)

#: How several labels of one item become one when no researcher adjudicated it.
Aggregate = Literal["majority", "dawid_skene"]
AGGREGATES: tuple[Aggregate, ...] = ("majority", "dawid_skene")

#: Which inputs calibration keeps (:class:`qaeval_core.calibrate.options.CostPolicy`,
#: ``qaeval calibrate --inputs``, the Calibrate page). ``cheap``: the cheapest input set within
#: the tolerance of the best (the default when costs are measured); ``all``: every input.
INPUT_RULES: tuple[str, ...] = ("cheap", "all")

#: How metrics and judge inputs read answers (``normalize=``, :mod:`qaeval_core.text.profiles`):
#: ``spaced`` (a metric's default: SQuAD's steps with punctuation read as a space), ``squad``
#: (the official SQuAD v1.1 rules: punctuation deleted), or ``robust`` (the reader that
#: ignores formatting; what calibration fits by default).
Profile = Literal["spaced", "squad", "robust"]
PROFILES: tuple[Profile, ...] = ("spaced", "squad", "robust")
#: The reading a calibration fits by default (why: :data:`qaeval_core.calibrate.inputs
#: .DEFAULT_PROFILE`, which is this value); here so that ``qaeval --help`` can show it without
#: loading the metrics.
DEFAULT_PROFILE: Profile = "robust"

#: The human score correlated with the metrics (:func:`qaeval_core.analysis.agreement`'s
#: ``score``, ``qaeval report --score-policy``): the raters' mean, the final label, LAVE's soft.
ScorePolicy = Literal["mean", "final", "soft"]
SCORE_POLICIES: tuple[ScorePolicy, ...] = ("mean", "final", "soft")

#: The fast metrics: lexical ones and PANDA's shipped model, scored in seconds on a CPU with no
#: model download. ``qaeval demo`` scores the demo with them, and the Calibrate and Data pages
#: offer them when a dataset has no scores yet (one list, where there had been three).
FAST_METRICS: tuple[str, ...] = ("em", "f1", "contains", "rougeL", "bleu", "panda")
