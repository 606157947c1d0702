#!/usr/bin/env python
"""llama.cpp threads and polling for the local model: prompt and generation speed, quiet and busy.

Starts the managed llama.cpp server (the verified Qwen2.5-Coder-1.5B file, as ``--backend local``
does) once per setting, sends the same ~1,000-token prompt with the prompt cache off (every token
evaluated) and 48 tokens to write, and reads llama.cpp's own ``timings``. Each setting runs on a
quiet machine and with one competing process that keeps a core busy (another program, or a second
server worker), which is how the earlier "1 thread beats 2 on a busy box" was seen. ``poll`` is
llama.cpp's busy-wait level for threads waiting on each other (50, its default, spins; 0 sleeps).

    python benchmarks/bench_llm_threads.py [--repeats 2] [--out benchmarks/results-llm-threads.json] \
        [--machines quiet,busy] [--settings 1:50:1,2:50:2,1:50:2,2:0:2]

Prints medians per setting and the load average; a script, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from citedocs.generate.llm_server import ManagedServer, ServerConfig
from citedocs.models.llm_file import MODEL_NAME, model_path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ((1, 50, 1), (2, 50, 2), (1, 50, 2))  # (threads writing, poll, threads evaluating prompts)
BUSY = "while True: pass"  # one core kept busy by another process


def prompt_text() -> str:
    """A fixed ~1,000-token passage (the old README's local-model section, frozen), the same bytes every run."""
    return (ROOT / "benchmarks" / "data" / "llm-threads-prompt.md").read_text(encoding="utf-8")


def measure(server: ManagedServer, text: str) -> dict:
    body = {
        "model": MODEL_NAME,
        "messages": [
            {"role": "system", "content": "You summarise documentation in one short paragraph."},
            {"role": "user", "content": text},
        ],
        "max_tokens": 48,
        "temperature": 0,
        "cache_prompt": False,
    }
    headers = {"Authorization": f"Bearer {server.api_key}"}
    started = time.perf_counter()
    reply = httpx.post(f"{server.base_url}/chat/completions", json=body, headers=headers, timeout=600).json()
    timings = reply["timings"]
    return {
        "prompt_tokens": timings["prompt_n"],
        "prompt_tok_s": timings["prompt_per_second"],
        "written_tokens": timings["predicted_n"],
        "written_tok_s": timings["predicted_per_second"],
        "wall_s": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--machines", default="quiet,busy", help="which of quiet,busy to run")
    parser.add_argument("--settings", default=",".join(":".join(map(str, s)) for s in SETTINGS), help="THREADS:POLL:PROMPT_THREADS,...")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    text, rows = prompt_text(), []
    print(f"{'machine':8} {'threads (prompt)':>16} {'poll':>4}  prompt tok/s  written tok/s  wall s  load")
    settings = [tuple(int(x) for x in item.split(":")) for item in args.settings.split(",")]
    for condition in args.machines.split(","):
        busy = subprocess.Popen([sys.executable, "-c", BUSY]) if condition == "busy" else None
        try:
            for threads, poll, batch in settings:
                server = ManagedServer(ServerConfig(model=model_path(), threads=threads, poll=poll, batch_threads=batch))
                server.start()
                try:
                    measure(server, text[:400])  # warm-up: pages the weights in
                    runs = [measure(server, text) for _ in range(args.repeats)]
                finally:
                    server.stop()
                row = {
                    "machine": condition, "threads": threads, "prompt_threads": batch, "poll": poll,
                    "load": os.getloadavg()[0],
                    **{key: statistics.median(r[key] for r in runs) for key in runs[0]},
                }
                rows.append(row)
                if args.out:  # after every row, so a run stopped early keeps what it measured
                    args.out.write_text(json.dumps({"cores": os.cpu_count(), "rows": rows}, indent=1))
                print(
                    f"{condition:8} {f'{threads} ({batch})':>16} {poll:>4}  {row['prompt_tok_s']:12.1f}  {row['written_tok_s']:13.1f}"
                    f"  {row['wall_s']:6.1f}  {row['load']:.1f}",
                    flush=True,
                )
        finally:
            if busy is not None:
                busy.kill()


if __name__ == "__main__":
    main()
