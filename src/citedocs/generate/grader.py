"""LLM grading before generation (corrective retrieval): does this chunk help answer the question?

Each retrieved chunk gets P(yes) from the model's first token (``yesno.PassageJudge``). The grading
request is the answer prompt itself up to the question (``context_messages``: instructions, every
retrieved chunk, the conversation) followed by "Does the chunk with id X help answer this question?",
so the grading requests and the answer share one prompt prefix: a server that caches prefixes
(llama.cpp) evaluates the chunks once per answer, and each grade costs only its own ~30 tokens.
(Grading each chunk in a prompt of its own re-read every chunk before the answer prompt read them
all again.) Chunks below the global, calibrated ``min_grade`` (``thresholds.toml``) cannot be cited:
they stay in the answer prompt as context, so the prefix still matches, but the answer's schema
offers only the kept ids. When none is kept the question is refused with ``no_relevant_passage``.
Every grade is recorded in the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..contract import HistoryTurn
from ..types import Chunk
from .yesno import PassageJudge

TASK = 'Question: {question}\n\nDoes the chunk with id "{chunk_id}" help answer this question? Answer yes or no.'


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
    def __init__(self, judge: PassageJudge, min_grade: float) -> None:
        self.judge = judge
        self.min_grade = min_grade

    def grade(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn] = ()) -> list[Grade]:
        context = self.judge.client.context_messages(chunks, history)
        grades = []
        for chunk in chunks:
            task = {"role": "user", "content": TASK.format(question=question, chunk_id=chunk.id)}
            answer = self.judge.ask_messages([*context, task], ("yes", "no"))
            if answer is None:
                grades.append(Grade(chunk.id, None, True))
                continue
            p = answer.probabilities["yes"]
            grades.append(Grade(chunk.id, p, p >= self.min_grade, answer.prompt_tokens, answer.evaluated_tokens))
        return grades
