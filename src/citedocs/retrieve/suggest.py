"""Up to three follow-up questions after a grounded answer, each one the corpus can answer.

Candidates come from the docs around the answer: the sections next to the cited one on its page
(the next first, then the previous), then the page's other sections, then the other cited pages'
sections. Without an LLM a candidate is the section's place, "page title › heading", which is
what a reader would look for next and which retrieval matches well in any language. With an LLM
(setting ``suggested_questions = llm``) the model first turns those headings into questions in the
question's language; whatever it writes is checked the same way, and the headings fill any gap.

The check: a candidate is kept only if retrieving it, exactly as a user's question is retrieved,
scores at least ``min_retrieval_margin`` above the corpus's floor (what the answer gate requires,
``null_level.py``) and its top passages include one the answer did not cite (a follow-up must lead
somewhere new; its ``url`` is the best such passage). At most ``MAX_CHECKED`` candidates are retrieved, so a suggestion costs a bounded
number of retrievals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..index.store import Store
from ..types import Chunk
from .hybrid import HybridRetriever, RetrievalConfig
from .null_level import NullLevels

MAX_SUGGESTIONS = 3
MAX_CHECKED = 6  # candidates retrieved at most per answer (each is one retrieval)
CHECK_TOP_K = 3
QUESTION_PROMPT = (
    "A reader asked: {question}\n\nThe docs have these sections nearby:\n{sections}\n\n"
    "Write up to 3 short follow-up questions the reader may ask next that these sections answer, "
    "in the language of the reader's question, one per line, nothing else."
)


@dataclass(frozen=True)
class Candidate:
    text: str
    source: str  # "docs" (a section's place) | "llm" (the model's question)


class FollowUps:
    """The follow-up questions of one corpus version's answers."""

    def __init__(
        self,
        store: Store,
        retriever: HybridRetriever,
        null_levels: NullLevels,
        min_margin: float,
        write_questions: Callable[[str], str] | None = None,
    ) -> None:
        self.store = store
        self.retriever = retriever
        self.null_levels = null_levels
        self.min_margin = min_margin
        self.write_questions = write_questions  # an LLM's chat: prompt -> text (None: headings only)
        self._pages: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {}  # corpus -> (version, page -> chunk ids)
        self._lock = threading.Lock()

    def _page_chunks(self, corpus: str, version: str, page: str) -> tuple[str, ...]:
        with self._lock:
            known = self._pages.get(corpus)
        if known is None or known[0] != version:
            pages = {path: record.chunk_ids for path, record in self.store.documents(corpus).items()}
            known = (version, pages)
            with self._lock:
                self._pages[corpus] = known
        return known[1].get(page, ())

    def candidates(self, corpus: str, version: str, cited: Sequence[Chunk]) -> list[Candidate]:
        """Nearby sections' places, in the order a reader would go on: next, previous, then the rest."""
        seen_sections: set[tuple[str, ...]] = {(c.doc_path, *c.heading_path) for c in cited}
        ordered: list[str] = []
        for chunk in cited:
            ids = list(self._page_chunks(corpus, version, chunk.doc_path))
            if chunk.id not in ids:
                continue
            at = ids.index(chunk.id)
            ordered += [i for i in ids[at + 1 :] + ids[:at][::-1] if i not in ordered]
        order = {cid: n for n, cid in enumerate(ordered[:60])}
        out: list[Candidate] = []
        for neighbour in sorted(self.store.get_chunks(corpus, list(order)), key=lambda c: order[c.id]):
            section = (neighbour.doc_path, *neighbour.heading_path)
            if section in seen_sections or not neighbour.heading_path:
                continue
            seen_sections.add(section)
            out.append(Candidate(f"{neighbour.title} › {neighbour.heading_path[-1]}", "docs"))
        return out

    def _llm_candidates(self, question: str, docs: list[Candidate]) -> list[Candidate]:
        if self.write_questions is None or not docs:
            return []
        sections = "\n".join(f"- {c.text}" for c in docs[:MAX_CHECKED])
        try:
            written = self.write_questions(QUESTION_PROMPT.format(question=question, sections=sections))
        except Exception:  # noqa: BLE001 (an LLM fault costs the phrasing, never the answer)
            return []
        lines = [line.strip().lstrip("-*0123456789.) ").strip() for line in written.splitlines()]
        return [Candidate(line, "llm") for line in lines if 8 <= len(line) <= 200][:MAX_SUGGESTIONS]

    def suggest(self, corpus: str, version: str, question: str, cited: Sequence[Chunk]) -> list[dict]:
        """Up to three checked follow-ups: ``{"question", "source", "confidence", "url"}``."""
        docs = self.candidates(corpus, version, cited)
        floor = self.null_levels.level(corpus, version)
        cited_ids = {c.id for c in cited}
        asked = " ".join(question.lower().split())
        kept: list[dict] = []
        for candidate in (self._llm_candidates(question, docs) + docs)[:MAX_CHECKED]:
            if len(kept) == MAX_SUGGESTIONS:
                break
            if " ".join(candidate.text.lower().split()) == asked or any(k["question"] == candidate.text for k in kept):
                continue
            result = self.retriever.retrieve(corpus, candidate.text, CHECK_TOP_K, RetrievalConfig())
            new = [h.chunk for h in result.hits if h.chunk.id not in cited_ids]
            if not new or result.confidence - floor < self.min_margin:
                continue
            kept.append(
                {"question": candidate.text, "source": candidate.source, "confidence": round(result.confidence, 4), "url": new[0].url}
            )
        return kept
