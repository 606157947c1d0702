"""One-word questions about one passage, answered with probabilities from the model's first token.

No cross-encoder or NLI model ships on PyPI, so the instruct model is the only thing here that reads
a question (or a claim) and a passage *together*. Grading (``grader.py``) and claim verification
(``validate/entailment.py``) both ask it a one-word question about a passage and read the
probabilities of the allowed words from the first token's ``top_logprobs``.

The prompt puts the passage first and the question last, so the passage's part of the prompt is
the same for every question about it: llama.cpp (``cache_prompt``, its RAM prompt cache) then
reuses that prefix, and verifying a second claim against the same chunk costs only the claim's
tokens. Grading asks one question about several passages, so it states the question in a ``lead``
*before* the passage (and the yes/no instruction after it): every grading request of an answer then
shares the system prompt and the question as a prefix, and only the passage is evaluated anew. Grading reads only a chunk's opening (``GRADE_CHARS``); verification reads all of it. An
endpoint that returns no log-probabilities still works: its one-word answer counts as probability
1 for that word.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..types import Chunk
from .base import GenerationFault
from .openai_compat import OpenAICompatibleGenerator

SYSTEM = "You read one documentation passage and answer a question about it with exactly one word."
GRADE_CHARS = 700  # ~175 tokens: a chunk's opening carries its topic, and on 2 CPU cores every prompt token costs


@dataclass(frozen=True)
class WordProbabilities:
    probabilities: dict[str, float]  # normalised over the allowed words
    answer: str  # the most probable allowed word
    from_logprobs: bool  # False: the endpoint gave no log-probabilities, only its one-word answer
    prompt_tokens: int | None = None  # the prompt's length
    evaluated_tokens: int | None = None  # of those, evaluated rather than reused from the prompt cache (llama.cpp)


def passage_prompt(chunk: Chunk, question: str, max_chars: int | None = None, lead: str = "") -> list[dict]:
    """System prompt, then ``lead`` (text shared by requests about different passages), the passage,
    and ``question`` last."""
    passage = chunk.text if max_chars is None or len(chunk.text) <= max_chars else chunk.text[:max_chars] + " …"
    section = " › ".join((chunk.title, *chunk.heading_path))
    opening = f"{lead}\n\n" if lead else ""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{opening}Passage ({section}):\n{passage}\n\n{question}"},
    ]


class PassageJudge:
    """Asks the model one-word questions about passages through the shared OpenAI-compatible client."""

    def __init__(self, client: OpenAICompatibleGenerator) -> None:
        self.client = client

    def ask(
        self, chunk: Chunk, question: str, words: tuple[str, ...], max_chars: int | None = None, lead: str = ""
    ) -> WordProbabilities | None:
        """The allowed words' probabilities, or None when the model gave neither a probability for
        one of them nor one of them as its answer (callers then fall back to their no-LLM rule)."""
        messages = passage_prompt(chunk, question, max_chars, lead)
        body = self.client.chat_body(messages, 1, {"logprobs": True, "top_logprobs": 20})
        mass = dict.fromkeys(words, 0.0)
        try:
            first = body["choices"][0]["logprobs"]["content"][0]
            candidates = first.get("top_logprobs") or [first]
            for candidate in candidates:
                word = str(candidate.get("token", "")).strip().lower()
                if word in mass:
                    mass[word] += math.exp(float(candidate["logprob"]))
            from_logprobs = True
        except (KeyError, IndexError, TypeError, ValueError):
            from_logprobs = False
        if not from_logprobs or sum(mass.values()) == 0.0:
            try:
                said = str(body["choices"][0]["message"]["content"]).strip().strip(".").lower()
            except (KeyError, IndexError, TypeError) as exc:
                raise GenerationFault("garbage", f"no answer in the judge's completion: {exc}") from exc
            first_word = said.split()[0] if said.split() else ""
            if first_word not in mass:
                return None
            mass[first_word] = 1.0
        total = sum(mass.values())
        probabilities = {w: round(p / total, 4) for w, p in mass.items()}
        usage = body.get("usage") or {}
        timings = body.get("timings") or {}
        return WordProbabilities(
            probabilities,
            max(probabilities, key=probabilities.get),
            from_logprobs,
            usage.get("prompt_tokens"),
            timings.get("prompt_n"),
        )
