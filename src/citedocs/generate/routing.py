"""Which model writes an answer (setting ``llm_routing = on``): a fast one for easy questions, a
strong one for hard ones, by features known once retrieval has run, in any language.

A question is **hard** when any of these holds, else **easy**:

- *weak evidence*: its best passage scores less than ``WEAK_EVIDENCE`` times the refusal margin above
  the corpus's floor (it passed the gate, but not by much: the answer must be read out of passages
  that only partly match);
- *spread evidence*: its top ``SPREAD_TOP`` passages come from ``SPREAD_PAGES`` or more pages (the
  answer must be put together from several places);
- *long question*: over ``LONG_QUESTION`` words (a CJK character counts as a word), which is
  usually several questions or a scenario;
- *follow-up*: it continues a conversation (the history has to be read too).

The constants were set before measuring, from what each feature means; they are not fitted to any
question set. The share each route gets on the held-out sets is measured by
``benchmarks/route_shares.py`` (docs/how-to/openai-endpoint.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..types import Chunk

WEAK_EVIDENCE = 2.0  # margins above the floor below which evidence is weak (x min_retrieval_margin)
SPREAD_TOP = 3
SPREAD_PAGES = 3
LONG_QUESTION = 30


@dataclass(frozen=True)
class RouteDecision:
    route: str  # "fast" | "strong"
    reasons: tuple[str, ...]  # why it is hard (empty: easy)

    def as_dict(self) -> dict:
        return {"route": self.route, "reasons": list(self.reasons)}


def question_words(text: str) -> int:
    """Words for the length rule: whitespace-separated words, and each CJK/kana/hangul character."""
    wide = sum(1 for ch in text if 0x2E80 <= ord(ch) <= 0xD7FF or 0xF900 <= ord(ch) <= 0xFAFF)
    narrow = "".join(" " if 0x2E80 <= ord(ch) <= 0xD7FF or 0xF900 <= ord(ch) <= 0xFAFF else ch for ch in text)
    return wide + len(narrow.split())


def choose_route(
    question: str, follow_up: bool, chunks: Sequence[Chunk], confidence: float, floor: float, min_margin: float
) -> RouteDecision:
    reasons = []
    if confidence - floor < WEAK_EVIDENCE * min_margin:
        reasons.append("weak_evidence")
    if len({c.doc_path for c in chunks[:SPREAD_TOP]}) >= SPREAD_PAGES:
        reasons.append("spread_evidence")
    if question_words(question) > LONG_QUESTION:
        reasons.append("long_question")
    if follow_up:
        reasons.append("follow_up")
    return RouteDecision("strong" if reasons else "fast", tuple(reasons))
