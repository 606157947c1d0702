"""FAULT INJECTION ONLY: a relay in front of a REAL OpenAI-compatible server (the llama.cpp server)
that refuses the first chat requests with HTTP 429 and then forwards them.

llama.cpp never answers 429 itself, so a provider that is rate-limited and then recovers is this
relay's script in front of a real model server: every request it forwards is answered by the real
model, byte for byte (a stream is relayed event by event as the server writes it). It also keeps
what the server said each forwarded answer cost (its ``usage``), so a test can compare a trace's
token counts with the server's own.

Script: comma-separated steps, one per chat request, then every request is forwarded:
``429:<seconds>`` (HTTP 429 with that Retry-After) | ``ok`` (forward). ``GET`` requests (``/models``,
the breaker's probe) are always forwarded and logged.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

FORWARDED_HEADERS = ("authorization", "content-type")


class FaultProxy:
    """The relay; ``requests`` lists what came in: time (monotonic), method, path, step, and for a
    forwarded chat request whether it streamed and the ``usage`` the server reported."""

    def __init__(self, upstream: str, script: str = "") -> None:
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:8123 (no /v1)
        self.steps = [s for s in script.split(",") if s]
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=httpx.Timeout(600.0, connect=5.0))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, script: str) -> None:
        """Replace the remaining steps (and forget what was logged)."""
        with self._lock:
            self.steps = [s for s in script.split(",") if s]
            self.requests.clear()

    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def _next_step(self) -> str:
        with self._lock:
            return self.steps.pop(0) if self.steps else "ok"

    def _log(self, entry: dict) -> dict:
        with self._lock:
            self.requests.append(entry)
        return entry

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection closes: a relayed stream needs no framing

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                entry = proxy._log({"at": time.monotonic(), "method": "GET", "path": self.path, "step": "ok"})
                response = proxy._client.get(proxy.upstream + self.path, headers=self._headers())
                entry["status"] = response.status_code
                self._reply(response.status_code, response.headers.get("content-type", "application/json"), response.content)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                chat = self.path.endswith("/chat/completions")
                step = proxy._next_step() if chat else "ok"
                entry = proxy._log({"at": time.monotonic(), "method": "POST", "path": self.path, "step": step})
                if step.startswith("429:"):
                    seconds = step.split(":", 1)[1]
                    error = json.dumps({"error": {"message": "rate limited (fault injection)", "type": "rate_limit"}}).encode()
                    self._reply(429, "application/json", error, {"Retry-After": seconds})
                    return
                payload = json.loads(body or b"{}")
                entry["stream"] = bool(payload.get("stream"))
                request = proxy._client.build_request("POST", proxy.upstream + self.path, content=body, headers=self._headers())
                response = proxy._client.send(request, stream=True)
                try:
                    if entry["stream"] and response.status_code == 200:
                        self._relay_stream(response, entry)
                    else:
                        content = response.read()
                        if response.status_code == 200:
                            entry["usage"] = json.loads(content).get("usage")
                        self._reply(response.status_code, response.headers.get("content-type", "application/json"), content)
                finally:
                    response.close()
                entry["done_at"] = time.monotonic()

            def _relay_stream(self, response: httpx.Response, entry: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", response.headers.get("content-type", "text/event-stream"))
                self.end_headers()
                try:
                    for line in response.iter_lines():
                        if line.startswith("data: {"):
                            event = json.loads(line.removeprefix("data: "))
                            if event.get("usage"):
                                entry["usage"] = event["usage"]
                        self.wfile.write(line.encode() + b"\n")
                        self.wfile.flush()
                except httpx.HTTPError as exc:  # the server died mid-stream: so does the relay's answer
                    entry["error"] = type(exc).__name__
                    self.close_connection = True

            def _headers(self) -> dict:
                return {k: v for k, v in self.headers.items() if k.lower() in FORWARDED_HEADERS}

            def _reply(self, status: int, content_type: str, content: bytes, extra: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(content)

        return Handler

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


@contextmanager
def fault_proxy(upstream_base_url: str, script: str = "") -> Iterator[FaultProxy]:
    """A relay in front of ``upstream_base_url`` (``http://host:port/v1``), closed afterwards."""
    proxy = FaultProxy(upstream_base_url.removesuffix("/v1"), script).start()
    try:
        yield proxy
    finally:
        proxy.close()
