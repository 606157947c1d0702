"""`citedocs eval --judge llm`: cite-correctness judged by the LLM, independently of the validator.

The validator's verifier asks whether a passage *states* a claim (yes / no / unclear); the judge
asks a differently worded question (would a careful reviewer accept the sentence as fully backed by
the passage?) and needs a clear yes. A claim counts as correct when one of its cited chunks backs
it. The report gives the judge's agreement with the lexical judge, with examples of disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..generate.yesno import PassageJudge
from ..types import Chunk

NAME = "llm-reviewer-v1"
QUESTION = (
    'Answer sentence: "{claim}"\n'
    "Would a careful reviewer accept this answer sentence as fully backed by the passage above, with no fact "
    "that the passage does not give? Reply yes or no."
)


@dataclass(frozen=True)
class JudgeVerdict:
    entailed: bool
    p_backed: float | None  # best P(yes) over the cited chunks; None when the model gave no usable reply


class LlmJudge:
    name = NAME

    def __init__(self, judge: PassageJudge) -> None:
        self.judge = judge

    def judge_claim(self, claim: str, cited: list[Chunk]) -> JudgeVerdict:
        best: float | None = None
        for chunk in cited:
            answer = self.judge.ask(chunk, QUESTION.format(claim=claim), ("yes", "no"))
            if answer is not None:
                best = max(best or 0.0, answer.probabilities["yes"])
        return JudgeVerdict(best is not None and best > 0.5, best)
