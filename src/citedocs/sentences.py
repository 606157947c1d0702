"""Splitting text into sentence-sized units, shared by the extractive backend and the validator.

A unit is a prose sentence, a list item, a table row or a whole fenced code block (code is never
split). Periods inside identifiers (``import.meta.env``), abbreviations and versions do not end a
sentence; citation markers that follow a sentence's final period stay with that sentence.

Questions are split differently (``question_sentences``, ``asked_clauses``): a user's question is
one line of chat whose sentences state their situation or ask, and one sentence may ask two things.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import query_terms

_FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.S | re.M)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "cf.")
# end of a sentence: . ! ? (possibly followed by closing quotes/brackets), then optional markers, then space
_SENTENCE_END = re.compile(r"""[.!?]+["')\]]*((?:\s*\[[^\[\]\n]+\])*)(?=\s+|$)""")


# Where a quote was cut short: a line of its own after a list or table (cited like the unit it
# follows), or the last line inside a code block (generate/units.py; the validator knows both).
CUT_MARK = "(…)"
CODE_CUT_MARK = "…"


@dataclass(frozen=True)
class Unit:
    text: str
    is_code: bool = False


def split_sentences(line: str) -> list[str]:
    """One prose line cut into sentences."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        end = match.end()
        candidate = line[start:end]
        stripped = candidate.rstrip()
        if any(stripped.lower().endswith(a) for a in _ABBREVIATIONS):
            continue
        if candidate.strip():
            sentences.append(candidate.strip())
        start = end
    rest = line[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def split_lines(text: str) -> list[tuple[str, bool]]:
    """The text's blocks in order, as ``split_units`` reads them: each fenced code block whole
    (``True``), each non-empty prose line stripped of indentation and quote marks (``False``)."""
    out: list[tuple[str, bool]] = []
    position = 0
    for fence in [*_FENCE.finditer(text), None]:
        prose = text[position : fence.start() if fence else len(text)]
        for line in prose.splitlines():
            line = line.strip().lstrip(">").strip()
            if line:
                out.append((line, False))
        if fence:
            out.append((fence.group(0).strip(), True))
            position = fence.end()
    return out


def split_units(text: str) -> list[Unit]:
    return [
        Unit(block, is_code=True) if is_code else Unit(sentence)
        for block, is_code in split_lines(text)
        for sentence in ([block] if is_code else split_sentences(block))
    ]


_FENCE_LINE = re.compile(r"^```", re.M)
_BRACKETED = re.compile(r"\[[^\]\n]*(?:\]|$)")


def settled_units(partial: str) -> list[Unit]:
    """The units of a still-growing text that more text can no longer change.

    A unit is settled once a later unit with real content has begun: until then its citation
    markers may still be arriving (``... page load. [guides/`` ...). Text from an unclosed code
    fence on is left for later, since a fence is only a unit once it closes.
    """
    fences = [m.start() for m in _FENCE_LINE.finditer(partial)]
    if len(fences) % 2:
        partial = partial[: fences[-1]]
    units = split_units(partial)
    if units and not units[-1].is_code and not re.search(r"\w", _BRACKETED.sub("", units[-1].text)):
        units.pop()  # only (part of) a marker so far: the unit before it may still gain it
    return units[:-1]


_QUESTION_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")
# where one asking sentence starts asking a second thing: ", and how ...", ", or ...", "; ..."
_CLAUSE_BREAK = re.compile(r",?\s+and\s+then\s+|,\s+(?:and|or|but)\s+|;\s+", re.IGNORECASE)


def _mask_code(text: str) -> str:
    """``text`` with its backticked spans blanked (same length), so no split happens inside code."""
    return re.sub(r"`[^`]*`", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)


def _clauses(sentence: str, min_terms: int) -> list[str]:
    """The sentence cut at each clause break; a piece too short to ask anything ("or not?") stays,
    as written, with the piece before it."""
    spans: list[list[int]] = []
    start = 0
    for end, resume in [*((m.start(), m.end()) for m in _CLAUSE_BREAK.finditer(_mask_code(sentence))), (len(sentence), 0)]:
        if spans and len(query_terms(sentence[start:end])) < min_terms:
            spans[-1][1] = end
        else:
            spans.append([start, end])
        start = resume
    return [sentence[a:b].strip() for a, b in spans if sentence[a:b].strip()]


def question_sentences(question: str) -> list[str]:
    """A question's sentences: each ends at ``.``, ``!`` or ``?`` before a capital ("i.e. the" goes
    on), never inside backticks."""
    masked = _mask_code(question)
    ends = [m.end() for m in _QUESTION_SENTENCE_END.finditer(masked)]
    spans = zip([0, *ends], [*ends, len(question)])
    return [question[a:b].strip() for a, b in spans if question[a:b].strip()]


def asked_sentences(question: str) -> list[str]:
    """The sentences that ask (end in ``?``), or the whole question when none does."""
    asking = [s for s in question_sentences(question) if s.endswith("?")]
    return asking or [question.strip()]


def asked_clauses(question: str, min_terms: int = 3) -> list[str]:
    """The separate things a question asks: its asking sentences, each cut where a coordinated clause
    starts ("How do I start it, and how do I stop it?"). A clause with fewer than ``min_terms``
    search terms ("or is it?") stays with the one before it. One clause: the question asks one thing."""
    return [clause for sentence in asked_sentences(question) for clause in _clauses(sentence, min_terms)]
