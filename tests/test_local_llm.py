"""The real model in the real llama.cpp server, behind a real `citedocs serve --backend local`.

One server for the module (loading the model is the slow part): an answer, a refusal, a follow-up,
a stream, and last a model server killed mid-answer. The promises are the product's, not the
model's quality: every citation is a retrieved chunk, every shown sentence passed the validator,
and a dead model server is a refusal and a 503, never an unvalidated sentence.

Skips when the model is not installed (`make install-llm`); CI installs it and sets
CITEDOCS_TEST_REQUIRE_LLM=1, which turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from citedocs import threads as thread_plan
from conftest import ASTRO_BASE_URL, copy_astro_pages, running_server

CORPUS = "small"
ANSWERABLE = "How do I deploy my Astro site to Heroku?"
OUT_OF_SCOPE = "What are Netlify's bandwidth limits on the free tier?"
# asked by no other test, so no grading prompt of it is in llama.cpp's prompt cache: its answer
# takes seconds, and a kill one second in lands while the model is still grading
UNCACHED = "How do I import YAML files into my Astro components?"
# asked by no other test: with query expansion on, the model first writes the passage it expects
EXPANDED = "How can I try my site on my phone while I work on it?"
TIMEOUT = httpx.Timeout(900.0)  # a 2-core CI machine answers in tens of seconds; a busy one in minutes


def _model_ready() -> str | None:
    import importlib.util

    from citedocs.models.llm_file import ModelFileError, verify_model

    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed"
    try:
        verify_model()
    except ModelFileError as exc:
        return str(exc)
    return None


def require_local_model() -> None:
    """Skips without the local model, or fails where CI demands it (CITEDOCS_TEST_REQUIRE_LLM)."""
    problem = _model_ready()
    if problem:
        if os.environ.get("CITEDOCS_TEST_REQUIRE_LLM"):
            pytest.fail(f"the local model is required here: {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_local_model()
    from citedocs.service import Services

    home = tmp_path_factory.mktemp("llm-home")
    services = Services.open(home / "citedocs.sqlite3")
    services.ingest(copy_astro_pages(home / "docs"), CORPUS, ASTRO_BASE_URL)
    services.store.close()
    env = {"CITEDOCS_BACKEND": "local", "CITEDOCS_CORPUS": CORPUS, "CITEDOCS_DATABASE_URL": "", "CITEDOCS_LLM_TIMEOUT": "600"}
    with running_server(home, ready_timeout_s=600, **env) as (base, log):
        yield base, home


def _trace(base: str, body: dict) -> dict:
    return httpx.get(f"{base}/traces/{body['trace_id']}", timeout=10).json()


def _retrieved(trace: dict) -> set[str]:
    return {r["id"] for r in trace["retrieved"]}


def _events(response) -> list[tuple[str, dict]]:
    events, kind = [], None
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((kind, json.loads(line.removeprefix("data: "))))
    return events


def test_the_local_model_answers_with_quotes_of_the_chunks_it_graded_relevant(server):
    """The local model's default answer style: it grades, the answer quotes (llm_answer = auto)."""
    base, _ = server
    body = httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=TIMEOUT).json()
    trace = _trace(base, body)
    assert trace["backend"] == "local" and trace["prompt_version"] == "extractive_v2+llm_graded"
    assert body["refused"] is False, body["refusal_reason"]
    assert all(g["p_relevant"] is not None for g in trace["grades"])  # real log-probabilities
    graded_relevant = {g["chunk_id"] for g in trace["grades"] if g["kept"]}
    if trace.get("ungraded"):  # grading stopped once it had kept the chunks a quote can use
        assert len(graded_relevant) == 3 and len(trace["grades"]) + len(trace["ungraded"]) == len(trace["retrieved"])
    assert body["citations"] and {c["id"] for c in body["citations"]} <= graded_relevant <= _retrieved(trace)
    texts = {c["id"]: " ".join(c["text"].split()) for c in body["citations"]}
    shown = [d for d in trace["validator_decisions"] if d["action"] != "dropped" and not d["sentence"].startswith("```")]
    assert shown and all(" ".join(d["sentence"].split()) in texts[d["final_ids"][0]] for d in shown)  # the docs' words


def test_an_answers_token_count_is_the_model_servers_own(server):
    """Every grading call's tokens, as llama.cpp's ``usage`` counted them, are in the trace's accounting."""
    base, _ = server
    body = httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=TIMEOUT).json()
    trace = _trace(base, body)
    usage = trace["llm_usage"]
    assert usage["estimated"] is False and trace["tenant"] == "default"
    [local] = usage["by_model"]
    assert local["provider"] == "local" and local["calls"] == len(trace["grades"])
    assert usage["prompt_tokens"] == sum(g["prompt_tokens"] for g in trace["grades"]) > 0
    assert usage["completion_tokens"] == len(trace["grades"])  # one word each (max_tokens = 1)
    assert usage["cost_usd"] == 0.0  # a local model is not in the price table


def test_the_local_model_setup_refuses_a_question_the_docs_do_not_answer(server):
    base, _ = server
    body = httpx.post(f"{base}/ask", json={"question": OUT_OF_SCOPE}, timeout=TIMEOUT).json()
    assert body["refused"] is True and body["citations"] == []
    assert body["answer"].startswith("I can't answer this from the small docs")


def test_a_follow_up_is_rewritten_by_the_local_model(server):
    base, _ = server
    history = [
        {"role": "user", "content": ANSWERABLE},
        {"role": "assistant", "content": "Create a Heroku app and push your site with git."},
    ]
    body = httpx.post(
        f"{base}/ask", json={"question": "and how do I open it in the browser after that?", "history": history}, timeout=TIMEOUT
    ).json()
    trace = _trace(base, body)
    assert trace["rewrite_method"] == "llm" and trace["rewritten_query"] != "and how do I open it in the browser after that?"
    assert {c["id"] for c in body["citations"]} <= _retrieved(trace)


def test_with_query_expansion_the_model_writes_a_passage_that_is_searched_beside_the_question(server, monkeypatch):
    from citedocs.contract import AskRequest
    from citedocs.service import Services

    _, home = server
    monkeypatch.setenv("CITEDOCS_QUERY_EXPANSION", "hyde")
    monkeypatch.setenv("CITEDOCS_DATABASE_URL", "")
    services = Services.open(home / "citedocs.sqlite3", backend="local")  # its own model server
    try:
        response = services.ask(AskRequest(question=EXPANDED, corpus=CORPUS))
        trace = services.trace(response.trace_id)
    finally:
        services.close()
    assert isinstance(trace["expansion"], str) and len(trace["expansion"].split()) >= 5, trace.get("expansion")
    assert trace["latency_ms"]["expand"] > 0 and "retrieve.expansion" in trace["latency_ms"]
    assert {c.id for c in response.citations} <= {r["id"] for r in trace["retrieved"]}


def test_a_stream_shows_only_validated_sentences_then_the_final_answer(server):
    base, _ = server
    with httpx.stream("POST", f"{base}/ask/stream", json={"question": ANSWERABLE}, timeout=TIMEOUT) as response:
        events = _events(response)
    kind, final = events[-1]
    assert kind == "final" and [k for k, _ in events].count("final") == 1
    trace = _trace(base, final)
    sentences = [data for kind, data in events if kind == "sentence"]
    assert all(set(s["ids"]) <= _retrieved(trace) for s in sentences)
    accepted = [d["sentence"] for d in trace["validator_decisions"] if d["action"] != "dropped"]
    assert [s["text"] for s in sentences] == accepted[: len(sentences)]
    if not final["refused"]:
        assert " ".join(s["rendered"] for s in sentences).split() == final["answer"].split()


def test_the_extractive_backends_eval_is_judged_by_the_local_model(server, tmp_path):
    """`citedocs eval --backend extractive --judge llm` starts the local model as the judge only."""
    _, home = server
    cases = tmp_path / "cases.jsonl"
    case = {"id": "heroku", "question": ANSWERABLE, "bucket": "answerable", "should_refuse": False}
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    env = {**os.environ, "CITEDOCS_HOME": str(home), "CITEDOCS_DATABASE_URL": "", "CITEDOCS_LLM_TIMEOUT": "600"}
    command = [sys.executable, "-m", "citedocs.cli", "eval", str(cases), "--corpus", CORPUS, "--backend", "extractive"]
    done = subprocess.run([*command, "--judge", "llm", "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["backend"] == "extractive" and summary["config"]["judge"].startswith("llm-reviewer")
    assert "cite_correctness_llm" in summary["overall"]  # claims were judged


def _model_server_pid(home: Path) -> int:
    """The llama.cpp child of the citedocs server running over ``home``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"citedocs.generate.llm_server" in cmdline and f"CITEDOCS_HOME={home}".encode() in environ:
            return int(entry.name)
    raise AssertionError("no llama.cpp server process found for this citedocs server")


def test_the_model_server_evaluates_prompts_on_every_core_and_writes_on_the_planned_threads(server):
    _, home = server
    args = (Path("/proc") / str(_model_server_pid(home)) / "cmdline").read_bytes().decode().split("\0")
    planned = thread_plan.plan()
    assert args[args.index("--threads") + 1] == str(planned.llama)
    assert args[args.index("--batch-threads") + 1] == str(planned.llama_prompt)


def test_a_model_server_killed_mid_answer_ends_in_a_refusal_and_a_503(server):
    base, home = server
    pid = _model_server_pid(home)
    killer = threading.Timer(1.0, os.kill, (pid, signal.SIGKILL))  # the request is then in grading or generation
    killer.start()
    try:
        with httpx.stream("POST", f"{base}/ask/stream", json={"question": UNCACHED}, timeout=TIMEOUT) as response:
            events = _events(response)
    finally:
        killer.join()
    kind, final = events[-1]
    assert kind == "final" and final["refused"] is True and final["citations"] == []
    assert final["refusal_reason"].startswith("backend_error")
    assert not [data for kind, data in events if kind == "sentence"]
    deadline = time.time() + 10
    while (ready := httpx.get(f"{base}/readyz", timeout=5)).status_code != 503 and time.time() < deadline:
        time.sleep(0.2)
    assert ready.status_code == 503 and "local model server exited" in ready.text
