"""Overload is refused early and fairly: a bounded number of requests in flight, a bounded queue,
and `503 overloaded` with Retry-After for the rest; probes always answer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from citedocs import capacity, config, threads

from conftest import running_server
from fake_llm import running_fake_llm

ANSWERABLE = "How do I deploy my Astro site to Heroku?"


def test_requests_beyond_the_slots_and_queue_are_shed_with_503_and_retry_after(tenant_services):
    """One slot, one queue place, and a model that takes seconds per answer (FAULT INJECTION:
    the fake LLM): of eight simultaneous questions, those that find no slot and no queue place
    get 503 at once instead of waiting behind the others; the health probe still answers."""
    home = tenant_services.store.path.parent
    with running_fake_llm() as (fake, llm_url):
        fake.mode, fake.delay = "slow", 3.0
        settings = {
            "CITEDOCS_BACKEND": "openai",
            "CITEDOCS_LLM_BASE_URL": llm_url,
            "CITEDOCS_CORPUS": "acme-docs",
            "CITEDOCS_MAX_IN_FLIGHT": "1",
            "CITEDOCS_MAX_QUEUE": "1",
            "CITEDOCS_MAX_QUEUE_WAIT_S": "60",
            "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0",
        }
        with running_server(home, **settings) as (base, _):

            def ask(_: int) -> httpx.Response:
                return httpx.post(f"{base}/ask", json={"question": ANSWERABLE}, timeout=120)

            with ThreadPoolExecutor(8) as pool:
                pending = [pool.submit(ask, n) for n in range(8)]
                probe = httpx.get(f"{base}/healthz", timeout=30)
                responses = [f.result() for f in pending]
    assert probe.status_code == 200
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {200, 503}, [r.text for r in responses]
    assert statuses.count(200) >= 1  # the one in flight (and the queued one) are answered
    shed = [r for r in responses if r.status_code == 503]
    assert len(shed) >= 8 - 3  # at most one in flight, one queued (and one more if a slot freed meanwhile)
    for response in shed:
        assert response.json()["error"] == "overloaded" and "capacity" in response.json()["detail"]
        assert response.headers["retry-after"] == "1"


def test_capacity_defaults_follow_the_core_count_and_give_one_caller_a_fair_share(monkeypatch, tmp_path):
    for name in ("CITEDOCS_MAX_IN_FLIGHT", "CITEDOCS_MAX_QUEUE", "CITEDOCS_RATE_LIMIT_PER_MINUTE", "CITEDOCS_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))  # no config file
    monkeypatch.delenv(threads.SERVE_WORKERS_ENV, raising=False)  # a single-process server
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    limits = capacity.capacity()
    assert (limits.max_in_flight, limits.max_queue) == (4, 8)
    per_minute_capacity = 4 * capacity.ASKS_PER_CORE_PER_S * 60
    assert limits.rate_limit_per_minute <= per_minute_capacity * capacity.FAIR_SHARE
    assert config.setting("max_queue_wait_s") < 30  # never a 30-second wait for a slot


def test_waiting_for_a_slot_never_leaks_one_when_waits_time_out_or_clients_leave():
    """Many waits that time out, and waiters cancelled mid-wait (a client gone), while slots are
    being freed: afterwards every slot is free again."""
    import asyncio

    from citedocs.api.middleware import ConcurrencyGate

    async def scenario() -> int:
        gate = ConcurrencyGate(app=None, max_in_flight=2, max_queue=100, max_wait_s=0.01)
        gate._slots = asyncio.Semaphore(2)

        async def hold_briefly() -> None:
            if await gate._acquire_within(0.01):
                try:  # as the gate's __call__ does: a request cancelled while it holds a slot gives it back
                    await asyncio.sleep(0.005)
                finally:
                    gate._slots.release()

        waiters = [asyncio.ensure_future(hold_briefly()) for _ in range(200)]
        await asyncio.sleep(0.01)
        for task in waiters[::3]:
            task.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        return gate._slots._value

    assert asyncio.run(scenario()) == 2
