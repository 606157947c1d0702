#!/usr/bin/env python
"""Routes and fallbacks with a REAL model (a script, not a test): two llama.cpp servers running the
shipped Qwen2.5-Coder-1.5B (each its own child process, --threads each), as two OpenAI-compatible
providers, answering questions about four real Astro pages.

1. Routes: with ``llm_routing = on``, questions (easy ones, follow-ups, long scenarios) go to the
   route the rule picks. Both routes run the same 1.5B model (the only instruct model here): the
   ``fast`` provider on one server with a 192-token answer budget, the ``strong`` one on the other
   with 384. Prints each route's share and answer p50/p95.
2. Failures: routing off, the first provider behind a fault-injection relay (tests/fault_proxy.py)
   in front of its real server, the second provider the other server. Each answer draws one of:
   ``ok``; ``429`` (the relay refuses the first request with ``Retry-After: 1``, then forwards: the
   provider recovers); ``kill`` (the first server is SIGKILLed once the answer's first validated
   sentence is out, so the answer restarts on the second; the killed server is started again,
   untimed, before the next answer). Prints the share of answers that needed the second provider
   and p50/p95 per kind; the extra latency of a fallback is a kind's p50 minus ``ok``'s.

A question asked again reuses llama.cpp's cached prompt (as a server in use does); a restarted
server starts cold. Writes the figures as JSON with ``--json``.

    python benchmarks/bench_provider_fallback_real.py --answers 24 --seed 7 --json benchmarks/results-provider-fallback-real.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_provider_fallback import copy_pages  # noqa: E402  (the same four pages)
EASY = (
    "How do I deploy my Astro site to Heroku?",
    "How do I import YAML files into my Astro components?",
    "What should I do about the MissingSharp error?",
)
FOLLOW_UP = ("Which command creates the app there?", [("user", EASY[0]), ("assistant", "Use the Heroku CLI and git.")])
LONG = (
    "I am moving a small company site built with Astro away from a shared host and my manager wants it on Heroku "
    "because the rest of our services already run there, so what are the steps to get the static build deployed?"
)
MIX = {"ok": 0.5, "429": 0.25, "kill": 0.25}
CONTEXT = 8192  # tokens, the server's two slots together: a prompt here is ~1,100


def percentile(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0])
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=24, help="answers in all, a third of them for the routes")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="threads per llama.cpp server")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fallback-real-"))
    docs = copy_pages(home / "docs")
    os.environ.update(
        CITEDOCS_HOME=str(home), CITEDOCS_DATABASE_URL="", CITEDOCS_BACKEND="providers", CITEDOCS_LLM_GRADE="off",
        CITEDOCS_LLM_VERIFY="off", CITEDOCS_LLM_ANSWER="write", CITEDOCS_SUGGESTED_QUESTIONS="off",
        CITEDOCS_LLM_BREAKER_FAILURES="1000",  # each answer meets its own drawn failure, not the breaker
    )
    from citedocs.contract import AskRequest, HistoryTurn
    from citedocs.generate.llm_server import ManagedServer, ServerConfig
    from citedocs.models.llm_file import model_path
    from citedocs.service import Services
    from fault_proxy import FaultProxy

    servers = [ManagedServer(ServerConfig(model=model_path(), threads=args.threads, n_ctx=CONTEXT, log_file=home / f"llama-{n}.log")) for n in (1, 2)]
    for n, server in enumerate(servers, 1):
        server.start()
        os.environ[f"LLAMA_{n}_KEY"] = server.api_key
    Services.open().ingest(docs, "bench", "https://docs.astro.build/en/")

    def endpoint(n: int, name: str, max_tokens: int, base_url: str | None = None, **extra) -> dict:
        return {
            "name": name, "base_url": base_url or servers[n - 1].start(), "model": "qwen2.5-coder-1.5b", "api_key_env": f"LLAMA_{n}_KEY",
            "structured": "llamacpp", "timeout_s": 600, "max_tokens": max_tokens, **extra,
        }

    def open_services(providers: list[dict], routing: str) -> Services:
        os.environ.update(CITEDOCS_LLM_PROVIDERS=json.dumps(providers), CITEDOCS_LLM_ROUTING=routing)
        services = Services.open()
        services.pipeline  # noqa: B018 (reads the settings now)
        return services

    rng = random.Random(args.seed)
    route_answers = max(3, args.answers // 3)
    questions = [(q, []) for q in EASY] + [FOLLOW_UP, (LONG, [])]
    results: dict = {"routes": defaultdict(list), "failures": defaultdict(list)}
    load_before = os.getloadavg()

    # 1. routes -----------------------------------------------------------------------------------
    services = open_services([endpoint(1, "fast", 192, route="fast"), endpoint(2, "strong", 384, route="strong"), {"name": "quotes", "kind": "extractive"}], "on")
    route_rows = []
    for n in range(route_answers):
        question, history = questions[n % len(questions)]
        turns = [HistoryTurn(role=r, content=c) for r, c in history]
        started = time.perf_counter()
        response = services.ask(AskRequest(question=question, corpus="bench", history=turns))
        ms = (time.perf_counter() - started) * 1000
        trace = services.trace(response.trace_id)
        route = trace.get("route") or "gate"
        results["routes"][route].append(ms)
        route_rows.append({"question": question, "route": route, "reasons": trace.get("route_reasons"), "provider": trace.get("provider"),
                           "refused": response.refused, "reason": response.refusal_reason, "ms": round(ms), "usage": trace.get("usage")})
        print(f"route {route:6} {ms:8.0f} ms refused={response.refused} {question[:60]}", flush=True)

    # 2. failures ---------------------------------------------------------------------------------
    relay = FaultProxy(servers[0].base_url.removesuffix("/v1")).start()
    services = open_services([endpoint(1, "primary", 256, relay.base_url, retries=1), endpoint(2, "backup", 256)], "off")
    kinds = rng.choices(list(MIX), weights=list(MIX.values()), k=args.answers - route_answers)
    failure_rows = []
    fell_back = 0
    for n, kind in enumerate(kinds):
        if servers[0].problem():  # killed for the last answer: back, cold, before the clock starts
            servers[0].start()
            relay.upstream = servers[0].base_url.removesuffix("/v1")
        relay.script("429:1" if kind == "429" else "")
        question = EASY[n % len(EASY)]
        started = time.perf_counter()
        final, killed = None, False
        for event in services.ask_events(AskRequest(question=question, corpus="bench")):
            if event.kind == "sentence" and kind == "kill" and not killed:
                os.kill(servers[0].process.pid, signal.SIGKILL)
                killed = True
            if event.kind == "final":
                final = event.response
        ms = (time.perf_counter() - started) * 1000
        trace = services.trace(final.trace_id)
        if trace.get("provider") != "primary":
            fell_back += 1
        results["failures"][kind].append(ms)
        results["failures"]["all"].append(ms)
        failure_rows.append({"question": question, "kind": kind, "killed": killed, "provider": trace.get("provider"), "refused": final.refused,
                             "reason": final.refusal_reason, "ms": round(ms), "attempts": trace.get("provider_attempts")})
        print(f"{kind:5} {ms:8.0f} ms provider={trace.get('provider')} killed={killed} refused={final.refused}", flush=True)
    relay.close()
    for server in servers:
        server.stop()

    failures = len(kinds)
    ok_p50 = percentile(results["failures"]["ok"], 50)
    summary = {
        "command": "python benchmarks/bench_provider_fallback_real.py " + " ".join(sys.argv[1:]),
        "model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M, llama.cpp server (xllamacpp), two servers",
        "threads_per_server": args.threads,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "routes": {r: {"answers": len(v), "share": round(len(v) / route_answers, 3), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)}
                   for r, v in results["routes"].items()},
        "failure_mix": MIX,
        "failures": {k: {"answers": len(v), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95),
                         "extra_p50_ms": None if k in ("ok", "all") or ok_p50 is None or not v else percentile(v, 50) - ok_p50}
                     for k, v in results["failures"].items()},
        "needed_the_second_provider": {"answers": fell_back, "of": failures, "share": round(fell_back / failures, 3) if failures else None},
        "route_answers": route_rows,
        "failure_answers": failure_rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if not k.endswith("_answers")}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
