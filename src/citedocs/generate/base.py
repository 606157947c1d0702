"""The generation interface every backend implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..contract import HistoryTurn
from ..types import Chunk


class GenerationFault(RuntimeError):
    """The backend could not produce an answer (down, timed out, returned garbage)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass
class Generation:
    text: str  # raw model output, before validation
    backend: str
    model: str
    prompt_version: str
    usage: dict = field(default_factory=dict)
    raw: str | None = None  # what the model wrote when ``text`` was derived from it (structured JSON)


class GenerationStream:
    """A backend's output as it is produced: iterate for text deltas; once exhausted,
    ``generation`` holds the whole output with its usage, as ``generate`` would have returned it.

    ``whole_units``: every delta ends on a unit boundary (a structured answer hands over whole
    sentences), so a unit is settled as soon as it arrives rather than when the next one begins."""

    def __init__(self, deltas: Iterator[str], finish: Callable[[str], Generation], whole_units: bool = False) -> None:
        self._deltas = deltas
        self._finish = finish
        self.whole_units = whole_units
        self.generation: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        parts: list[str] = []
        for delta in self._deltas:
            parts.append(delta)
            yield delta
        self.generation = self._finish("".join(parts))


class Generator(Protocol):
    name: str
    model: str

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation: ...

    def probe(self) -> str | None:
        """Why this backend cannot answer right now (for /readyz), or None when it can."""
        ...

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        """A standalone version of a follow-up question, or None to use the deterministic fallback."""
        ...


class StreamingGenerator(Generator, Protocol):
    """A backend that can hand over its output while it is still being written."""

    def stream(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> GenerationStream: ...
