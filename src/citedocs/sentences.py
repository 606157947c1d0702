"""Splitting text into sentence-sized units, shared by the extractive backend and the validator.

A unit is a prose sentence, a list item, a table row or a whole fenced code block (code is never
split). Periods inside identifiers (``import.meta.env``), abbreviations and versions do not end a
sentence; citation markers that follow a sentence's final period stay with that sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^```[^\n]*\n.*?^```[ \t]*$", re.S | re.M)
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "approx.", "cf.")
# end of a sentence: . ! ? (possibly followed by closing quotes/brackets), then optional markers, then space
_SENTENCE_END = re.compile(r"""[.!?]+["')\]]*((?:\s*\[[^\[\]\n]+\])*)(?=\s+|$)""")


@dataclass(frozen=True)
class Unit:
    text: str
    is_code: bool = False


def _split_prose(line: str) -> list[str]:
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


def split_units(text: str) -> list[Unit]:
    units: list[Unit] = []
    position = 0
    for fence in _FENCE.finditer(text):
        units.extend(_prose_units(text[position : fence.start()]))
        units.append(Unit(fence.group(0).strip(), is_code=True))
        position = fence.end()
    units.extend(_prose_units(text[position:]))
    return units


def _prose_units(text: str) -> list[Unit]:
    units: list[Unit] = []
    for line in text.splitlines():
        line = line.strip().lstrip(">").strip()
        if not line:
            continue
        for sentence in _split_prose(line):
            units.append(Unit(sentence))
    return units


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
