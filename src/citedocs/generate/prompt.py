"""The cite-first prompt (versioned in prompts/) and the follow-up rewrite prompt."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from importlib.resources import files

from ..contract import HistoryTurn
from ..types import Chunk

PROMPT_VERSION = "cite_first_v1"  # plain-text marker protocol
STRUCTURED_PROMPT_VERSION = "cited_json_v2"  # JSON answer under a schema (see structured.py)
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


def answer_messages(
    question: str,
    chunks: Sequence[Chunk],
    history: Sequence[HistoryTurn],
    corpus_title: str = "the documentation",
    version: str = PROMPT_VERSION,
) -> list[dict]:
    system = _template(version).format(corpus_title=corpus_title, chunks=render_chunks(chunks))
    messages = [{"role": "system", "content": system}]
    messages += [{"role": t.role, "content": t.content} for t in history[-6:]]
    messages.append({"role": "user", "content": question})
    return messages


def rewrite_messages(question: str, history: Sequence[HistoryTurn]) -> list[dict]:
    transcript = "\n".join(f"{t.role}: {t.content}" for t in history[-6:])
    return [
        {"role": "system", "content": REWRITE_INSTRUCTIONS},
        {"role": "user", "content": f"Conversation:\n{transcript}\n\nLast question: {question}"},
    ]
