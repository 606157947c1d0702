"""The answer prompts (versioned in prompts/) and the follow-up rewrite prompt.

Structured answers (``cited_json_v3``) put the chunks in the system prompt (``context_v1``) and the
question with its answer rules last, so every request about one answer (grading each chunk, then
the answer) begins with the same messages and differs only in its last one. The plain-text marker
protocol (``cite_first_v1``) keeps its rules in the system prompt, before the chunks."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from importlib.resources import files

from ..contract import HistoryTurn
from ..types import Chunk

PROMPT_VERSION = "cite_first_v1"  # plain-text marker protocol
STRUCTURED_PROMPT_VERSION = "cited_json_v3"  # JSON answer under a schema (see structured.py)
CONTEXT_VERSION = "context_v1"  # the structured answer's system prompt: the chunks as data
NO_ANSWER = "NO_ANSWER"

REWRITE_INSTRUCTIONS = (
    "Rewrite the user's last question as one standalone search query that names its topic, using the "
    "conversation for context. Reply with the query only."
)


def _template(version: str) -> str:
    return (files("citedocs.generate") / "prompts" / f"{version}.txt").read_text(encoding="utf-8")


def render_chunks(chunks: Sequence[Chunk]) -> str:
    blocks = []
    for chunk in chunks:
        blocks.append(
            f'<chunk id="{escape(chunk.id)}" title="{escape(chunk.title)}" section="{escape(chunk.section)}" '
            f'url="{escape(chunk.url)}">\n{chunk.text}\n</chunk>'
        )
    return "\n".join(blocks)


def context_messages(
    chunks: Sequence[Chunk],
    history: Sequence[HistoryTurn],
    version: str = PROMPT_VERSION,
) -> list[dict]:
    """The answer prompt up to the question: the chunks (with the rules that the plain-text protocol
    keeps before them), then the conversation. Every request about
    one answer (grading each chunk, then the answer itself) starts with exactly these messages, so a
    server that caches prompt prefixes (llama.cpp ``cache_prompt``, OpenAI's prompt caching) reads
    the chunks once per answer instead of once per request."""
    template = CONTEXT_VERSION if version == STRUCTURED_PROMPT_VERSION else version
    system = _template(template).format(corpus_title="the documentation", chunks=render_chunks(chunks))
    return [{"role": "system", "content": system}, *({"role": t.role, "content": t.content} for t in history[-6:])]


def answer_messages(
    question: str,
    chunks: Sequence[Chunk],
    history: Sequence[HistoryTurn],
    citable: Sequence[str] | None = None,
    version: str = PROMPT_VERSION,
) -> list[dict]:
    """``citable``: the ids the answer may cite when they are fewer than the chunks shown (the rest
    were graded unhelpful but stay in the prompt, which is then the same prefix grading read)."""
    only = ""
    if citable is not None and len(citable) < len(chunks):
        only = " (cite only these chunks: " + ", ".join(citable) + ")"
    if version == STRUCTURED_PROMPT_VERSION:
        ask = _template(version).format(question=question, citable=only)
    else:
        ask = question + (f"\n\n(Cite only these chunks: {', '.join(citable)}.)" if only else "")
    return [*context_messages(chunks, history, version=version), {"role": "user", "content": ask}]


def rewrite_messages(question: str, history: Sequence[HistoryTurn]) -> list[dict]:
    transcript = "\n".join(f"{t.role}: {t.content}" for t in history[-6:])
    return [
        {"role": "system", "content": REWRITE_INSTRUCTIONS},
        {"role": "user", "content": f"Conversation:\n{transcript}\n\nLast question: {question}"},
    ]
