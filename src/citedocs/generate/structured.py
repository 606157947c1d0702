"""Citations constrained at decoding time: a JSON schema per request, in each server's request shape,
and a reader that turns the streamed JSON into marker text sentence by sentence.

The schema's citation items are an ``enum`` of the chunk ids retrieved for this request, so a
server that enforces the schema (llama.cpp grammar, vLLM/OpenAI structured outputs, Ollama
``format``) cannot emit an invented id: it is impossible, not merely filtered. The model's first
token is the decision, ``"answerable": true|false``; the reason ("not answerable, because ...")
comes next and counts only when the decision is false, then the sentences. With the reason as the
only signal (``cited_json_v1``) Qwen2.5-Coder-1.5B sometimes wrote its *answer* into the reason
field, which read as a refusal; a boolean first leaves no such ambiguity.

The reader hands each sentence over as soon as its JSON object closes, converted to the marker
protocol (``text [id] [id].``) so the one citation validator checks it exactly like plain-text
output. Servers without structured output keep the plain-text marker protocol (``off``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..sentences import split_units
from ..markers import with_markers
from .prompt import NO_ANSWER

FLAVOURS = ("llamacpp", "openai", "ollama", "off")
SCHEMA_NAME = "cited_answer"
MAX_SENTENCES = 5
# A sentence cites at most this many chunks: the bound also ends a degenerate loop that repeats ids
# until max_tokens cuts the JSON (seen with the local 1.5B model on vitepress-dev-005)
MAX_CITES = 3
# the decision, then (only when false) the reason: complete as soon as the reason's string or null closes
_DECLINED = re.compile(r'^\s*\{\s*"answerable"\s*:\s*false\s*,\s*"not_answerable_because"\s*:\s*(?:null|"((?:[^"\\]|\\.)*)")')
DEFAULT_REASON = "the model judged that the retrieved passages do not answer the question."


class StructuredOutputError(ValueError):
    """The model's structured answer is not the JSON the schema describes."""


def answer_schema(chunk_ids: Sequence[str]) -> dict:
    """The answer's JSON schema; ``cite`` items can only be ``chunk_ids``.

    Written to the subset every flavour accepts (OpenAI strict mode: every property required,
    ``additionalProperties: false``, nullable as a type list).
    """
    sentence = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "one sentence, stating only what the cited chunks say"},
            "cite": {
                "type": "array",
                "items": {"type": "string", "enum": list(dict.fromkeys(chunk_ids))},
                "minItems": 1,
                "maxItems": MAX_CITES,
                "description": "ids of the chunks that support the sentence",
            },
        },
        "required": ["text", "cite"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "answerable": {"type": "boolean", "description": "do the chunks answer the question? decided first"},
            "not_answerable_because": {
                "type": ["string", "null"],
                "description": "only when answerable is false: what the docs do not cover; else null",
            },
            "sentences": {"type": "array", "items": sentence, "maxItems": MAX_SENTENCES},
        },
        "required": ["answerable", "not_answerable_because", "sentences"],
        "additionalProperties": False,
    }


def request_fields(flavour: str, schema: dict) -> dict:
    """The fields to add to a ``/chat/completions`` body so that ``flavour``'s server enforces ``schema``.

    * ``llamacpp``: llama.cpp's server takes the schema as ``json_schema`` and compiles it to a grammar.
    * ``openai``: OpenAI and vLLM take ``response_format`` of type ``json_schema`` (strict).
    * ``ollama``: Ollama's native field is ``format`` (a schema); its ``/v1`` compatibility layer reads
      ``response_format`` instead, so both are sent and whichever the endpoint knows applies.
    * ``off``: nothing; the plain-text marker protocol.
    """
    response_format = {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema}}
    if flavour == "llamacpp":
        return {"json_schema": schema}
    if flavour == "openai":
        return {"response_format": response_format}
    if flavour == "ollama":
        return {"format": schema, "response_format": response_format}
    if flavour == "off":
        return {}
    raise ValueError(f"unknown structured-output flavour {flavour!r}; use one of {', '.join(FLAVOURS)}")


def marker_text(text: str, cite: Sequence[str]) -> str:
    """One schema sentence in the marker protocol. If the model packed several sentences into one
    ``text``, each gets the citations, so the validator checks each on its own."""
    units = split_units(text.strip())
    if not units:
        return ""
    return "\n".join(u.text + "\n" + " ".join(f"[{i}]" for i in cite) if u.is_code else with_markers(u.text, list(cite)) for u in units)


@dataclass
class StructuredReader:
    """Reads a streamed structured answer: ``feed`` returns the marker text of every sentence whose
    JSON object closed in that delta; ``finish`` parses the whole output (or raises
    ``StructuredOutputError``) and returns the remaining marker text, e.g. the ``NO_ANSWER`` line."""

    raw: str = ""
    _position: int = 0
    _stack: list[str] = field(default_factory=list)
    _in_string: bool = False
    _escaped: bool = False
    _start: int | None = None
    _sent: int = 0

    def feed(self, delta: str) -> list[str]:
        self.raw += delta
        out: list[str] = []
        for index in range(self._position, len(self.raw)):
            char = self.raw[index]
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
                continue
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._stack.append(char)
                if self._stack == ["{", "[", "{"]:
                    self._start = index
            elif char in "}]":
                if self._stack == ["{", "[", "{"] and char == "}" and self._start is not None:
                    out.extend(self._sentence(self.raw[self._start : index + 1]))
                    self._start = None
                if self._stack:
                    self._stack.pop()
        self._position = len(self.raw)
        return out

    def declined(self) -> str | None:
        """The model's reason, as soon as it has decided ``"answerable": false`` and closed the reason
        (both come before any sentence, so the answer can stop there: whatever follows would be
        discarded anyway)."""
        match = _DECLINED.match(self.raw)
        if not match:
            return None
        return _reason(match.group(1) and json.loads(f'"{match.group(1)}"'))

    def _sentence(self, text: str) -> list[str]:
        try:
            item = json.loads(text)
        except ValueError:
            return []  # finish() reports the broken JSON
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not isinstance(item.get("cite"), list):
            return []
        self._sent += 1
        rendered = marker_text(item["text"], [str(i) for i in item["cite"]])
        return [rendered + "\n"] if rendered else []

    def finish(self) -> str:
        try:
            answer = json.loads(self.raw)
        except ValueError as exc:
            raise StructuredOutputError(f"the structured answer is not valid JSON ({exc}): {self.raw[-120:]!r}") from exc
        if (
            not isinstance(answer, dict)
            or not isinstance(answer.get("answerable"), bool)
            or not isinstance(answer.get("sentences", []), list)
        ):
            raise StructuredOutputError(
                f"the structured answer is not an object with an answerable decision and a sentences list: {self.raw[:120]!r}"
            )
        if not answer["answerable"]:
            # declined: whatever sentences came with it, the final answer is the refusal
            return f"\n{NO_ANSWER}: {_reason(answer.get('not_answerable_because'))}"
        return ""  # answerable: the reason field is ignored, the sentences were handed over by feed()


def _reason(reason: object) -> str:
    """The model's reason for declining, or a generic one when it gave none."""
    return reason.strip() if isinstance(reason, str) and reason.strip() else DEFAULT_REASON
