"""Any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI) — and the local
backend, which is llama.cpp's own server run by citedocs (``local.py``): one client for all of them.

When the endpoint enforces a JSON schema (``structured`` setting; ``auto`` probes the endpoint once),
the answer request carries the schema of ``structured.py`` and the streamed JSON is turned into
marker text sentence by sentence; otherwise the plain-text marker protocol is used. Either way the
text goes through the same validator.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

import httpx

from .. import config
from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation, GenerationFault, GenerationStream, estimated_tokens, record_usage
from .prompt import NO_ANSWER, PROMPT_VERSION, STRUCTURED_PROMPT_VERSION, answer_messages, rewrite_messages
from .structured import StructuredOutputError, StructuredReader, answer_schema, request_fields

# A probe schema whose only valid output is {"ok": "constrained"}: a model that is not constrained
# will not write it in answer to "Say hello."
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "string", "enum": ["constrained"]}},
    "required": ["ok"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_tokens: int = 512
    structured: str = "auto"  # auto | llamacpp | openai | ollama | off (see structured.request_fields)
    name: str = "openai"  # the provider's name in traces and insights

    @classmethod
    def from_env(cls) -> EndpointConfig | None:
        base_url = config.setting("llm_base_url")
        if not base_url:
            return None
        return cls(
            base_url=base_url.rstrip("/"),
            model=config.setting("llm_model"),
            api_key=config.setting("llm_api_key") or os.environ.get("OPENAI_API_KEY"),
            timeout_s=config.setting("llm_timeout"),
            structured=config.setting("llm_structured"),
        )


class OpenAICompatibleGenerator:
    name = "openai"

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.model = config.model
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(base_url=config.base_url, headers=headers, timeout=config.timeout_s)
        self._flavour: str | None = None if config.structured == "auto" else config.structured
        self._flavour_lock = threading.Lock()

    @contextmanager
    def _faults_named(self) -> Iterator[None]:
        """Transport failures, as the refusal reasons a user can act on."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise GenerationFault("timeout", f"no answer from {self.config.base_url} within {self.config.timeout_s}s") from exc
        except httpx.HTTPError as exc:
            raise GenerationFault("unreachable", f"{self.config.base_url}: {exc}") from exc

    def _payload(self, messages: list[dict], max_tokens: int, extra: dict | None = None) -> dict:
        payload = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}
        if self._flavour == "llamacpp":
            payload["cache_prompt"] = True  # reuse the KV cache of the longest common prompt prefix
        return payload | (extra or {})

    def _completion_text(self, body: object) -> str:
        try:
            text = body["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
        return text

    def _check_status(self, response: httpx.Response) -> None:
        code = response.status_code
        if code == 200:
            return
        wait = retry_after_s(response.headers.get("retry-after"))
        kind = "rate_limited" if code == 429 else "http_error"
        asked = f" (Retry-After {wait:g}s)" if wait is not None else ""
        raise GenerationFault(kind, f"{self.config.base_url} answered HTTP {code}{asked}", code, wait)

    def chat(self, messages: list[dict], max_tokens: int, extra: dict | None = None) -> tuple[str, dict]:
        """One non-streamed completion: its text and usage (``extra`` fields are added to the body)."""
        body = self.chat_body(messages, max_tokens, extra)
        return self._completion_text(body), (body.get("usage") or {})

    def chat_body(self, messages: list[dict], max_tokens: int, extra: dict | None = None) -> dict:
        """The whole completion body (for callers that read ``logprobs``)."""
        with self._faults_named():
            response = self._client.post("/chat/completions", json=self._payload(messages, max_tokens, extra))
        self._check_status(response)
        try:
            body = response.json()
        except ValueError as exc:
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
        if not isinstance(body, dict):
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: not an object")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        if not usage.get("completion_tokens"):
            try:
                written = self._completion_text(body)
            except GenerationFault:
                written = ""
            usage = self._estimated_usage(messages, written)
        record_usage(self.config.name, self.config.model, usage, "judge" if max_tokens <= 1 else "chat")
        return body

    @staticmethod
    def _estimated_usage(messages: list[dict], completion: str) -> dict:
        """The usage of a call the endpoint reported none for (``estimated``: not the endpoint's count)."""
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        return {"prompt_tokens": estimated_tokens(prompt), "completion_tokens": estimated_tokens(completion), "estimated": True}

    def probe(self) -> str | None:
        try:
            response = self._client.get("/models", timeout=min(2.0, self.config.timeout_s))
        except httpx.HTTPError as exc:
            return f"{self.config.base_url} is unreachable ({type(exc).__name__})"
        if response.status_code >= 500 or response.status_code in (401, 403):
            return f"{self.config.base_url} answered HTTP {response.status_code}"
        return None

    # structured output ---------------------------------------------------------------------------
    def flavour(self) -> str:
        """The structured-output request shape this endpoint honours, probed once when ``auto``."""
        with self._flavour_lock:
            if self._flavour is None:
                self._flavour = self._detect_flavour()
            return self._flavour

    def _detect_flavour(self) -> str:
        """llama.cpp says who it is in ``/models``; otherwise ask for a schema-only answer in each
        request shape and keep the first the endpoint enforced. Transport faults propagate (a
        server that is down says nothing about what it supports), so nothing is cached then."""
        with self._faults_named():
            response = self._client.get("/models")
        if response.status_code == 200:
            try:
                owners = {m.get("owned_by") for m in response.json().get("data", []) if isinstance(m, dict)}
            except (ValueError, AttributeError):
                owners = set()
            if "llamacpp" in owners:
                return "llamacpp"
        for flavour in ("openai", "ollama"):
            try:
                text, _ = self.chat([{"role": "user", "content": "Say hello."}], 16, request_fields(flavour, _PROBE_SCHEMA))
            except GenerationFault as fault:
                if fault.kind in ("timeout", "unreachable"):
                    raise
                continue  # e.g. HTTP 400 for a field the endpoint does not know
            try:
                if json.loads(text) == {"ok": "constrained"}:
                    return flavour
            except ValueError:
                continue
        return "off"

    def _answer_request(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> tuple[dict, str]:
        flavour = self.flavour()
        if flavour == "off":
            return self._payload(answer_messages(question, chunks, history), self.config.max_tokens), PROMPT_VERSION
        messages = answer_messages(question, chunks, history, version=STRUCTURED_PROMPT_VERSION)
        extra = request_fields(flavour, answer_schema([c.id for c in chunks]))
        return self._payload(messages, self.config.max_tokens, extra), f"{STRUCTURED_PROMPT_VERSION}+{flavour}"

    def _generation(self, text: str, raw: str | None, version: str, usage: dict) -> Generation:
        return Generation(
            text=text, backend=self.name, model=self.model, prompt_version=version, usage=usage, raw=raw
        )

    # answers ------------------------------------------------------------------------------------
    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        stream = self.stream(question, chunks, history)
        for _ in stream:
            pass
        return stream.generation

    def stream(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> GenerationStream:
        """The answer as the endpoint writes it (``stream: true``, Server-Sent Events).

        In structured mode each delta handed on is one whole sentence in the marker protocol,
        released when its JSON object closes; JSON that does not parse at the end is a
        ``GenerationFault`` (a refusal), whatever came before it.
        """
        usage: dict = {}
        payload, version = self._answer_request(question, chunks, history)
        payload.update(stream=True, stream_options={"include_usage": True})
        structured = version != PROMPT_VERSION
        reader = StructuredReader()
        received: list[str] = []

        def raw_deltas() -> Iterator[str]:
            try:
                yield from relayed()
            except GenerationFault as fault:
                if received:  # the provider failed part-way: the prompt and what it wrote were spent all the same
                    fault.spent = self._estimated_usage(payload["messages"], "".join(received))
                raise

        def relayed() -> Iterator[str]:
            with self._faults_named(), self._client.stream("POST", "/chat/completions", json=payload) as response:
                self._check_status(response)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # an endpoint that ignores `stream` and answers with one completion
                    response.read()
                    try:
                        body = response.json()
                    except ValueError as exc:
                        raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
                    usage.update(body.get("usage") or {} if isinstance(body, dict) else {})
                    yield self._completion_text(body)
                    return
                finished = False
                for line in response.iter_lines():
                    data = line.removeprefix("data:").strip() if line.startswith("data:") else None
                    if not data:
                        continue
                    if data == "[DONE]":
                        finished = True
                        break
                    text, event_usage, done = self._stream_event(data)
                    usage.update(event_usage)
                    finished = finished or done
                    if text:
                        received.append(text)
                        yield text
                if not finished:  # the connection closed mid-answer: what came is not the whole answer
                    raise GenerationFault("interrupted", f"the stream from {self.config.base_url} ended before the answer did")

        def deltas() -> Iterator[str]:
            if not structured:
                yield from raw_deltas()
                return
            source = raw_deltas()
            try:
                for delta in source:
                    yield from reader.feed(delta)
                    reason = reader.declined()
                    if reason:  # the rest would be discarded: stop reading, which stops the server generating
                        usage["stopped_early"] = "declined"
                        yield f"{NO_ANSWER}: {reason}"
                        return
            finally:
                source.close()
            try:
                tail = reader.finish()
            except StructuredOutputError as exc:
                fault = GenerationFault("garbage", str(exc))  # e.g. cut short by max_tokens: written, and billed, all the same
                fault.spent = dict(usage) if usage.get("completion_tokens") else self._estimated_usage(payload["messages"], reader.raw)
                raise fault from exc
            if tail:
                yield tail

        def finish(text: str) -> Generation:
            usage.pop("prompt_tokens_details", None)
            if not usage.get("completion_tokens"):  # the endpoint sent no usage event
                usage.update(self._estimated_usage(payload["messages"], reader.raw if structured else text))
            return self._generation(text, reader.raw if structured else None, version, usage)

        return GenerationStream(deltas(), finish, whole_units=structured)

    def _stream_event(self, data: str) -> tuple[str, dict, bool]:
        """The event's text, its usage, and whether it ends the answer (a ``finish_reason``)."""
        try:
            event = json.loads(data)
            choices = event.get("choices") or []
            text = (choices[0].get("delta") or {}).get("content") or "" if choices else ""
            done = bool(choices and choices[0].get("finish_reason"))
            if not isinstance(text, str):
                raise TypeError("delta content is not a string")
        except (ValueError, AttributeError, IndexError, TypeError) as exc:
            raise GenerationFault("garbage", f"malformed stream event from {self.config.base_url}: {exc}") from exc
        usage = dict(event.get("usage") or {})
        timings = event.get("timings") or {}  # llama.cpp's own per-request timings
        for key in ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n"):
            if key in timings:
                usage[key] = round(float(timings[key]), 1)
        return text, usage, done

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        try:
            text, _ = self.chat(rewrite_messages(question, history), 64)
        except GenerationFault:
            return None
        text = text.strip().strip('"').splitlines()[0] if text.strip() else ""
        return text or None


def retry_after_s(header: str | None) -> float | None:
    """Seconds a Retry-After header asks to wait (a number of seconds or an HTTP date), or None."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, (moment - datetime.now(timezone.utc)).total_seconds())
