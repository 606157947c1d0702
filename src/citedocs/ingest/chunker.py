"""Pack a reader's sections into chunks.

Rules (the product's own logic):
* a chunk never starts or ends inside a code fence, an admonition or an open component;
* each heading starts a new section; a section's chunks carry the heading path and the anchor;
* long sections are split near ``target_tokens`` with a one-block overlap; a single block larger
  than the limit (a long code sample) stays whole rather than being cut, up to MAX_BLOCK_TOKENS:
  past that (a 1M-character line) it is cut into target-sized pieces, at spaces where it has any;
* chunk ids are ``<page>#<anchor>/<n>``, so unchanged text gets the same id on every ingest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..types import Chunk, ChunkId
from .document import Block, ParsedPage, estimate_tokens
from .planted import FlaggedSentence, Screen
from .readers import Reader, SourceFile
from .readers.mdx import MDX

CHUNKER_VERSION = "6"
# A block is kept whole up to this size (the largest in the shared corpora is 3,356 tokens); a larger
# one is no longer a unit a reader or the embedder can use, and one chunk of it would be megabytes.
MAX_BLOCK_TOKENS = 4096
_ATOM = re.compile(r"\S{1,200}\s*|\s+")  # words (a space-free run is cut every 200 characters)


@dataclass(frozen=True)
class ParsedDocument:
    page: ParsedPage
    chunks: list[Chunk]
    withheld: tuple[FlaggedSentence, ...] = ()  # planted instructions kept out of the chunks

    @property
    def doc_path(self) -> str:
        return self.page.doc_path


def _weight(text: str) -> int:
    """Tokens, but at least one per 4 characters: a long run of letters is one "word" to the
    estimate, yet many word pieces to the embedder."""
    return max(estimate_tokens(text), len(text) // 4)


class Piece(Block):
    """Part of a block cut by ``_pieces``: packed by its weight, so long space-free runs count fully."""


def _pieces(block: Block, target: int) -> list[Block]:
    """``block`` itself, or, past MAX_BLOCK_TOKENS, consecutive pieces of about ``target`` tokens."""
    if _weight(block.text) <= MAX_BLOCK_TOKENS:
        return [block]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for atom in _ATOM.findall(block.text):
        tokens = _weight(atom)
        if current and size + tokens > target:
            pieces.append("".join(current).strip())
            current, size = [], 0
        current.append(atom)
        size += tokens
    pieces.append("".join(current).strip())
    texts = [p for p in pieces if p]
    return [Piece(t, block.splittable_after if i == len(texts) - 1 else True) for i, t in enumerate(texts)]


def _pack(blocks: list[Block], target: int) -> list[list[Block]]:
    """Group blocks into chunks near ``target`` tokens, splitting only where allowed.

    A component or fence larger than the target stays whole: a cut there would separate a claim
    from the code or the note that qualifies it.
    """
    groups: list[list[Block]] = []
    current: list[Block] = []
    size = 0
    for block in (piece for b in blocks for piece in _pieces(b, target)):
        block_size = _weight(block.text) if isinstance(block, Piece) else estimate_tokens(block.text)
        can_split = bool(current) and current[-1].splittable_after
        over_target = size + block_size > target
        if current and over_target and can_split:
            groups.append(current)
            last = current[-1]
            overlap = [last] if estimate_tokens(last.text) <= target // 4 and len(current) > 1 else []
            current = list(overlap)
            size = sum(estimate_tokens(b.text) for b in current)
        current.append(block)
        size += block_size
    if current:
        groups.append(current)
    return groups


def chunk_page(page: ParsedPage, target_tokens: int = 350) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in page.sections:
        for n, group in enumerate(_pack(section.blocks, target_tokens), start=1):
            text = "\n\n".join(b.text for b in group)
            chunks.append(
                Chunk(
                    id=ChunkId(f"{page.page}#{section.anchor}/{n}"),
                    doc_path=page.doc_path,
                    title=page.title,
                    heading_path=section.heading_path,
                    anchor=section.anchor,
                    anchor_path=section.anchor_path,
                    url=f"{page.url}#{section.anchor}" if section.anchor else page.url,
                    text=text,
                    token_count=estimate_tokens(text),
                )
            )
    return chunks


def chunk_document(
    doc_path: str,
    source: str,
    base_url: str,
    reader: Reader = MDX,
    root: Path | None = None,
    screen: Screen | None = None,
) -> ParsedDocument:
    """Read one page and return its chunks, without the sentences ``screen`` flags as planted
    instructions. Raises DocumentError for pages that cannot be used."""
    page = reader.read(SourceFile(rel_path=doc_path, text=source, root=root or Path("."), base_url=base_url))
    withheld: list[FlaggedSentence] = []
    if screen is not None:
        page, withheld = screen.withhold(page)
    return ParsedDocument(page=page, chunks=chunk_page(page), withheld=tuple(withheld))
