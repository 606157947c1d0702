"""LLM grading before generation (corrective retrieval): does this passage help answer the question?

Each retrieved chunk gets P(yes) from the model's first token (``yesno.PassageJudge``). Chunks below
the global, calibrated ``min_grade`` (``thresholds.toml``) are dropped before the answer prompt is
built, so the model reads fewer, more relevant chunks; when none is left the question is refused
with ``no_relevant_passage``. Every grade is recorded in the trace. With ``rank`` the kept chunks
are also ordered by grade, best first, and the answer is built from that order (the ``quote``
answer style quotes the first ones), so a grading fault ends the answer; without, they keep the
retriever's order and a grading fault keeps them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..types import Chunk
from .yesno import GRADE_CHARS, PassageJudge

LEAD = "Question: {question}"  # before the passage: the prefix every grading request of one answer shares
QUESTION = "Does this passage help answer the question? Answer yes or no."


@dataclass(frozen=True)
class Grade:
    chunk_id: str
    p_relevant: float | None  # None: the model's reply carried no usable yes/no (the chunk is kept)
    kept: bool
    prompt_tokens: int | None = None
    evaluated_tokens: int | None = None  # not served from the prompt cache

    def as_dict(self) -> dict:
        return asdict(self)


class LlmGrader:
    def __init__(self, judge: PassageJudge, min_grade: float, rank: bool = False) -> None:
        self.judge = judge
        self.min_grade = min_grade
        self.rank = rank

    def kept(self, chunks: Sequence[Chunk], grades: Sequence[Grade]) -> list[Chunk]:
        """The chunks the grades keep; with ``rank``, best grade first (an ungraded chunk, kept
        because the model gave no usable answer, goes after the graded ones)."""
        by_id = {g.chunk_id: g for g in grades}
        kept = [c for c in chunks if by_id[c.id].kept]
        if self.rank:
            kept.sort(key=lambda c: -(by_id[c.id].p_relevant if by_id[c.id].p_relevant is not None else -1.0))
        return kept

    def grade(self, question: str, chunks: Sequence[Chunk]) -> list[Grade]:
        grades = []
        for chunk in chunks:
            answer = self.judge.ask(chunk, QUESTION, ("yes", "no"), GRADE_CHARS, lead=LEAD.format(question=question))
            if answer is None:
                grades.append(Grade(chunk.id, None, True))
                continue
            p = answer.probabilities["yes"]
            grades.append(Grade(chunk.id, p, p >= self.min_grade, answer.prompt_tokens, answer.evaluated_tokens))
        return grades
