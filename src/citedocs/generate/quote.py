"""The LLM judges the passages, the answer quotes them: an LLM backend's ``quote`` answer style.

On 2 CPU cores Qwen2.5-Coder-1.5B writes answers that miss the asked detail more often than the
extractive backend's quotes, and often restate the question; asked to pick numbered sentences
instead, it picks the first few (docs/decisions/2026-11-27-answer-style.md).
What it does well is judge one passage against the question (the grader). So in this style the
model grades the retrieved chunks (``grader.py``: drops the ones that do not help) and rewrites
follow-ups, and the answer quotes the best sentences of the chunks it kept (``extractive.py``).
Every sentence is then a verbatim quote of the chunk it cites, so there is nothing for the LLM
verifier to entail: the lexical check still validates each one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation
from .extractive import PROMPT_VERSION as EXTRACTIVE_VERSION
from .extractive import ExtractiveGenerator
from .openai_compat import OpenAICompatibleGenerator

PROMPT_VERSION = f"{EXTRACTIVE_VERSION}+llm_graded"


def resolve_answer_style(style: str, backend: str) -> str:
    """``auto``: ``quote`` for the local model (better than its written answers on the Flask and
    VitePress dev sets, docs/decisions/2026-11-27-answer-style.md), ``write`` for an OpenAI-compatible endpoint, whose
    model may well write better than it quotes."""
    if style == "auto":
        return "quote" if backend == "local" else "write"
    return style


class QuotingGenerator:
    """An LLM backend whose answers are quotes: ``llm`` grades and rewrites, ``quotes`` answers."""

    def __init__(self, llm: OpenAICompatibleGenerator, quotes: ExtractiveGenerator) -> None:
        self.llm = llm
        self.quotes = quotes
        self.name = llm.name
        self.model = f"{llm.model} (grading) + {quotes.model}"
        self.prompt_version = PROMPT_VERSION

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        generation = self.quotes.generate(question, chunks, history)
        generation.backend, generation.model, generation.prompt_version = self.name, self.model, self.prompt_version
        return generation

    def probe(self) -> str | None:
        return self.llm.probe()

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        return self.llm.rewrite_query(question, history)

    def close(self) -> None:
        if hasattr(self.llm, "close"):
            self.llm.close()
