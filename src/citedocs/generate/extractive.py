"""The no-LLM backend: quote the best-supporting sentences of the top chunks, each cited.

Deterministic and fast; used by the tests, by the release gate, and as the fallback when an
endpoint fails. It writes the same marker format an LLM is asked for, so its output goes through
the same validator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..contract import HistoryTurn
from ..embedding_cache import EmbeddingCache, question_vector
from ..encoders import BiEncoder
from ..sentences import split_units
from ..types import Chunk
from ..validate.markers import with_markers
from ..validate.support import content_terms
from .base import Generation
from .prompt import NO_ANSWER

PROMPT_VERSION = "extractive_v1"
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+\.)\s+")
# A question that asks for an amount: an asking sentence, or its ", and ..." clause, opens with it
# ("How long does the PIN stay valid, and how many attempts ...?"); "How can I see how many ..." does not.
_ASKS_AMOUNT = re.compile(
    r"(?:^|[?.!]\s+|,\s*(?:and|or)\s+)(?:(?:and|so|ok|okay|roughly|approximately|about)[,\s]+)*"
    r"(?:how\s+(?:many|much|long|often|large|big|old)|what\s+(?:is|are)\s+the\s+(?:maximum|minimum|limit|limits|price|cost)\b)",
    re.IGNORECASE,
)
_AMOUNT = re.compile(
    r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"hundred|thousand|million|once|twice|unlimited|no\s+limit)\b",
    re.IGNORECASE,
)


def _names_code(candidate: _Candidate) -> bool:
    return "`" in candidate.text


@dataclass
class _Candidate:
    chunk_rank: int
    position: int
    chunk: Chunk
    text: str
    is_code: bool
    score: float = 0.0


class ExtractiveGenerator:
    name = "extractive"
    model = "extractive (all-MiniLM-L6-v2 sentence scoring)"

    def __init__(self, encoder: BiEncoder, min_sentence_score: float, max_units: int = 4, chunks_considered: int = 3):
        self.encoder = encoder
        self.sentences = EmbeddingCache(encoder, "extractive_sentences")  # docs text: reused across requests
        self.min_sentence_score = min_sentence_score
        self.max_units = max_units
        self.chunks_considered = chunks_considered

    def _candidates(self, chunks: Sequence[Chunk]) -> list[_Candidate]:
        out = []
        for rank, chunk in enumerate(chunks[: self.chunks_considered]):
            for position, unit in enumerate(split_units(chunk.text)):
                text = unit.text if unit.is_code else _LIST_MARKER.sub("", unit.text)
                if unit.is_code and text.count("\n") > 14:
                    continue  # long samples are better read at the source
                if not unit.is_code and len(content_terms(text)) < 3:
                    continue  # fragments like "For example:" carry no claim
                out.append(_Candidate(rank, position, chunk, text, unit.is_code))
        return out

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        candidates = self._candidates(chunks)
        if not candidates:
            return self._decline("the retrieved docs hold no quotable sentence")
        question_terms = content_terms(question)
        # a sentence is scored with its section heading, which often carries the topic it omits
        texts = [f"{c.chunk.section}: {c.text}" for c in candidates]
        similarities = self.sentences.encode(texts) @ question_vector(question, self.encoder)
        for candidate, similarity in zip(candidates, similarities):
            overlap = len(question_terms & content_terms(candidate.text)) / max(1, len(question_terms))
            candidate.score = 0.6 * float(similarity) + 0.4 * overlap - 0.05 * candidate.chunk_rank
        prose = [c for c in candidates if not c.is_code]
        if not prose:
            return self._decline("the retrieved docs hold no quotable sentence")
        chosen = self._choose(prose, candidates)
        if _ASKS_AMOUNT.search(question) and not any(_AMOUNT.search(c.text) for c in chosen):
            # an answer to "how many ...?" without a number does not answer it: quote the closest
            # passage that states one, else decline (the docs lack the asked figure)
            stated = max((c for c in candidates if _AMOUNT.search(c.text)), key=lambda c: c.score, default=None)
            if stated is None or stated.score < self.min_sentence_score:
                return self._decline("no sentence in the retrieved docs states the amount the question asks for")
            chosen.append(stated)
        chosen.sort(key=lambda c: (c.chunk_rank, c.position))
        lines = [c.text + f"\n[{c.chunk.id}]" if c.is_code else with_markers(c.text, [c.chunk.id]) for c in chosen]
        return Generation(text="\n".join(lines), backend=self.name, model=self.model, prompt_version=PROMPT_VERSION)

    def _choose(self, prose: list[_Candidate], candidates: list[_Candidate]) -> list[_Candidate]:
        """The best sentence, the section's lead, the next best up to ``max_units``, and the code
        sample that follows one of them.

        Whether to answer was decided before generation (retrieval margin, question gate): a weak
        best sentence is still the closest the docs come. Declining on its score refused only
        answerable questions (7 of 7 such declines over every case set, 2026-11-25), mostly long
        questions whose story dilutes every sentence's score."""
        best = max(prose, key=lambda c: c.score)
        floor = max(self.min_sentence_score, 0.8 * best.score)
        chosen = [best]
        lead = next((c for c in prose if c.chunk_rank == 0), None)  # a section's opening states its point
        if lead is not None and lead is not best and lead.score >= 0.7 * best.score:
            chosen.append(lead)
        # A sentence that names code (an option, a command, a function: what how-to answers hinge on)
        # qualifies down to 0.6 x the best score and competes for the last slots 0.2 ahead of prose
        # that names none (2026-11-25, every dev set: keyword correctness up on four, down on none).
        code_floor = max(self.min_sentence_score, 0.6 * best.score)
        rest = sorted(
            (c for c in prose if c not in chosen and (c.score >= floor or (_names_code(c) and c.score >= code_floor))),
            key=lambda c: -(c.score + 0.2 * _names_code(c)),
        )
        chosen += rest[: max(0, self.max_units - 1 - len(chosen))]
        code = self._code_after(chosen, candidates)
        if code:
            chosen.append(code)
        return chosen

    @staticmethod
    def _code_after(chosen: list[_Candidate], candidates: list[_Candidate]) -> _Candidate | None:
        """The code sample right after a chosen sentence (commands and config usually follow their prose);
        a sentence ending in a colon announces its sample, so its sample comes first."""
        for sentence in sorted(chosen, key=lambda c: not c.text.rstrip().endswith(":")):
            for candidate in candidates:
                if (
                    candidate.is_code
                    and candidate.chunk is sentence.chunk
                    and 0 < candidate.position - sentence.position <= 2
                ):
                    return candidate
        return None

    def _decline(self, reason: str) -> Generation:
        return Generation(
            text=f"{NO_ANSWER}: {reason}", backend=self.name, model=self.model, prompt_version=PROMPT_VERSION
        )

    def probe(self) -> str | None:
        return None  # always ready: needs nothing outside this process

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        return None
