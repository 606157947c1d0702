"""Answer units: what a quote from the docs must hold to make sense, following the docs' structure.

A chunk's text is read as pieces: its sentences, list items, numbered steps, table rows and code
blocks, exactly the units the validator later checks one by one (``sentences.split_units``). A
sentence chosen to answer brings along the pieces it cannot stand without:

* an **announcement** (a sentence that ends in ``:`` or in "like so", "as follows", "for example",
  or that opens with "The following example", "Here is an example") brings what it announces, the
  next piece of its chunk: a code block (at most ``MAX_CODE_LINES`` lines; a longer one is cut
  after them and its last line is ``…``), a list or table (at most ``MAX_ITEMS`` items or rows; a
  longer one is followed by the cut mark ``(…)``), or the sentence that follows. When its chunk
  ends before what it announces, that is taken from the start of the section's next chunk if it was
  retrieved too (``continued``); otherwise the announcement is not quoted;
* a **step** of a numbered list brings the whole list, from step 1, with the sentence that
  announces it; a list of more than ``MAX_ITEMS`` steps, or one its chunk holds only part of, is
  not quoted at all (half a procedure reads as a whole one);
* a sentence that **refers back** ("This means ...", "Otherwise, ...", "In the above example, ...")
  brings the sentence before it, or the code block before it with that block's announcement;
* a sentence of a **list item** brings the rest of its item (at most ``MAX_ITEM_SENTENCES``
  sentences, none announcing what follows): an option's item names the option first and says its
  default or its values after, and either half alone misleads;
* a sentence of a **definition** of at most ``MAX_ITEM_SENTENCES`` sentences brings its term and
  the rest of the definition (``json.dumps_kwargs``: "Keyword arguments ... The default is ...");
* a **table row** brings its table's header row (the first row of the table in its chunk), so the
  quote says what each cell is; both rows are quoted as the chunk holds them, so the validator
  checks them word for word;
* the first sentence of a **definition** brings its term (the short line above it without
  sentence punctuation, as readers render ``<dt>`` and reST definition lists);
* a sentence of an **API entry** (a section whose heading is the entry's signature or name, as the
  HTML and reStructuredText readers record ``<dt id>`` and ``.. function::`` entries) is preceded by
  the entry's signature as a code line, copied from the chunk (its first line, else its heading).

The validator checks every piece as it checks any other: prose against the cited chunk, code (a
signature included) verbatim against the chunk's text and headings; the cut marks are the only
lines it passes through without a check, and only right after a unit it kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..sentences import CODE_CUT_MARK, split_lines, split_sentences
from ..types import Chunk

MAX_CODE_LINES = 12  # a carried code block longer than this is cut, its last line ``…``
MAX_ITEMS = 8  # a carried list or table longer than this is cut (steps: not carried at all)
# a list item of at most this many sentences is quoted whole: an option's item names the option in its
# first sentence and says its default or its values in the next ("`minimum_size` - ... Defaults to `500`.")
MAX_ITEM_SENTENCES = 3
_STEP = re.compile(r"^(\d+)[.)]\s+")
_ITEM = re.compile(r"^[-*+•]\s+")
# a sentence that announces what follows it: "... like so:", "... as follows:", "For example:"
_ANNOUNCES = re.compile(
    r"(?::|\b(?:like so|like this|as follows|the following|for example|for instance|e\.g\.|below)[.:]?)$", re.IGNORECASE
)
# ... or that points at what comes next: "The following example ...", "Here is an example of ..."
_POINTS_AHEAD = re.compile(
    r"^(?:the following (?:example|code|snippet|configuration)|here(?: is|'s| are) (?:an?|the|some) (?:\w+ )?examples?|"
    r"(?:see )?the example below)\b",
    re.IGNORECASE,
)
# a sentence that cannot stand without the one before it
_REFERS_BACK = re.compile(
    r"^(?:this|that|these|those|they|then|otherwise|instead|however|in (?:this|that|the above|such a) (?:case|example)|"
    r"in the (?:above|previous) example|as a result)\b",
    re.IGNORECASE,
)
_TERM_END = re.compile(r"[.!?:;,]$")
_CODE_TERM = re.compile(r"^`[^`]+`:$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]")
_SIGNATURE_PREFIX = re.compile(  # the words Sphinx writes before an entry's name
    r"^(?:(?:async|class|exception|static|abstract|final|method|property|classmethod|staticmethod|attribute|data|"
    r"function|decorator|await)\s+)+"
)


@dataclass(frozen=True)
class Piece:
    text: str  # as quoted: a list item's marker removed
    kind: str  # prose | item | step | row | code
    line: int  # which line (or code block) of the chunk it is part of
    first: bool  # it opens its line
    last: bool  # it ends its line
    number: int | None = None  # a step's number


def announces(text: str) -> bool:
    return bool(_ANNOUNCES.search(text.rstrip()) or _POINTS_AHEAD.match(text))


@lru_cache(maxsize=4096)
def read_pieces(text: str) -> tuple[Piece, ...]:
    """A chunk's pieces, in order (remembered by text: the same chunks come back request after request)."""
    out: list[Piece] = []
    for line_no, (block, is_code) in enumerate(split_lines(text)):
        if is_code:
            out.append(Piece(block, "code", line_no, True, True))
            continue
        step, item = _STEP.match(block), _ITEM.match(block)
        if step:
            kind, number, body = "step", int(step.group(1)), block[step.end() :]
        elif item:
            kind, number, body = "item", None, block[item.end() :]
        else:
            cells = re.sub(r"`[^`]*`", "", block)  # a `a | b` in code is no table row
            kind, number = ("row" if " | " in cells or cells.startswith("|") else "prose"), None
            body = block
        sentences = split_sentences(body)
        for n, sentence in enumerate(sentences):
            out.append(Piece(sentence, kind, line_no, n == 0, n == len(sentences) - 1, number if n == 0 else None))
    return tuple(out)


def _run(pieces: tuple[Piece, ...], start: int) -> list[int]:
    """The list or table that starts at ``start``: the following pieces of the same kind (a step's
    code block, between two steps, included)."""
    kind = pieces[start].kind
    run = [start]
    i = start + 1
    while i < len(pieces):
        if pieces[i].kind == kind:
            run.append(i)
        elif kind == "step" and pieces[i].kind == "code" and pieces[i - 1].kind == "step":
            run.append(i)  # a step's own code block, also after the last step the chunk holds
        else:
            break
        i += 1
    if kind == "row":  # a Markdown table's |---| line says nothing
        run = [i for i in run if re.search(r"\w", pieces[i].text)]
    return run


def _run_start(pieces: tuple[Piece, ...], i: int) -> int:
    kind = pieces[i].kind
    while i > 0 and (
        pieces[i - 1].kind == kind or (kind == "step" and pieces[i - 1].kind == "code" and i > 1 and pieces[i - 2].kind == "step")
    ):
        i -= 1
    return i


def _lines(pieces: tuple[Piece, ...], indices: list[int]) -> int:
    return len({pieces[i].line for i in indices})


@dataclass(frozen=True)
class AnswerUnit:
    indices: tuple[int, ...]  # the chunk's pieces it quotes, in order
    cut: bool = False  # a list or table that goes on past ``MAX_ITEMS``: the cut mark follows it


def _steps(pieces: tuple[Piece, ...], i: int) -> AnswerUnit | None:
    start = _run_start(pieces, i)
    run = _run(pieces, start)
    if pieces[start].number != 1 or _lines(pieces, [j for j in run if pieces[j].kind == "step"]) > MAX_ITEMS:
        return None
    lead = [start - 1] if start > 0 and pieces[start - 1].kind == "prose" and announces(pieces[start - 1].text) else []
    return AnswerUnit((*lead, *run))


def _announced(pieces: tuple[Piece, ...], i: int) -> AnswerUnit | None:
    """What the announcement at ``i`` announces, bounded; None when its chunk ends before it."""
    j = i + 1
    if j >= len(pieces):
        return None
    following = pieces[j]
    if following.kind == "code":
        return AnswerUnit((j,))
    if following.kind == "step":
        return _steps(pieces, j)
    if following.kind in ("item", "row"):
        run = _run(pieces, j)
        lines = sorted({pieces[k].line for k in run})
        kept = [k for k in run if pieces[k].line in lines[:MAX_ITEMS]]
        return AnswerUnit(tuple(kept), cut=len(lines) > MAX_ITEMS)
    if announces(following.text):
        return None  # two announcements in a row: what they announce is further than one piece
    if _POINTS_AHEAD.match(pieces[i].text):
        # "Here is an example of X. It does Y." then the example: the sentence between comes along
        if j + 1 < len(pieces) and pieces[j + 1].kind == "code":
            return AnswerUnit((j, j + 1))
        return None  # the example it points at is not in this chunk
    return AnswerUnit((j,))


def looks_like_term(text: str) -> bool:
    """A short line without sentence punctuation: a term, a label or a heading nothing links to."""
    return 0 < len(text.split()) <= 6 and bool(re.search(r"\w", text)) and ":" not in text and not _TERM_END.search(text)


def _is_term(piece: Piece) -> bool:
    return piece.kind == "prose" and piece.first and piece.last and looks_like_term(piece.text)


def _antecedent(pieces: tuple[Piece, ...], i: int) -> list[int]:
    """What a sentence that refers back ("This means ...", "Otherwise, ...") refers to: the sentence
    before it, or the code block before it with the sentence that announces that block."""
    if i == 0 or pieces[i].kind != "prose" or not _REFERS_BACK.match(pieces[i].text):
        return []
    previous = pieces[i - 1]
    if previous.kind == "code":
        return [i - 2, i - 1] if i > 1 and pieces[i - 2].kind == "prose" and announces(pieces[i - 2].text) else [i - 1]
    return [i - 1] if previous.kind == "prose" else []


def _header(pieces: tuple[Piece, ...], i: int) -> list[int]:
    """The header row of the table row at ``i`` (its table's first row in the chunk), unless it is that row."""
    start = _run_start(pieces, i)
    header_line = pieces[start].line
    return [] if pieces[i].line == header_line else [j for j in _run(pieces, start) if pieces[j].line == header_line]


def _short_line(pieces: tuple[Piece, ...], i: int) -> tuple[int, ...] | None:
    """The pieces of the line (list item or paragraph) piece ``i`` is on, when it has 2 to
    ``MAX_ITEM_SENTENCES`` sentences and its last announces nothing; else None."""
    whole = tuple(j for j in range(len(pieces)) if pieces[j].line == pieces[i].line)
    if not 2 <= len(whole) <= MAX_ITEM_SENTENCES or announces(pieces[whole[-1]].text):
        return None
    return whole


def _names_a_term(piece: Piece) -> bool:
    """A definition's term line: a short line without sentence punctuation, or a code name and a colon
    (``json.dumps_kwargs``: as reST field and definition lists render)."""
    return _is_term(piece) or (piece.kind == "prose" and piece.first and piece.last and bool(_CODE_TERM.match(piece.text)))


def _definition(pieces: tuple[Piece, ...], i: int) -> AnswerUnit | None:
    """The short definition sentence ``i`` is part of, with the term line above it; else None."""
    whole = _short_line(pieces, i)
    if whole is None or whole[0] == 0 or not _names_a_term(pieces[whole[0] - 1]):
        return None
    return AnswerUnit((whole[0] - 1, *whole))


def unit_of(pieces: tuple[Piece, ...], i: int) -> AnswerUnit | None:
    """The unit that quoting piece ``i`` takes, or None when it cannot be quoted whole."""
    piece = pieces[i]
    if piece.kind == "step":
        return _steps(pieces, i)
    if piece.kind == "row":
        return AnswerUnit((*_header(pieces, i), i))
    if piece.kind == "item" and (item := _short_line(pieces, i)) is not None:
        return AnswerUnit(item)
    if piece.kind == "prose" and (definition := _definition(pieces, i)) is not None:
        return definition
    before = [i - 1] if piece.first and i > 0 and _is_term(pieces[i - 1]) else _antecedent(pieces, i)
    if (piece.last and announces(piece.text)) or _POINTS_AHEAD.match(piece.text):
        after = _announced(pieces, i)
        if after is None:
            return None
        return AnswerUnit((*before, i, *after.indices), after.cut)
    return AnswerUnit((*before, i))


def continued(announcement: Piece, following: tuple[Piece, ...]) -> AnswerUnit | None:
    """What an announcement its chunk ends on announces at the start of the section's next chunk
    (``following``, its pieces): indices into the next chunk, or None."""
    if not announcement.last or not announces(announcement.text) or not following:
        return None
    unit = _announced((announcement, *following), 0)
    return AnswerUnit(tuple(i - 1 for i in unit.indices), unit.cut) if unit else None


def bounded_code(code: str) -> str:
    """A fenced block of at most ``MAX_CODE_LINES`` lines; a longer one ends, inside its fence, with ``…``."""
    lines = code.split("\n")
    body = lines[1:-1]
    if len(body) <= MAX_CODE_LINES:
        return code
    return "\n".join([lines[0], *body[:MAX_CODE_LINES], CODE_CUT_MARK, lines[-1]])


def _is_entry(heading: str, anchor: str) -> bool:
    heading = heading.strip().strip("`")
    if not heading or not _IDENTIFIER.match(anchor):
        return False  # "9.5.9" under "#9.5.9" is a changelog's version, not an API
    if anchor in heading and ("." in anchor or "(" in heading):
        return True
    name = _SIGNATURE_PREFIX.sub("", heading).split("(")[0].strip()  # "classmethod datetime.fromisoformat(...)"
    return bool(name) and " " not in name and anchor.endswith(("." + name, "-" + name))


def entry_signature(chunk: Chunk) -> str | None:
    """The signature (or name) of the API entry the chunk belongs to, as the docs write it, after
    the signatures of the entries it is part of (a method's class), one a line; None for a chunk
    that is not part of an entry. An entry is a section whose heading holds its anchor
    (``gzip.open(filename, ...)`` under ``#gzip.open``) or whose heading's name is the last part of
    a qualified anchor (``elements()`` under ``#collections.Counter.elements``, ``Flask.run``
    under ``#flask.Flask.run``, ``html_theme`` under ``#confval-html_theme``). A heading that is
    its own slug (``nginx`` under ``#nginx``) is an ordinary section."""
    if not chunk.heading_path or not _is_entry(chunk.heading_path[-1], chunk.anchor):
        return None
    own = chunk.heading_path[-1].strip().strip("`")
    first = chunk.text.split("\n", 1)[0].strip()
    name = _SIGNATURE_PREFIX.sub("", own).split("(")[0].rsplit(".", 1)[-1]
    if first.startswith("`") and first.endswith("`") and name and name in first:
        return first.strip("`")  # reST: the signature as written in the text, before the description
    outer: list[str] = []  # published HTML: the enclosing entries' headings, which qualify the name
    for heading, anchor in zip(reversed(chunk.heading_path[:-1]), reversed(chunk.anchor_path[:-1])):
        if not _is_entry(heading, anchor):
            break
        outer.insert(0, heading.strip().strip("`"))
    return "\n".join([*outer, own])
