"""Several LLM providers in order (setting ``llm_providers``): the next one answers when one fails.

Each provider is tried with its own timeout; a transient failure (HTTP 429 or 5xx, a timeout, a lost
connection) is retried with exponential back-off, waiting what a ``Retry-After`` header asks when
it asks for no more than ``llm_max_retry_wait_s`` (a provider that asks for longer is skipped for
that long instead). A circuit breaker per provider skips one that failed ``llm_breaker_failures``
calls in a row; after ``llm_breaker_cooldown_s`` one request is let through as a probe (half open),
after a cheap ``GET /models`` check, and its success closes the breaker again.

A stream that dies after it has handed over part of an answer is not retried on the same
provider: the chain hands over a ``Restart`` and the answer starts again from nothing on the next
provider (the pipeline voids what it had shown, and tells the client). A provider of kind
``extractive`` never fails, so listed last it makes every answer end as an answer or an honest
refusal, never an error.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from .. import config
from ..config import ProviderSpec
from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation, GenerationFault, GenerationStream, Generator, Restart
from .openai_compat import EndpointConfig, OpenAICompatibleGenerator

log = logging.getLogger("citedocs.providers")

BACKOFF_BASE_S = 0.25  # first retry's wait; doubled each time, with up to 50% jitter


@dataclass
class Breaker:
    """Closed (calls go through), open (skipped until ``open_until``), half open (one probe call)."""

    failures_to_open: int
    cooldown_s: float
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    open_until: float | None = None
    probing: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def state(self) -> str:
        if self.open_until is None:
            return "closed"
        return "half_open" if self.probing or self.clock() >= self.open_until else "open"

    def admit(self) -> str | None:
        """``closed`` or ``probe`` when a call may go through now, None when the provider is skipped."""
        with self._lock:
            if self.open_until is None:
                return "closed"
            if self.probing or self.clock() < self.open_until:
                return None
            self.probing = True
            return "probe"

    def succeeded(self) -> None:
        with self._lock:
            self.failures, self.open_until, self.probing = 0, None, False

    def failed(self, hold_s: float | None = None) -> None:
        """One more failure; ``hold_s`` (a long Retry-After) opens the breaker at once for that long."""
        with self._lock:
            self.failures += 1
            if self.probing or self.failures >= self.failures_to_open or hold_s is not None:
                self.open_until = self.clock() + (self.cooldown_s if hold_s is None else hold_s)
            self.probing = False


class Provider:
    """One configured provider: its generator, its retry policy and its breaker."""

    def __init__(self, spec: ProviderSpec, generator: Generator, breaker: Breaker, max_wait_s: float) -> None:
        self.spec = spec
        self.name = spec.name
        self.generator = generator
        self.breaker = breaker
        self.max_wait_s = max_wait_s

    @property
    def never_fails(self) -> bool:
        return self.spec.kind == "extractive"

    def wait_before_retry(self, fault: GenerationFault, attempt: int) -> float | None:
        """Seconds to wait before try ``attempt + 1``, or None to give up on this provider now."""
        if not fault.transient or attempt >= self.spec.retries:
            return None
        if fault.retry_after_s is not None:
            return fault.retry_after_s if fault.retry_after_s <= self.max_wait_s else None
        return min(self.max_wait_s, BACKOFF_BASE_S * 2**attempt * (1 + random.random() / 2))

    def admitted(self) -> bool:
        """Whether a call may go to this provider now; a half-open breaker's probe checks ``/models`` first."""
        admission = self.breaker.admit()
        if admission == "probe":
            problem = self.generator.probe()
            if problem:
                self.breaker.failed()
                log.warning("provider still down", extra={"provider": self.name, "problem": problem})
                return False
        return admission is not None

    def give_up(self, fault: GenerationFault) -> None:
        hold = fault.retry_after_s if fault.retry_after_s is not None and fault.retry_after_s > self.max_wait_s else None
        self.breaker.failed(hold)


class ProviderChain:
    """The providers of ``llm_providers`` as one generator (and one chat client for the grader,
    the claim verifier and query rewriting), each call going to the first provider that answers."""

    name = "providers"

    def __init__(self, providers: Sequence[Provider], sleep: Callable[[float], None] = time.sleep) -> None:
        if not providers:
            raise ValueError("a provider chain needs at least one provider")
        self.providers = list(providers)
        self.sleep = sleep
        first = self.providers[0]
        self.model = getattr(first.generator, "model", first.spec.model)

    def routed(self, route: str) -> list[Provider]:
        """The providers for ``route`` (routing.py) first, in order, then the other route's as fallbacks;
        an extractive provider stays last."""
        llms = [p for p in self.providers if not p.never_fails]
        chosen = [p for p in llms if p.spec.route in (route, "any")]
        return chosen + [p for p in llms if p not in chosen] + [p for p in self.providers if p.never_fails]

    # the chat client's interface (grading, verification, rewriting, query expansion) -----------
    def _llm_providers(self) -> list[Provider]:
        return [p for p in self.providers if isinstance(p.generator, OpenAICompatibleGenerator)]

    def _call(self, providers: Sequence[Provider], call: Callable[[Provider], object]) -> tuple[object, Provider, list[dict]]:
        attempts: list[dict] = []
        last: GenerationFault | None = None
        for provider in providers:
            if not provider.admitted():
                attempts.append({"provider": provider.name, "outcome": "skipped", "detail": "circuit open"})
                continue
            attempt = 0
            while True:
                started = time.perf_counter()
                try:
                    result = call(provider)
                except GenerationFault as fault:
                    last = fault
                    attempts.append(_failed(provider, fault, started))
                    wait = provider.wait_before_retry(fault, attempt)
                    if wait is None:
                        provider.give_up(fault)
                        break
                    self.sleep(wait)
                    attempt += 1
                    continue
                provider.breaker.succeeded()
                return result, provider, attempts
        raise last or GenerationFault("unreachable", "every provider is skipped: their circuits are open")

    def chat_body(self, messages: list[dict], max_tokens: int, extra: dict | None = None) -> dict:
        body, _, _ = self._call(self._llm_providers(), lambda p: p.generator.chat_body(messages, max_tokens, extra))
        return body

    def chat(self, messages: list[dict], max_tokens: int, extra: dict | None = None) -> tuple[str, dict]:
        result, _, _ = self._call(self._llm_providers(), lambda p: p.generator.chat(messages, max_tokens, extra))
        return result

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        for provider in self._llm_providers():
            if provider.admitted():
                rewritten = provider.generator.rewrite_query(question, history)
                if rewritten:
                    return rewritten
        return None

    def probe(self) -> str | None:
        """Ready while any provider can answer (an extractive one always can)."""
        problems = []
        for provider in self.providers:
            problem = provider.generator.probe()
            if problem is None:
                return None
            problems.append(f"{provider.name}: {problem}")
        return "; ".join(problems)

    def close(self) -> None:
        for provider in self.providers:
            if hasattr(provider.generator, "close"):
                provider.generator.close()

    # answers --------------------------------------------------------------------------------------
    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        stream = self.stream(question, chunks, history)
        for _ in stream:
            pass
        return stream.generation

    def stream(
        self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn], providers: Sequence[Provider] | None = None
    ) -> GenerationStream:
        """The answer of the first provider that writes one whole; ``providers``: these, in order
        (the router's choice), instead of all."""
        chosen = list(providers) if providers is not None else self.providers
        attempts: list[dict] = []
        outcome: dict = {}

        def deltas() -> Iterator[str | Restart]:
            handed_over_by: Provider | None = None  # the provider whose partial answer the consumer holds
            last: GenerationFault | None = None
            for provider in chosen:
                if not provider.admitted():
                    attempts.append({"provider": provider.name, "outcome": "skipped", "detail": "circuit open"})
                    continue
                if handed_over_by is not None:
                    yield Restart(handed_over_by.name, provider.name, f"{last.kind}: {last.detail}")
                    handed_over_by = None
                attempt = 0
                while True:
                    started = time.perf_counter()
                    inner = _provider_stream(provider, question, chunks, history)
                    outcome["whole_units"] = inner.whole_units
                    wrote = False
                    try:
                        for delta in inner:
                            wrote = True
                            yield delta
                    except GenerationFault as fault:
                        last = fault
                        attempts.append(_failed(provider, fault, started, mid_stream=wrote))
                        wait = None if wrote else provider.wait_before_retry(fault, attempt)
                        if wait is None:
                            provider.give_up(fault)
                            handed_over_by = provider if wrote else None
                            break
                        self.sleep(wait)
                        attempt += 1
                        continue
                    provider.breaker.succeeded()
                    generation = inner.generation
                    generation.provider, generation.attempts = provider.name, attempts
                    outcome["generation"] = generation
                    return
            if handed_over_by is not None:  # the last provider died part-way: nothing it wrote stands
                yield Restart(handed_over_by.name, "", f"{last.kind}: {last.detail}")
            raise last or GenerationFault("unreachable", "every provider is skipped: their circuits are open")

        def finish(_text: str) -> Generation:
            return outcome["generation"]

        stream = _ChainStream(deltas(), finish, outcome)
        stream.attempts = attempts  # read by the pipeline when every provider failed too
        return stream


class _ChainStream(GenerationStream):
    """A chain's stream: whether deltas are whole units depends on the provider writing now."""

    def __init__(self, deltas, finish, outcome: dict) -> None:
        super().__init__(deltas, finish)
        self._outcome = outcome

    @property
    def whole_units(self) -> bool:
        return bool(self._outcome.get("whole_units"))

    @whole_units.setter
    def whole_units(self, _value: bool) -> None:  # set by GenerationStream.__init__; the provider decides
        pass


def _provider_stream(provider: Provider, question: str, chunks, history) -> GenerationStream:
    generator = provider.generator
    if hasattr(generator, "stream"):
        return generator.stream(question, chunks, history)
    holder: dict = {}

    def whole() -> Iterator[str]:
        holder["generation"] = generator.generate(question, chunks, history)
        yield holder["generation"].text

    return GenerationStream(whole(), lambda _text: holder["generation"])


def _failed(provider: Provider, fault: GenerationFault, started: float, mid_stream: bool = False) -> dict:
    """An attempt's record; one that failed after the provider began writing carries the tokens it
    spent (``usage``: estimated when it died, as a dead stream sends no usage), which the answer's
    accounting counts against that provider."""
    attempt = {
        "provider": provider.name,
        "outcome": "died_mid_stream" if mid_stream else "failed",
        "detail": f"{fault.kind}: {fault.detail}",
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }
    if fault.spent:
        attempt.update(model=getattr(provider.generator, "model", provider.spec.model), usage=fault.spent)
    return attempt


def endpoint_for(spec: ProviderSpec) -> EndpointConfig:
    """An openai provider's endpoint, its key read from the environment variable it names."""
    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    if spec.api_key_env and not key:
        raise config.ConfigError(
            f"llm_providers: provider {spec.name!r} reads its key from ${spec.api_key_env}, which is not set; export it"
        )
    return EndpointConfig(
        base_url=str(spec.base_url).rstrip("/"),
        model=spec.model,
        api_key=key,
        timeout_s=float(spec.timeout_s or config.setting("llm_timeout")),
        structured=spec.structured,
        name=spec.name,
        **({"max_tokens": spec.max_tokens} if spec.max_tokens else {}),
    )


def build_chain(specs: Sequence[ProviderSpec], make: Callable[[ProviderSpec], Generator]) -> ProviderChain:
    """The chain of ``specs``; ``make`` builds a provider's generator (select.py knows the kinds)."""
    failures, cooldown = config.setting("llm_breaker_failures"), config.setting("llm_breaker_cooldown_s")
    max_wait = config.setting("llm_max_retry_wait_s")
    return ProviderChain([Provider(spec, make(spec), Breaker(failures, cooldown), max_wait) for spec in specs])
