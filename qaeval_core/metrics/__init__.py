"""Built-in metrics; importing this package registers every one (see ``base.register``)."""

from qaeval_core.metrics import (
    avert,  # noqa: F401
    crossjudge,  # noqa: F401
    embedding,  # noqa: F401
    extract,  # noqa: F401
    lave,  # noqa: F401
    lexical,  # noqa: F401
    llm_judge,  # noqa: F401
    ngram,  # noqa: F401
    panda,  # noqa: F401
    shape,  # noqa: F401
    smile,  # noqa: F401
    static,  # noqa: F401
    vqa,  # noqa: F401
)
