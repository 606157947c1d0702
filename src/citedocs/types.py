"""Types shared between pipeline stages."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import NewType

ChunkId = NewType("ChunkId", str)
"""Human-readable, deterministic chunk id: ``<page path>#<section anchor>/<n>``.

The anchor part is empty for text before the page's first heading (``getting-started#/1``).
"""


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Chunk:
    id: ChunkId
    doc_path: str  # corpus-relative source file, e.g. guides/environment-variables.mdx
    title: str  # page title
    heading_path: tuple[str, ...]  # headings from the page's top down to this chunk's section
    anchor: str  # the section's own anchor ("" = page top)
    anchor_path: tuple[str, ...]  # anchors of the enclosing sections, outermost first, own last
    url: str  # page URL with #anchor
    text: str  # flattened section text (code fences kept verbatim)
    token_count: int
    # the page's language (ISO 639-1, ingest/page_language.py); "" in an index written before it was stored
    language: str = ""

    @property
    def section(self) -> str:
        return self.heading_path[-1] if self.heading_path else self.title

    @property
    def hash(self) -> str:
        return content_hash(self.title, " > ".join(self.heading_path), self.url, self.text)

    def embedding_text(self) -> str:
        """What the bi-encoder sees: where the text sits, then the text."""
        return " > ".join((self.title, *self.heading_path)) + "\n" + self.text


@dataclass(frozen=True)
class StageScores:
    """Scores and ranks a chunk got from each retrieval stage (None = not a candidate there)."""

    bm25_rank: int | None = None
    bm25_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    fused_score: float | None = None
    rerank_score: float | None = None


@dataclass(frozen=True)
class SearchHit:
    chunk: Chunk
    score: float  # what the hits are ordered by: rank fusion of BM25, dense (and the reranker's ranking)
    stages: StageScores = field(default_factory=StageScores)
