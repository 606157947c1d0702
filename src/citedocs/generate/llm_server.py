"""llama.cpp's own OpenAI-compatible HTTP server, run by citedocs as a managed child process.

The local backend is not a separate code path: citedocs starts this server on loopback and talks
to it with the same client as to Ollama, vLLM or OpenAI (``openai_compat.py``). Running it in a
child process (``python -m citedocs.generate.llm_server``) keeps a llama.cpp crash out of the
API process, lets citedocs tell a dead server apart (``problem()``, used by ``/readyz``), and makes
"the model server died mid-answer" something the tests can do for real (kill the child).

The child exits on its own when its parent dies, so an API process killed with SIGKILL leaves no
model server behind. ``citedocs llm serve`` runs the same server in the foreground.
"""

from __future__ import annotations

import argparse
import atexit
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .. import config, threads
from ..models.llm_file import MODEL_NAME, ModelFileError, model_path, verify_model

SLOTS = 2
"""Two slots, so a claim's verification runs while the answer is still being written. With one slot a
verification request queued behind the whole answer, and the first validated sentence came only
after the last one was written. llama.cpp batches both slots into one decode step, and decode is
memory-bound on a CPU, so the verification prompt's tokens ride along with the answer's tokens for
little extra time. Each slot keeps its own KV cache for prompt-prefix reuse."""
CONTEXT_PER_SLOT = 8192  # tokens; the answer prompt (6 chunks + history) stays well under it
DEFAULT_CONTEXT = SLOTS * CONTEXT_PER_SLOT  # llama.cpp splits n_ctx evenly between the slots
START_TIMEOUT_S = 180.0
DEFAULT_POLL = 50  # llama.cpp's own default polling level (0-100) for threads waiting on each other
KEY_ENV = "CITEDOCS_LLM_SERVER_KEY"  # the managed server's bearer key, passed by environment (never argv)


class LlmServerError(RuntimeError):
    """The managed model server could not be started; the message carries its last log lines."""


@dataclass(frozen=True)
class ServerConfig:
    model: Path
    threads: int
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port
    n_ctx: int = DEFAULT_CONTEXT
    log_file: Path | None = None
    poll: int = DEFAULT_POLL  # llama.cpp's busy-wait level for idle threads (0: they sleep)
    batch_threads: int | None = None  # prompt evaluation's threads (None: ``threads``)

    @property
    def prompt_threads(self) -> int:
        return self.batch_threads or self.threads

    @classmethod
    def from_env(cls, port: int = 0) -> ServerConfig:
        chosen = threads.plan()
        return cls(
            model=model_path(),
            threads=chosen.llama,
            batch_threads=chosen.llama_prompt,
            port=port,
            log_file=config.home() / "logs" / "llm-server.log",
        )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def run_server(cfg: ServerConfig, exit_with_parent: bool = False, api_key: str | None = None) -> None:
    """Load the (verified) model into llama.cpp's HTTP server and serve until SIGTERM/SIGINT.

    With ``api_key`` every API call must carry it as a bearer token: the managed server gets a fresh
    random key, so other local users and web pages (llama.cpp allows any CORS origin) cannot use it."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(cfg.model)
    params.model_alias = {MODEL_NAME}
    params.n_ctx = cfg.n_ctx
    params.n_parallel = SLOTS
    params.offline = True
    params.hostnames = [cfg.host]
    if api_key:
        params.api_keys = [api_key]
    params.cache_ram_mib = 1024  # llama.cpp keeps recent prompts' KV state in RAM for prefix reuse
    params.port = cfg.port
    params.cpuparams.n_threads = cfg.threads
    params.cpuparams_batch.n_threads = cfg.prompt_threads
    params.cpuparams.poll = cfg.poll
    params.cpuparams_batch.poll = cfg.poll
    server = xlc.Server(params)  # noqa: F841 (listens until the process ends)
    print(f"llama.cpp server for {MODEL_NAME} on http://{cfg.host}:{cfg.port}/v1 ({cfg.threads} threads writing, {cfg.prompt_threads} evaluating prompts)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    parent = os.getppid()
    while not stop.wait(1.0):
        if exit_with_parent and os.getppid() != parent:
            break
    os._exit(0)  # the runtime's threads would otherwise keep the process alive


@dataclass
class ManagedServer:
    """One llama.cpp server child process: ``start`` (verify the model, spawn, wait until healthy),
    ``problem`` (why it cannot answer now), ``stop``."""

    cfg: ServerConfig
    start_timeout_s: float = START_TIMEOUT_S
    process: subprocess.Popen | None = None
    port: int = 0
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://{self.cfg.host}:{self.port}/v1"

    def start(self) -> str:
        """Start the server (if it is not running) and return its ``/v1`` base URL."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                return self.base_url
            try:
                verify_model(self.cfg.model)
            except ModelFileError as exc:
                raise LlmServerError(str(exc)) from exc
            self.port = self.cfg.port or free_port(self.cfg.host)
            log = self.cfg.log_file
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
            command = [
                sys.executable, "-m", "citedocs.generate.llm_server", "--model", str(self.cfg.model),
                "--host", self.cfg.host, "--port", str(self.port), "--threads", str(self.cfg.threads),
                "--ctx", str(self.cfg.n_ctx), "--poll", str(self.cfg.poll),
                "--batch-threads", str(self.cfg.prompt_threads), "--exit-with-parent", "--verified",
            ]
            out = log.open("ab") if log is not None else subprocess.DEVNULL
            try:
                self.process = subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env={**os.environ, KEY_ENV: self.api_key},
                )
            finally:
                if log is not None:
                    out.close()
            self._wait_healthy()
            atexit.register(self.stop)
            return self.base_url

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        health = f"http://{self.cfg.host}:{self.port}/health"
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                self.process = None
                raise LlmServerError(f"the llama.cpp server exited with code {code} while starting{self._log_tail()}")
            try:
                if httpx.get(health, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LlmServerError(f"the llama.cpp server was not ready within {self.start_timeout_s:.0f}s{self._log_tail()}")

    def _log_tail(self) -> str:
        log = self.cfg.log_file
        if log is None or not log.is_file():
            return ""
        lines = log.read_text(errors="replace").splitlines()[-5:]
        return f" (last lines of {log}: {' | '.join(lines)})" if lines else ""

    def problem(self) -> str | None:
        if self.process is None:
            return "the local model server is not running"
        code = self.process.poll()
        if code is not None:
            return f"the local model server exited (code {code}); restart citedocs"
        return None

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="llama.cpp server for citedocs' local model (started by citedocs).")
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=DEFAULT_CONTEXT)
    parser.add_argument("--batch-threads", type=int, default=None, help="prompt evaluation threads (default: --threads)")
    parser.add_argument("--poll", type=int, default=DEFAULT_POLL, help="llama.cpp polling level 0-100 (0: idle threads sleep)")
    parser.add_argument("--exit-with-parent", action="store_true")
    parser.add_argument("--verified", action="store_true", help="the parent has just checked the sha256")
    args = parser.parse_args(argv)
    model = args.model or model_path()
    if not args.verified:
        verify_model(model)
    cfg = ServerConfig(
        model=model, threads=args.threads, host=args.host, port=args.port, n_ctx=args.ctx, poll=args.poll,
        batch_threads=args.batch_threads,
    )
    run_server(cfg, exit_with_parent=args.exit_with_parent, api_key=os.environ.pop(KEY_ENV, None))


if __name__ == "__main__":
    main()
