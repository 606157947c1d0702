"""Any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from .. import config
from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation, GenerationFault, GenerationStream
from .prompt import PROMPT_VERSION, answer_messages, rewrite_messages


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_tokens: int = 512

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
        )


class OpenAICompatibleGenerator:
    name = "openai"

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.model = config.model
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(base_url=config.base_url, headers=headers, timeout=config.timeout_s)

    @contextmanager
    def _faults_named(self) -> Iterator[None]:
        """Transport failures, as the refusal reasons a user can act on."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise GenerationFault("timeout", f"no answer from {self.config.base_url} within {self.config.timeout_s}s") from exc
        except httpx.HTTPError as exc:
            raise GenerationFault("unreachable", f"{self.config.base_url}: {exc}") from exc

    def _payload(self, messages: list[dict], max_tokens: int) -> dict:
        return {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}

    def _completion_text(self, body: object) -> str:
        try:
            text = body["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
        return text

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            raise GenerationFault("http_error", f"{self.config.base_url} answered HTTP {response.status_code}")

    def _chat(self, messages: list[dict], max_tokens: int) -> tuple[str, dict]:
        with self._faults_named():
            response = self._client.post("/chat/completions", json=self._payload(messages, max_tokens))
        self._check_status(response)
        return self._chat_body(response)

    def probe(self) -> str | None:
        try:
            response = self._client.get("/models", timeout=min(2.0, self.config.timeout_s))
        except httpx.HTTPError as exc:
            return f"{self.config.base_url} is unreachable ({type(exc).__name__})"
        if response.status_code >= 500 or response.status_code in (401, 403):
            return f"{self.config.base_url} answered HTTP {response.status_code}"
        return None

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        text, usage = self._chat(answer_messages(question, chunks, history), self.config.max_tokens)
        return Generation(text=text, backend=self.name, model=self.model, prompt_version=PROMPT_VERSION, usage=usage)

    def stream(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> GenerationStream:
        """The answer as the endpoint writes it (``stream: true``, Server-Sent Events)."""
        usage: dict = {}
        payload = self._payload(answer_messages(question, chunks, history), self.config.max_tokens)
        payload.update(stream=True, stream_options={"include_usage": True})

        def deltas() -> Iterator[str]:
            with self._faults_named(), self._client.stream("POST", "/chat/completions", json=payload) as response:
                self._check_status(response)
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    # an endpoint that ignores `stream` and answers with one completion
                    response.read()
                    text, whole_usage = self._chat_body(response)
                    usage.update(whole_usage)
                    yield text
                    return
                for line in response.iter_lines():
                    data = line.removeprefix("data:").strip() if line.startswith("data:") else None
                    if not data:
                        continue
                    if data == "[DONE]":
                        break
                    text, chunk_usage = self._stream_event(data)
                    usage.update(chunk_usage)
                    if text:
                        yield text

        def finish(text: str) -> Generation:
            return Generation(text=text, backend=self.name, model=self.model, prompt_version=PROMPT_VERSION, usage=usage)

        return GenerationStream(deltas(), finish)

    def _chat_body(self, response: httpx.Response) -> tuple[str, dict]:
        try:
            body = response.json()
        except ValueError as exc:
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
        return self._completion_text(body), (body.get("usage") or {}) if isinstance(body, dict) else {}

    def _stream_event(self, data: str) -> tuple[str, dict]:
        try:
            event = json.loads(data)
            choices = event.get("choices") or []
            text = (choices[0].get("delta") or {}).get("content") or "" if choices else ""
            if not isinstance(text, str):
                raise TypeError("delta content is not a string")
        except (ValueError, AttributeError, IndexError, TypeError) as exc:
            raise GenerationFault("garbage", f"malformed stream event from {self.config.base_url}: {exc}") from exc
        return text, event.get("usage") or {}

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        try:
            text, _ = self._chat(rewrite_messages(question, history), 64)
        except GenerationFault:
            return None
        text = text.strip().strip('"').splitlines()[0] if text.strip() else ""
        return text or None
