"""The cite-first prompt (versioned in prompts/), its language rule, and the follow-up rewrite prompt."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from importlib.resources import files

from babel import Locale

from ..contract import HistoryTurn
from ..language import detect_language
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


def _language_name(code: str) -> str:
    return Locale("en").languages.get(code, code)


def language_rule(question: str, chunks: Sequence[Chunk]) -> str:
    """What the answer is written in, said after the chunks ("" when question and docs are both
    English: the prompt as it always was). In the question's language when the docs are in it too;
    otherwise in the docs' own words, untranslated, since each sentence is checked against the
    chunk it cites (validate/), and a translation is a claim that check cannot read back."""
    asked = detect_language(question)
    docs = Counter(detect_language(c.text) for c in chunks).most_common(1)[0][0] if chunks else asked  # each chunk's cached
    if asked == docs == "en":
        return ""
    if asked == docs:
        return (
            f"\n\nLanguage: the question and the chunks are in {_language_name(asked)}. Write every sentence in "
            f"{_language_name(asked)}, including a sentence saying what the docs do not cover."
        )
    return (
        f"\n\nLanguage: the question is in {_language_name(asked)}; the chunks are in {_language_name(docs)}. Write "
        f"every answer sentence in {_language_name(docs)}, in the chunks' own words, never translated, so that each "
        f"can be checked against the chunk it cites. A sentence saying what the docs do not cover is in "
        f"{_language_name(asked)}."
    )


def answer_messages(
    question: str,
    chunks: Sequence[Chunk],
    history: Sequence[HistoryTurn],
    corpus_title: str = "the documentation",
    version: str = PROMPT_VERSION,
) -> list[dict]:
    system = _template(version).format(corpus_title=corpus_title, chunks=render_chunks(chunks)) + language_rule(question, chunks)
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
