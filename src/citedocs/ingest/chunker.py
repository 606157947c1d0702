"""Pack a reader's sections into chunks that the embedder reads whole.

Rules (the product's own logic):
* every chunk fits the embedder: its ``embedding_text()`` (title and heading path, then the text)
  is at most the model's word pieces (``budget.embedder_budget``), so dense search sees all of it;
* a chunk prefers to start and end where the reader allows (not inside a code fence, an
  admonition or an open component) and is closed near 80% of the budget at such a place; only
  when a component would overflow the budget is it split between its blocks;
* a block larger than the budget is split: at blank lines, then line boundaries (so code is cut
  between lines, each piece a balanced fence that repeats the opening line), then sentences, then
  words; a single giant token run is cut hard. Each piece becomes a chunk under the same heading
  path, so the context is repeated with it;
* each heading starts a new section; a section's chunks carry the heading path and the anchor;
* chunk ids are ``<page>#<anchor>/<n>``, so unchanged text gets the same id on every ingest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..types import Chunk, ChunkId
from .budget import PieceBudget, embedder_budget
from .document import Block, ParsedPage, estimate_tokens
from .inventory import Entry, page_entries
from .planted import FlaggedSentence, Screen, displayed_page
from .readers import Reader, SourceFile
from .readers.mdx import MDX

CHUNKER_VERSION = "6"
SOFT_FILL = 0.8  # close a chunk past this share of the budget at the first allowed boundary
FENCE_ROOM = 16  # word pieces kept free for the fence lines a split code block repeats
MIN_ROOM = 32  # a heading path so long that less is left still gets this much text per chunk
_FENCE_LINE = re.compile(r"^(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^(?:\d+\.|-) ")  # a top-level item as the readers render lists
Measure = Callable[[str], int]  # word pieces of a text


@dataclass(frozen=True)
class ParsedDocument:
    page: ParsedPage
    chunks: list[Chunk]
    withheld: tuple[FlaggedSentence, ...] = ()  # planted instructions kept out of the chunks
    inventory: tuple[Entry, ...] = ()  # hosts and risky steps the page names (inventory.py), withheld ones too

    @property
    def doc_path(self) -> str:
        return self.page.doc_path


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?:;])\s+", text)


def _fence_aware(text: str, mode: str) -> list[str]:
    """``text`` cut into list items (``item``), paragraphs (``blank``) or lines (``line``),
    with every code fence kept inside one unit."""
    units: list[str] = []
    current: list[str] = []
    fence = ""

    def flush() -> None:
        if current:
            units.append("\n".join(current))
            current.clear()

    for line in text.split("\n"):
        match = _FENCE_LINE.match(line)
        stripped = line.strip()
        if fence:
            current.append(line)
            if match and stripped == fence[0] * len(stripped) and len(stripped) >= len(fence):
                fence = ""
                if mode == "line":
                    flush()
        elif match:
            fence = match.group(1)
            current.append(line)
        elif mode == "blank" and not stripped:
            flush()
        else:
            if mode == "item" and _LIST_ITEM.match(line):
                flush()
            current.append(line)
            if mode == "line":
                flush()
    flush()
    return units


# how an oversized text is cut, coarsest first: (joiner, splitter); a list item, then a code
# fence, stays whole until only cutting inside it can make the text fit
_LEVELS = (
    ("\n", lambda text: _fence_aware(text, "item")),
    ("\n\n", lambda text: _fence_aware(text, "blank")),
    ("\n", lambda text: _fence_aware(text, "line")),
    ("\n", lambda text: text.split("\n")),
    (" ", _sentences),
    (" ", lambda text: text.split(" ")),
)


def _hard_split(text: str, room: int, pieces: Measure) -> list[str]:
    """A run with no whitespace (a minified line, a data URI): cut by characters. Each cut is sized
    from the next window only, never from the whole rest (quadratic on a megabyte line)."""
    parts = []
    while text:
        window = text[: room * MAX_CHARS_PER_PIECE]
        size = max(1, len(window) * room // max(pieces(window), 1))
        while size > 1 and pieces(text[:size]) > room:
            size = size * 4 // 5
        parts.append(text[:size])
        text = text[size:]
    return parts


def _split(text: str, room: int, pieces: Measure, level: int = 0) -> list[str]:
    """Cut ``text`` into parts of at most ``room`` word pieces at the coarsest boundaries possible."""
    if pieces(text) <= room:
        return [text]
    if level == len(_LEVELS):
        return _hard_split(text, room, pieces)
    joiner, splitter = _LEVELS[level]
    units = [u for u in splitter(text) if u.strip()] if level < 4 else splitter(text)
    if len(units) <= 1:
        return _split(text, room, pieces, level + 1)
    parts: list[str] = []
    current: list[str] = []
    for unit in units:
        for piece in _split(unit, room, pieces, level + 1):
            if current and pieces(joiner.join([*current, piece])) > room:
                parts.append(joiner.join(current))
                current = []
            current.append(piece)
    if current:
        parts.append(joiner.join(current))
    return parts


def _rebalance_fences(parts: list[str]) -> list[str]:
    """A part that ends inside a code fence closes it; the next part reopens it with the same line."""
    out = []
    opener: str | None = None
    for part in parts:
        if opener:
            part = f"{opener}\n{part}"
        opener = None
        ticks = ""
        for line in part.split("\n"):
            match = _FENCE_LINE.match(line)
            if not match:
                continue
            if opener is None:
                opener, ticks = line, match.group(1)
            elif line.strip() == line.strip()[0] * len(line.strip()) and line.strip().startswith(ticks):
                opener = None
        out.append(f"{part}\n{ticks}" if opener else part)
    return out


def _fit(block: Block, room: int, pieces: Measure) -> list[Block]:
    if pieces(block.text) <= room:
        return [block]
    parts = _rebalance_fences(_split(block.text, room - FENCE_ROOM, pieces))
    return [Block(part, splittable_after=True) for part in parts[:-1]] + [Block(parts[-1], block.splittable_after)]


def _pack(blocks: list[Block], room: int, pieces: Measure) -> list[list[Block]]:
    """Group blocks (each at most ``room`` pieces) into chunks of at most ``room`` pieces.

    Past ``SOFT_FILL`` of the room a chunk closes at the first boundary the reader allows; it
    closes anywhere only when the next block would not fit at all. A small last block is repeated
    at the start of the next chunk, so a lead-in sentence stays with what it introduces.
    """
    groups: list[list[Block]] = []
    current: list[Block] = []
    size = 0
    for block in blocks:
        block_size = pieces(block.text)
        can_split = bool(current) and current[-1].splittable_after
        if current and (size + block_size > room or (size + block_size > room * SOFT_FILL and can_split)):
            groups.append(current)
            last = current[-1]
            last_size = pieces(last.text)
            keep = len(current) > 1 and last_size <= room // 4 and last_size + block_size <= room
            current = [last] if keep else []
            size = last_size if keep else 0
        current.append(block)
        size += block_size
    if current:
        groups.append(current)
    return groups


# The tokenizer reads a word over 100 characters as one [UNK] piece, so a megabyte run without
# spaces would "fit" one chunk; no text is counted as fewer pieces than its length / this.
MAX_CHARS_PER_PIECE = 16


def _measure(budget: PieceBudget) -> Measure:
    """``budget.pieces`` remembered per text: fitting and packing ask about the same blocks."""
    known: dict[str, int] = {}

    def pieces(text: str) -> int:
        if text not in known:
            known[text] = max(budget.pieces(text), len(text) // MAX_CHARS_PER_PIECE)
        return known[text]

    return pieces


def chunk_page(page: ParsedPage, budget: PieceBudget | None = None) -> list[Chunk]:
    budget = budget or embedder_budget()
    pieces = _measure(budget)
    chunks: list[Chunk] = []
    numbers: Counter[str] = Counter()  # a section may continue after a nested one (same anchor)
    for section in page.sections:
        context = " > ".join((page.title, *section.heading_path)) + "\n"  # as Chunk.embedding_text() writes it
        room = max(MIN_ROOM + FENCE_ROOM, budget.max_pieces - budget.count(context))
        blocks = [part for block in section.blocks for part in _fit(block, room, pieces)]
        for group in _pack(blocks, room, pieces):
            numbers[section.anchor] += 1
            n = numbers[section.anchor]
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
    page = displayed_page(reader.read(SourceFile(rel_path=doc_path, text=source, root=root or Path("."), base_url=base_url)))
    withheld: list[FlaggedSentence] = []
    inventory: list[Entry] = []
    if screen is not None:
        inventory = page_entries(page, source)
        page, withheld = screen.withhold(page)
    return ParsedDocument(page=page, chunks=chunk_page(page), withheld=tuple(withheld), inventory=tuple(inventory))
