"""Answers people taught the judge (issue 24, item 2): labels become knowledge about questions.

- :mod:`.suggestions`: from final labels, suggested aliases (correct answers that contain no
  reference) and known wrong answers, per question;
- :mod:`.overlay`: accepted knowledge laid over items when scoring (extra references and wrong
  answers; stored items never change), and the verdicts people already gave the same text;
- :mod:`.similarity`: a calibration input, the candidate's similarity to its question's known
  right and wrong answers, leave-one-out (a row's own label never informs it).

The store keeps the researchers' decisions (:mod:`qaeval_core.store.answer_knowledge`);
:mod:`qaeval_core.workflows.answer_knowledge` joins them with the dataset's labels and rescores.
"""

from qaeval_core.knowledge.overlay import (
    AnswerKnowledge,
    apply_knowledge,
    known_verdicts,
    touched,
)
from qaeval_core.knowledge.similarity import (
    SIMILARITY_COLUMNS,
    answer_similarity,
    knowledge_similarity,
    leave_one_out_items,
    row_knowledge,
    similarity_to,
)
from qaeval_core.knowledge.suggestions import (
    ALIAS,
    KINDS,
    SUGGESTION_COLUMNS,
    WRONG,
    answer_key,
    label_values,
    suggest_knowledge,
)

__all__ = [
    "ALIAS",
    "KINDS",
    "SIMILARITY_COLUMNS",
    "SUGGESTION_COLUMNS",
    "WRONG",
    "AnswerKnowledge",
    "answer_key",
    "answer_similarity",
    "apply_knowledge",
    "knowledge_similarity",
    "known_verdicts",
    "label_values",
    "leave_one_out_items",
    "row_knowledge",
    "similarity_to",
    "suggest_knowledge",
    "touched",
]
