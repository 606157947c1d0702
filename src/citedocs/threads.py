"""How many threads each numeric library may use, decided once for the CLI and the server.

Three thread pools live in a citedocs process, and left to themselves each sizes itself to every
core of the machine:

* **torch** (intra-op, OpenMP): the MiniLM forward passes. Ingest encodes batches of chunks, where
  more threads buy throughput, so it gets ``CITEDOCS_THREADS`` or every core the process may use.
  When the encoder runs on ONNX Runtime (the default, ``encoder_runtime``), its session gets the
  same count (``onnx_session_options``), one inter-op thread (the graph is one chain of layers), and
  no spin-waiting: an idle ONNX Runtime thread would otherwise spin on the cores the next request's
  numpy or another process needs, the very effect that made OpenBLAS's threads costly (below).
* **BLAS** (numpy's OpenBLAS, or MKL where numpy links it): what numpy does per query is small (a
  matrix-vector product over the corpus' unit vectors, MaxSim over 20 chunks of at most 126
  tokens, unit-normalising a few rows), so a second thread cannot pay for its hand-off. Worse,
  OpenBLAS's idle threads spin-wait for the next call, and they spin on the very cores torch's
  OpenMP threads need next: measured on 2 cores (issue #12), encoding one question took ~105 ms
  inside the retrieval loop and ~10 ms alone, and pinning OpenBLAS to one thread brought the whole
  hybrid+rerank query from ~120 ms to ~28 ms with identical rankings. So BLAS gets exactly 1.
* **llama.cpp** (the ``local`` backend) has two counts, one for evaluating a prompt (big batches of
  matrix products, where a second core nearly doubles the rate) and one for writing tokens (one
  token at a time, each step many small operations whose threads wait on each other). Measured on
  2 cores (``benchmarks/bench_llm_threads.py``, docs/benchmarks/local-llm.md): with the machine
  quiet, 2 threads evaluate a prompt at 68 tokens/s against 35 with 1, and write 12.5 tokens/s
  against 6.9; with one core kept busy by another process, 2 writing threads fall to 0.4 tokens/s
  (each step waits for the descheduled thread; llama.cpp's ``poll`` 0 does not help) while 2 prompt
  threads still manage 32 against 36. An answer's prompts (grading, the answer, verification:
  ~2,300 tokens) outweigh what it writes (~50-130 tokens), so on 2 cores or fewer the prompt gets
  every core and writing gets 1; on a larger machine both get half the cores (at most 8).
  ``CITEDOCS_THREADS`` sets both.

**Server workers** (``serve_workers``): an extractive or OpenAI-backend answer is a few short
MiniLM forward passes wrapped in Python (tokenising, regexes, the question gate, pydantic, JSON,
SQLite), and the Python part holds the GIL, so one process cannot keep two cores busy however many
request threads it runs; a second torch thread only splits each small forward pass (a question,
a handful of sentences) at the price of a hand-off. So ``citedocs serve`` runs one worker process
per usable core, each with **one** torch thread: the cores serve different requests at once. Each
worker holds its own model, index matrices and caches (a 2-worker server on the Astro index: 0.8-1.2 GB
RSS idle, parent included; docs/benchmarks/latency.md). The ``local`` backend keeps one worker: that worker starts the llama.cpp model
server, and two would load the 1.1 GB model twice and fight over the same cores.
``CITEDOCS_WORKERS`` overrides. The serve command tells its workers how many siblings they have
(``SERVE_WORKERS_ENV``), and ``plan()`` divides the cores among them (unless
``CITEDOCS_THREADS`` says otherwise).

The Hugging Face tokenizers' own Rust pool is switched off as well (``TOKENIZERS_PARALLELISM``):
it would be one more pool competing for the same cores, and it warns after a fork.

``apply()`` enforces the plan in the running process (torch by its API, BLAS through
threadpoolctl, which works after numpy is loaded). The encoder's loader calls it, so every process
that embeds or retrieves (each CLI command, ``citedocs serve``, an application importing citedocs)
runs with it; the ``local`` backend reads ``plan().llama``.
``current()`` reads the limits back from the libraries themselves (``citedocs threads``, and the
server's ``citedocs_threads`` gauge on ``/metrics``).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import asdict, dataclass

from . import config

LIBRARIES = ("torch", "blas", "llama", "llama_prompt")

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass(frozen=True)
class ThreadPlan:
    torch: int  # intra-op threads for the encoder
    blas: int  # numpy's BLAS
    llama: int  # llama.cpp's threads writing tokens (the ``local`` backend)
    llama_prompt: int  # llama.cpp's threads evaluating a prompt

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# Set by ``citedocs serve`` for its worker processes: how many workers share this machine's cores.
SERVE_WORKERS_ENV = "CITEDOCS_SERVE_WORKER_COUNT"


def serve_workers(backend: str) -> int:
    """Worker processes for ``citedocs serve`` with this (resolved) backend; see the module docstring."""
    configured = config.setting("workers")
    if configured:
        return configured
    return 1 if backend == "local" else usable_cores()


def sibling_workers() -> int:
    """How many server workers (this one included) share the cores; 1 outside a multi-worker server."""
    return max(1, int(os.environ.get(SERVE_WORKERS_ENV) or 1))


def cores_per_worker() -> int:
    return max(1, usable_cores() // sibling_workers())


def plan() -> ThreadPlan:
    configured = config.setting("threads")
    cores = usable_cores()
    llama = 1 if cores <= 2 else min(8, cores // 2)
    return ThreadPlan(
        torch=configured or cores_per_worker(),
        blas=1,
        llama=configured or llama,
        llama_prompt=configured or (cores if cores <= 2 else llama),
    )


_lock = threading.Lock()
_blas_limiter = None  # the threadpoolctl limiter, kept so its limit is not garbage-collected away


def apply() -> ThreadPlan:
    """Enforce ``plan()`` in this process (cheap and idempotent; later calls re-apply it)."""
    global _blas_limiter
    chosen = plan()
    with _lock:
        from threadpoolctl import threadpool_limits

        torch = sys.modules.get("torch")  # set where loaded; imported only for it, it would cost seconds
        if torch is not None and torch.get_num_threads() != chosen.torch:
            torch.set_num_threads(chosen.torch)
        # openblas_set_num_threads / mkl_set_num_threads on every BLAS numpy (or anything else) loaded
        _blas_limiter = threadpool_limits(limits=chosen.blas, user_api="blas")
    return chosen


def onnx_session_options():
    """Session options for the ONNX Runtime encoder, with the plan's encoder thread count."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = plan().torch
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options


def current() -> dict[str, int]:
    """The limits as the libraries report them now (llama.cpp has no global: the planned values)."""
    from threadpoolctl import threadpool_info

    # torch as loaded; a process that has not loaded it (the ONNX runtime needs none) is not made to
    # import it for a report: every loader of torch applies the plan, so the plan is what it will run with
    torch = sys.modules.get("torch")

    blas = [pool["num_threads"] for pool in threadpool_info() if pool.get("user_api") == "blas"]
    chosen = plan()
    return {"torch": torch.get_num_threads() if torch else chosen.torch, "blas": max(blas, default=0), "llama": chosen.llama, "llama_prompt": chosen.llama_prompt}
