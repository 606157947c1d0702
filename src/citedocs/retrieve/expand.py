"""Query expansion with a hypothetical passage (HyDE, Gao et al. 2022).

A user asks in their own words ("get rid of the folder with everything in it"); the docs say
``shutil.rmtree``. BM25 cannot bridge that and a small bi-encoder often does not. An LLM can: asked
to write the passage the docs would hold, it names the functions, options and commands the docs use.
The passage is searched *beside* the question (its BM25 and dense rankings join the fusion), never
instead of it: the reranker, the retrieval margin and the question gate still read the user's own
question, so a passage the model gets wrong can add candidates but cannot vouch for them. It is a
retrieval aid only: its text never reaches an answer.
"""

from __future__ import annotations

from typing import Protocol

from ..generate.base import GenerationFault

PROMPT_VERSION = "hyde_v1"
SYSTEM = "You write short passages of software documentation."
INSTRUCTION = (
    "Write the passage of the {corpus} documentation that answers this question, in two or three "
    "sentences, naming the options, functions or commands the docs would use. Question: {question}"
)
MAX_TOKENS = 64  # two or three sentences; on 2 CPU cores every written token costs ~0.1-0.15 s


class ChatClient(Protocol):
    def chat(self, messages: list[dict], max_tokens: int) -> tuple[str, dict]: ...


class HypotheticalPassage:
    """Writes the passage the docs would hold for a question, with the backend's own LLM client."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def expand(self, question: str, corpus: str) -> str | None:
        """The passage, or None when the model failed or wrote nothing: retrieval then runs on the
        question alone, as it does without expansion."""
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": INSTRUCTION.format(corpus=corpus, question=question)},
        ]
        try:
            text, _ = self.client.chat(messages, MAX_TOKENS)
        except GenerationFault:
            return None
        return " ".join(text.split()) or None
