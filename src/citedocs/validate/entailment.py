"""Per-claim verification with the LLM: is a sentence entailed by, contradicted by, or neutral to
each cited chunk?

A drop-in for ``SupportChecker.check`` used by the validator when an LLM backend is configured: a
claim is supported when some cited chunk entails it with probability at least ``min_entailment``
(global, ``thresholds.toml``) and every code identifier, flag and number in it occurs in the
cited text (the lexical check's "specifics" guard stays: an invented option is the commonest
confident-wrong answer and needs no model to catch). The validator then re-cites or drops a claim
that is not supported, exactly as with the lexical check, which remains the fallback when no LLM
is configured or the LLM fails (the verdict says which method decided).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..generate.base import GenerationFault
from ..generate.yesno import PassageJudge
from ..types import Chunk
from .support import SupportChecker, SupportVerdict

QUESTION = (
    'Claim: "{claim}"\n'
    "Does the passage state this claim? Answer yes (the passage states it), no (the passage says "
    "something different) or unclear (the passage does not say)."
)
WORDS = ("yes", "no", "unclear")
LABELS = {"yes": "entailment", "no": "contradiction", "unclear": "neutral"}


@dataclass
class EntailmentVerdict(SupportVerdict):
    method: str = "llm"  # llm | lexical (fallback: the LLM failed or gave no usable answer)
    entailment: dict = field(default_factory=dict)  # chunk id -> {entailment, contradiction, neutral}

    def reason(self) -> str:
        if self.method == "llm" and not self.missing_specifics:
            best = max((p["entailment"] for p in self.entailment.values()), default=0.0)
            return f"not entailed by the cited text (LLM P(entailment) {best:.2f})"
        return super().reason()


class LlmEntailmentChecker:
    def __init__(self, judge: PassageJudge, lexical: SupportChecker, min_entailment: float) -> None:
        self.judge = judge
        self.lexical = lexical
        self.min_entailment = min_entailment

    def check(self, claim: str, evidence: list[Chunk]) -> EntailmentVerdict:
        lexical = self.lexical.check(claim, evidence)
        verdict = EntailmentVerdict(**vars(lexical))
        try:
            for chunk in evidence:
                answer = self.judge.ask(chunk, QUESTION.format(claim=claim), WORDS)
                if answer is None:
                    raise GenerationFault("garbage", "no yes/no/unclear in the verifier's reply")
                verdict.entailment[chunk.id] = {LABELS[w]: p for w, p in answer.probabilities.items()} | {
                    "prompt_tokens": answer.prompt_tokens,
                    "evaluated_tokens": answer.evaluated_tokens,
                }
        except GenerationFault:
            verdict.method, verdict.entailment = "lexical", {}
            return verdict
        best = max((p["entailment"] for p in verdict.entailment.values()), default=0.0)
        verdict.supported = best >= self.min_entailment and not verdict.missing_specifics
        return verdict
