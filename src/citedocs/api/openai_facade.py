"""An OpenAI-compatible facade, so chat front ends (Open WebUI, LibreChat, the `openai` SDK) can use
citedocs as a "model": `GET /v1/models` lists the caller's corpora as models and
`POST /v1/chat/completions` (streaming or not) answers the conversation's last user message from
the corpus named by `model`, earlier turns becoming the follow-up history.

The reply is the validated answer with its chunk-id markers replaced by numbers `[1]`, then a
Markdown list of the numbered sources; a refusal is just its refusal text. Those words are in the
request's `language` (an extra body field), else `Accept-Language`'s, else the question's. The structured contract
(citations, refused, refusal_reason, trace_id, corpus_version) rides along in an extra top-level
`citedocs` field (the last chunk, when streaming). A thin adapter over `service.py`: same auth, rate
limit and errors as `/ask`.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from collections.abc import Callable, Iterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..contract import LANGUAGE_TAG, MAX_HISTORY_TURNS, AskRequest, AskResponse, Citation, HistoryTurn
from ..i18n import LANGUAGES, N_, choose_language, requested_language, translate
from ..language import detect_language
from ..service import EmptyQuestion, Services
from .openapi import BODY_ERRORS, ERRORS, GUARDED

SOURCES = N_("Sources")
FOLLOW_UPS = N_("You could also ask")
MARKER = re.compile(r"\[([^\[\]\s]+#[^\[\]\s]*/\d+)\]")  # the chunk-id markers of the contract
WITHDRAWN = N_("(The text above could not be verified against the docs and is withdrawn.)")
RESTARTED = N_("(The model answering failed part-way: the text above is withdrawn, and the answer starts again.)")
# an earlier reply's sources, in whichever language it was written, are not part of the history
SOURCES_HEADINGS = re.compile(
    "\n\n(?:" + "|".join(re.escape(f"**{translate(lang, SOURCES)}**") for lang in LANGUAGES) + ")"
)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The message text; content parts other than text (images, files) are ignored."""
        if isinstance(self.content, list):
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    """What OpenAI clients send; sampling parameters (temperature, max_tokens, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str = Field(description="A corpus name, as listed by GET /v1/models.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    language: str | None = Field(
        default=None, pattern=LANGUAGE_TAG, description="The language of citedocs' own words (see /ask's `language`)."
    )


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


def _timestamp(iso: str) -> int:
    try:
        return int(datetime.fromisoformat(iso).timestamp())
    except ValueError:
        return 0


def to_ask_request(body: ChatCompletionRequest, accept_language: str | None = None) -> AskRequest:
    """The last user message is the question; earlier user/assistant turns are the history."""
    turns = [m for m in body.messages if m.role in ("user", "assistant")]
    if not turns or turns[-1].role != "user" or not turns[-1].text().strip():
        raise EmptyQuestion("the last message must be the user's question (role 'user', non-empty text)")
    history = [
        HistoryTurn(role=m.role, content=SOURCES_HEADINGS.split(m.text())[0][:20_000]) for m in turns[:-1]
    ]
    return AskRequest(
        question=turns[-1].text().strip()[:2000],
        corpus=body.model,
        history=history[-MAX_HISTORY_TURNS:],
        language=requested_language(body.language, accept_language),
    )


class Numbering:
    """Chunk id -> citation number, in order of first use, kept stable across a streamed answer."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def render(self, text: str) -> str:
        def number(match: re.Match) -> str:
            return f"[{self.numbers.setdefault(match.group(1), len(self.numbers) + 1)}]"

        return MARKER.sub(number, text)

    def sources(self, citations: list[Citation], language: str = "en") -> str:
        """The numbered Markdown list of sources (only cited chunks, in number order)."""
        for c in citations:
            self.numbers.setdefault(c.id, len(self.numbers) + 1)
        lines = []
        for c in sorted(citations, key=lambda c: self.numbers[c.id]):
            label = f"{c.title} › {c.section}" if c.section and c.section != c.title else c.title
            label = label.replace("[", "\\[").replace("]", "\\]")
            lines.append(f"{self.numbers[c.id]}. [{label}](<{c.url}>)")
        return f"\n\n**{translate(language, SOURCES)}**\n" + "\n".join(lines) if lines else ""


def separator(shown: str, previous_code: bool, code: bool) -> str:
    """What goes before the next streamed sentence so the stream reads exactly like the final answer
    (validator.ValidationResult.answer): prose runs on, a code block stands on its own lines."""
    if not shown:
        return ""
    if code:
        return "\n\n" if previous_code else " \n\n"
    return "\n\n" if previous_code else " "


def structured(response: AskResponse) -> dict:
    return response.model_dump(exclude={"answer"})


def reply_text(response: AskResponse) -> str:
    if response.refused:
        return response.answer
    numbering = Numbering()
    return numbering.render(response.answer) + numbering.sources(response.citations, response.language) + follow_ups(response)


def follow_ups(response: AskResponse) -> str:
    """The suggested follow-up questions as a Markdown list after the sources (none: nothing)."""
    if not response.suggestions:
        return ""
    return f"\n\n**{translate(response.language, FOLLOW_UPS)}**\n" + "\n".join(f"- {s.question}" for s in response.suggestions)


def create_router(services: Callable[[], Services], caller: Callable[[Request], str | None]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])
    tenant_of = Depends(caller)  # a default, not an annotation: this module's annotations are strings

    @router.get("/models", responses=GUARDED)
    def list_models(tenant: str | None = tenant_of) -> dict:
        """The caller's corpora, each usable as `model` in /v1/chat/completions."""
        cards = [
            ModelCard(id=c.name, created=_timestamp(c.updated_at), owned_by=c.tenant).model_dump()
            for c in services().corpora(tenant)
        ]
        return {"object": "list", "data": cards}

    @router.post(
        "/chat/completions",
        responses={
            200: {"content": {"text/event-stream": {}}, "description": "JSON, or Server-Sent Events with `stream: true`"},
            **BODY_ERRORS,
            **ERRORS,
            **GUARDED,
        },
    )
    def chat_completions(body: ChatCompletionRequest, request: Request, tenant: str | None = tenant_of):
        """Answer the last user message from the corpus named by `model`; `stream: true` sends SSE chunks."""
        ask = to_ask_request(body, request.headers.get("accept-language"))
        ask_language = choose_language(ask.language, detect_language(ask.question))  # the response's, before it comes
        created = int(time.time())
        if not body.stream:
            response = services().ask(ask, tenant)
            request.state.trace_id = response.trace_id
            return {
                "id": f"chatcmpl-{response.trace_id}",
                "object": "chat.completion",
                "created": created,
                "model": body.model,
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": reply_text(response)}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                "citedocs": structured(response),
            }
        events = services().ask_events(ask, tenant)  # bad corpus or question fails here, before streaming

        def chunk(delta: dict, finish: str | None = None, **extra: Any) -> str:
            payload = {
                "id": f"chatcmpl-{created}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return f"data: {json.dumps(payload)}\n\n"

        def stream() -> Iterator[str]:
            numbering = Numbering()
            shown = ""
            previous_code = False
            yield chunk({"role": "assistant", "content": ""})
            for event in events:
                if event.kind == "sentence":
                    code = event.sentence.text.startswith("```")
                    piece = separator(shown, previous_code, code) + numbering.render(event.sentence.rendered())
                    yield chunk({"content": piece})
                    shown, previous_code = shown + piece, code
                    continue
                if event.kind == "restart":  # a stream cannot take text back: withdraw it in words
                    if shown:
                        yield chunk({"content": f"\n\n{translate(ask_language, RESTARTED)}\n\n"})
                    numbering, shown, previous_code = Numbering(), "", False
                    continue
                response = event.response
                request.state.trace_id = response.trace_id
                if response.refused:
                    withdrawn = translate(response.language, WITHDRAWN)
                    tail = f"\n\n{withdrawn}\n\n{response.answer}" if shown else response.answer
                else:  # a backend that answers in one piece streams no sentences
                    tail = "" if shown else numbering.render(response.answer)
                    tail += numbering.sources(response.citations, response.language) + follow_ups(response)
                yield chunk({"content": tail})
                yield chunk({}, "stop", citedocs=structured(response))
            yield "data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return router
