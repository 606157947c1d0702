"""FAULT INJECTION ONLY: a stand-in OpenAI-compatible LLM provider, run as its own process.

It speaks the chat-completions protocol (a JSON completion, or Server-Sent Events with a final
``usage`` chunk when ``stream`` is true, ``GET /v1/models``) so the provider chain can be tested
against real sockets and a real process death. Its answer is never a model's: it quotes the first
two sentences of the first ``<chunk>`` in the prompt with that chunk's id, which the citation validator
accepts, so what a test checks is the plumbing (fallback, retries, breakers, accounting), never
answer quality.

Behaviour per request, from ``--script`` (comma-separated, one item per chat request, then ``ok``):
``ok`` | ``nousage`` (an answer without a ``usage`` record) | ``429:<seconds>`` (HTTP 429 with that Retry-After) | ``500`` | ``die:<events>`` (stream
that many events, then the process exits: a provider dying mid-answer) | ``hang`` (never answers).
Each request and the usage it reported is appended to ``--log`` as a JSON line.

    python tests/openai_standin.py --port 8123 --script 429:1,ok --log requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = re.compile(r'<chunk id="([^"]+)"[^>]*>\n(.*?)\n</chunk>', re.S)


def answer_for(messages: list[dict]) -> str:
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    if "\nLast question: " in prompt:  # asked to rewrite a follow-up: the first question, then the last
        first = next((line[6:] for line in prompt.splitlines() if line.startswith("user: ")), "")
        return f"{first} {prompt.rpartition('Last question: ')[2]}".strip()
    if "follow-up questions" in prompt:  # asked to phrase suggestions: one question per listed section
        sections = [line[2:].split(" › ")[-1] for line in prompt.splitlines() if line.startswith("- ")]
        return "\n".join(f"What does the section {section} explain?" for section in sections[:3])
    match = CHUNK.search(prompt)
    if not match:
        return "NO_ANSWER: no passage in the prompt"
    chunk_id = match.group(1).replace("&quot;", '"').replace("&amp;", "&")
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(match.group(2).split()))
    prose = [s for s in sentences if len(s.split()) >= 6 and s.endswith(".") and not s.startswith(("#", "<", "`"))] or sentences[:1]
    return " ".join(f"{sentence.rstrip('.')} [{chunk_id}]." for sentence in prose[:2])


def tokens(text: str) -> int:
    """The stand-in's own token count (whitespace words): what its ``usage`` reports."""
    return len(text.split())


class State:
    def __init__(self, script: list[str], log: str, drip: float) -> None:
        self.script = script
        self.log = log
        self.drip = drip
        self.lock = threading.Lock()

    def next_step(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else "ok"

    def record(self, entry: dict) -> None:
        with self.lock, open(self.log, "a") as out:
            out.write(json.dumps(entry) + "\n")


def handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _json(self, code: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "standin", "object": "model", "owned_by": "standin"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._json(404, {"error": {"message": "not found"}})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            step = state.next_step()
            entry = {"at": time.time(), "step": step, "model": body.get("model"), "stream": bool(body.get("stream")),
                     "authorization": self.headers.get("Authorization")}
            if step.startswith("429"):
                wait = step.partition(":")[2] or "1"
                state.record(entry)
                self._json(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}}, {"Retry-After": wait})
                return
            if step == "500":
                state.record(entry)
                self._json(500, {"error": {"message": "overloaded"}})
                return
            if step == "hang":
                state.record(entry)
                time.sleep(3600)
            text = answer_for(body.get("messages") or [])
            prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
            usage = {"prompt_tokens": tokens(prompt), "completion_tokens": tokens(text)}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            entry["usage"] = usage if step != "nousage" else None
            state.record(entry)
            if not body.get("stream"):
                completion = {
                    "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                }
                self._json(200, completion | ({"usage": usage} if step != "nousage" else {}))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            die_after = int(step.partition(":")[2]) if step.startswith("die") else None
            words = re.findall(r"\S+\s*", text)
            for n, word in enumerate(words):
                if die_after is not None and n == die_after:
                    self.wfile.flush()
                    os._exit(3)  # the provider's process dies mid-answer
                event = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "model": body.get("model"),
                         "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(state.drip)
            last = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "model": body.get("model"),
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
            if (body.get("stream_options") or {}).get("include_usage") and step != "nousage":
                self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--script", default="")
    parser.add_argument("--log", required=True)
    parser.add_argument("--drip", type=float, default=0.02, help="seconds between streamed events")
    args = parser.parse_args()
    state = State([s for s in args.script.split(",") if s], args.log, args.drip)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(state))
    server.daemon_threads = True
    print("ready", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
