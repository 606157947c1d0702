"""FAULT INJECTION ONLY: an OpenAI-compatible chat server whose replies the tests script.

It stands in for an LLM endpoint so tests can make it slow, broken or adversarial; it is never
used to produce the answers the product's quality is measured on.
"""

from __future__ import annotations

import socket
import threading
import time
import json
import re
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FakeLLM:
    """`mode`: "reply" (send `reply`), "slow" (sleep `delay` first), "garbage", "http500".

    A request with ``stream: true`` gets `reply` as Server-Sent Events, one word per event,
    `drip` seconds apart; ``break_stream_after`` words, if set, end the stream with a broken event.
    A request carrying a JSON schema gets `reply` too: the test scripts the JSON (or breaks it).
    """

    def __init__(self) -> None:
        self.mode = "reply"
        self.reply = "NO_ANSWER: nothing scripted"
        self.rewrite_reply: str | None = None
        self.delay = 5.0
        self.drip = 0.0
        self.break_stream_after: int | None = None
        self.stream_finished_at: float | None = None
        self.requests: list[dict] = []
        self.owned_by: str | None = None  # set: GET /v1/models names this owner (llama.cpp says "llamacpp")
        self.app = FastAPI()

        @self.app.get("/v1/models")
        async def models():
            if self.owned_by is None:
                return JSONResponse({"error": "not found"}, status_code=404)
            return {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": self.owned_by}]}

        @self.app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(body)
            if self.mode == "slow":
                time.sleep(self.delay)
            if self.mode == "garbage":
                return PlainTextResponse("<html>502 bad gateway</html>")
            if self.mode == "http500":
                return JSONResponse({"error": "overloaded"}, status_code=500)
            system = body["messages"][0]["content"]
            content = self.rewrite_reply if system.startswith("Rewrite") and self.rewrite_reply else self.reply
            if body.get("stream"):
                return StreamingResponse(self._events(content), media_type="text/event-stream")
            return {
                "choices": [{"message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }


    def _events(self, content: str):
        for n, word in enumerate(re.findall(r"\S+\s*", content)):
            if self.break_stream_after is not None and n == self.break_stream_after:
                yield "data: {not json\n\n"
                return
            time.sleep(self.drip)
            yield f"data: {json.dumps({'choices': [{'delta': {'content': word}}]})}\n\n"
        usage = {"prompt_tokens": 10, "completion_tokens": 5}
        yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"
        self.stream_finished_at = time.monotonic()


@contextmanager
def serving(app, start_s: float = 10, stop_s: float = 5):
    """An ASGI app on a loopback port (uvicorn in a thread): its base URL while the block runs."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + start_s
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=stop_s)


@contextmanager
def running_fake_llm():
    fake = FakeLLM()
    with serving(fake.app) as base:
        yield fake, f"{base}/v1"
