"""Citation markers: ``[chunk-id]``, ``[id-a, id-b]``, ``[id-a] [id-b]``.

Near-miss formats (``[1]``, ``[[id]]``, ``(id)``, ``[source: id]``, an id without its ``/n``) are
not citations: they are removed from the text and recorded, so a half-formatted marker can neither
reach the user nor count as support.

The marker syntax is part of the answer contract: generators write markers (``with_markers``), the
validator and the evaluation read them (``parse_markers``, ``without_citations``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CHUNK_ID = re.compile(r"^[^\s#\[\](),;]+#[^\s#\[\](),;/]*/\d+$")
_DOUBLE = re.compile(r"\[\[([^\[\]\n]*)\]\]")
_GROUP = re.compile(r"\[([^\[\]\n]+)\](?!\()")  # not a Markdown link [text](url)
_PAREN_ID = re.compile(r"[(（【]\s*[^\s()（）【】]*#[^\s()（）【】]*\s*[)）】]")
_SPLIT = re.compile(r"\s*[,;]\s*|\s+")


@dataclass
class ParsedMarkers:
    text: str  # the sentence with every marker (valid or near-miss) removed
    ids: list[str] = field(default_factory=list)  # well-formed ids, in order, deduplicated
    malformed: list[str] = field(default_factory=list)


def _looks_like_citation(inner: str) -> bool:
    inner = inner.strip()
    return bool(
        "#" in inner
        or re.fullmatch(r"\d+(\s*[,;]\s*\d+)*", inner)
        or re.match(r"(source|chunk|ref|doc|cite)s?\b", inner, re.I)
    )


def _citation_ids(inner: str) -> list[str] | None:
    """The ids of a bracket's contents when every part is a well-formed chunk id, else None."""
    parts = [p for p in _SPLIT.split(inner.strip()) if p]
    return parts if parts and all(CHUNK_ID.match(p) for p in parts) else None


def parse_markers(sentence: str) -> ParsedMarkers:
    parsed = ParsedMarkers(text=sentence)

    def near_miss(match: re.Match) -> str:
        parsed.malformed.append(match.group(0))
        return ""

    text = _DOUBLE.sub(near_miss, sentence)
    text = _PAREN_ID.sub(near_miss, text)

    def group(match: re.Match) -> str:
        inner = match.group(1).strip()
        parts = _citation_ids(inner)
        if parts:
            for part in parts:
                if part not in parsed.ids:
                    parsed.ids.append(part)
            return ""
        if _looks_like_citation(inner):
            parsed.malformed.append(match.group(0))
            return ""
        return match.group(0)  # ordinary bracketed text, e.g. "[Deprecated]"

    text = _GROUP.sub(group, text)
    text = re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", text)
    parsed.text = re.sub(r"[ \t]{2,}", " ", text).strip()
    return parsed


def without_citations(text: str) -> str:
    """What a reader reads of an answer: its well-formed citation markers removed, everything else
    (code, ordinary bracketed text) left as it is. An id names its section (``api#bytecode-cache/1``),
    so a keyword check over the raw answer would credit an answer for a word only its citation holds."""
    return _GROUP.sub(lambda match: "" if _citation_ids(match.group(1)) else match.group(0), text)


def with_markers(text: str, ids: list[str]) -> str:
    """Put ``[id]`` markers before the sentence's final punctuation."""
    markers = " ".join(f"[{i}]" for i in ids)
    match = re.search(r"([.!?:]+)$", text)
    if match and not text.endswith("```"):
        return f"{text[: match.start()]} {markers}{match.group(1)}"
    return f"{text} {markers}"
