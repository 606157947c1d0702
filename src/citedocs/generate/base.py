"""The generation interface every backend implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

from ..contract import HistoryTurn
from ..types import Chunk


class GenerationFault(RuntimeError):
    """The backend could not produce an answer (down, timed out, returned garbage)."""

    def __init__(self, kind: str, detail: str, status: int | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status  # the HTTP status, when the endpoint answered one
        self.retry_after_s = retry_after_s  # what the endpoint's Retry-After header asked for
        self.spent: dict | None = None  # the (estimated) usage of what a stream wrote before it failed

    @property
    def transient(self) -> bool:
        """Worth another try later (rate limit, overload, timeout, connection), unlike a bad request."""
        return self.kind in ("timeout", "unreachable", "rate_limited", "interrupted") or (self.status is not None and self.status >= 500)


@dataclass
class Generation:
    text: str  # raw model output, before validation
    backend: str
    model: str
    prompt_version: str
    usage: dict = field(default_factory=dict)
    raw: str | None = None  # what the model wrote when ``text`` was derived from it (structured JSON)
    provider: str | None = None  # the configured provider that wrote it (a provider chain's entry name)
    attempts: list[dict] = field(default_factory=list)  # the providers tried before it, and why each failed


@dataclass(frozen=True)
class Restart:
    """Handed over in a stream instead of text: the provider writing the answer died part-way, and the
    answer starts again from nothing on ``provider`` (everything handed over before is void)."""

    failed: str
    provider: str
    reason: str


class UsageMeter:
    """The tokens of every LLM call made for one answer, by provider and model (see ``metered``)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def add(self, provider: str, model: str, usage: dict, purpose: str) -> None:
        self.calls.append({"provider": provider, "model": model, "purpose": purpose, **token_counts(usage)})


_meter: ContextVar[UsageMeter | None] = ContextVar("citedocs_usage_meter", default=None)


@contextmanager
def metered(meter: UsageMeter) -> Iterator[None]:
    """Count the LLM calls made (synchronously) inside the block into ``meter``."""
    token = _meter.set(meter)
    try:
        yield
    finally:
        _meter.reset(token)


def record_usage(provider: str, model: str, usage: dict, purpose: str) -> None:
    meter = _meter.get()
    if meter is not None:
        meter.add(provider, model, usage, purpose)


def estimated_tokens(text: str) -> int:
    """A token count for a call whose endpoint reported none: ~4 characters a token for English
    (OpenAI's rule of thumb), and at least one token a character for scripts without spaces."""
    wide = sum(1 for ch in text if ord(ch) > 0x2E7F)  # CJK and beyond: about a token each
    return max(1, wide + (len(text) - wide + 3) // 4) if text else 0


def token_counts(usage: dict) -> dict:
    """prompt_tokens, completion_tokens and whether they were estimated, from a usage record."""
    return {
        "prompt_tokens": int(usage.get("prompt_tokens") or 0),
        "completion_tokens": int(usage.get("completion_tokens") or 0),
        "estimated": bool(usage.get("estimated")),
    }


class GenerationStream:
    """A backend's output as it is produced: iterate for text deltas; once exhausted,
    ``generation`` holds the whole output with its usage, as ``generate`` would have returned it.

    ``whole_units``: every delta ends on a unit boundary (a structured answer hands over whole
    sentences), so a unit is settled as soon as it arrives rather than when the next one begins."""

    def __init__(self, deltas: Iterator[str | Restart], finish: Callable[[str], Generation], whole_units: bool = False) -> None:
        self._deltas = deltas
        self._finish = finish
        self.whole_units = whole_units
        self.generation: Generation | None = None

    def __iter__(self) -> Iterator[str | Restart]:
        parts: list[str] = []
        for delta in self._deltas:
            if isinstance(delta, Restart):
                parts.clear()
            else:
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
