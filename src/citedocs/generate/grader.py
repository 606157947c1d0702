"""LLM grading before generation (corrective retrieval): does this passage help answer the question?

Each retrieved chunk gets P(yes) from the model's first token (``yesno.PassageJudge``). Chunks below
the global, calibrated ``min_grade`` (``thresholds.toml``) are dropped before the answer prompt is
built, so the model reads fewer, more relevant chunks; when none is left the question is refused
with ``no_relevant_passage``. Every grade is recorded in the trace. Kept chunks stay in the
retriever's order: ordering them by grade was measured and loses more asked details than it finds
(docs/decisions/2026-11-27-answer-style.md). ``required``: grading is the only LLM step of the answer (the ``quote``
answer style), so a grading fault ends the answer; otherwise it keeps every chunk and generation
decides. ``enough``: grading stops once that many chunks are kept, for an answer that reads no more
(the quote style quotes the first ``ExtractiveGenerator.chunks_considered`` kept chunks, so grading the
rest would change nothing it says; on the dev sets' recorded grades this sends 37-44% fewer prompt
tokens, docs/decisions/2026-11-27-answer-style.md).
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
    def __init__(self, judge: PassageJudge, min_grade: float, required: bool = False, enough: int | None = None) -> None:
        self.judge = judge
        self.min_grade = min_grade
        self.required = required
        self.enough = enough

    def grade(self, question: str, chunks: Sequence[Chunk]) -> list[Grade]:
        """Grades in the chunks' order; with ``enough``, the chunks after the one that made it are
        left ungraded (and so not kept)."""
        grades: list[Grade] = []
        for chunk in chunks:
            if self.enough is not None and sum(g.kept for g in grades) >= self.enough:
                break
            answer = self.judge.ask(chunk, QUESTION, ("yes", "no"), GRADE_CHARS, lead=LEAD.format(question=question))
            if answer is None:
                grades.append(Grade(chunk.id, None, True))
                continue
            p = answer.probabilities["yes"]
            grades.append(Grade(chunk.id, p, p >= self.min_grade, answer.prompt_tokens, answer.evaluated_tokens))
        return grades
