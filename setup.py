"""Build configuration for the one C extension; everything else is in pyproject.toml.

``qaeval_core.metrics._squad`` (exact match over ASCII items, see its source) is optional: when
no C compiler is available the install goes on and exact match uses its numpy path.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "qaeval_core.metrics._squad",
            sources=["qaeval_core/metrics/_squad.c"],
            optional=True,
        )
    ]
)
