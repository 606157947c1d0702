"""Any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp server, OpenAI)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from .. import config
from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation, GenerationFault
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

    def _chat(self, messages: list[dict], max_tokens: int) -> tuple[str, dict]:
        payload = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}
        try:
            response = self._client.post("/chat/completions", json=payload)
        except httpx.TimeoutException as exc:
            raise GenerationFault("timeout", f"no answer from {self.config.base_url} within {self.config.timeout_s}s") from exc
        except httpx.HTTPError as exc:
            raise GenerationFault("unreachable", f"{self.config.base_url}: {exc}") from exc
        if response.status_code != 200:
            raise GenerationFault("http_error", f"{self.config.base_url} answered HTTP {response.status_code}")
        try:
            body = response.json()
            text = body["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise GenerationFault("garbage", f"malformed chat completion from {self.config.base_url}: {exc}") from exc
        return text, body.get("usage") or {}

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

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        try:
            text, _ = self._chat(rewrite_messages(question, history), 64)
        except GenerationFault:
            return None
        text = text.strip().strip('"').splitlines()[0] if text.strip() else ""
        return text or None
