"""What an answer's LLM calls cost: tokens by provider and model, priced by ``llm_prices``, and
each tenant's spend today against its ``tenant_daily_budget_usd``.

Tokens are the endpoint's own ``usage`` counts; a call whose endpoint reported none is estimated
(``estimated: true`` in the trace) from the text's length. A model missing from the price table
costs 0 (a local model costs nothing per token).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from datetime import datetime, timezone

from .. import config
from ..index.store import Store, TraceFilter
from .base import UsageMeter

SPEND_REREAD_S = 30.0  # how long a tenant's spend read from the traces is trusted (other processes spend too)


def call_cost_usd(model: str, prompt_tokens: int, completion_tokens: int, prices: dict[str, tuple[float, float]]) -> float:
    prompt_price, completion_price = prices.get(model, (0.0, 0.0))
    return (prompt_tokens * prompt_price + completion_tokens * completion_price) / 1_000_000


def usage_summary(meter: UsageMeter, prices: dict[str, tuple[float, float]] | None = None) -> dict:
    """The trace's ``llm_usage``: totals, and per provider and model, with their cost in USD."""
    prices = config.setting("llm_prices") if prices is None else prices
    by_model: dict[tuple[str, str], dict] = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "estimated": False})
    for call in meter.calls:
        row = by_model[(call["provider"], call["model"])]
        row["calls"] += 1
        row["prompt_tokens"] += call["prompt_tokens"]
        row["completion_tokens"] += call["completion_tokens"]
        row["estimated"] = row["estimated"] or call["estimated"]
    models = []
    for (provider, model), row in by_model.items():
        cost = call_cost_usd(model, row["prompt_tokens"], row["completion_tokens"], prices)
        models.append({"provider": provider, "model": model, **row, "cost_usd": round(cost, 8)})
    return {
        "prompt_tokens": sum(m["prompt_tokens"] for m in models),
        "completion_tokens": sum(m["completion_tokens"] for m in models),
        "estimated": any(m["estimated"] for m in models),
        "cost_usd": round(sum(m["cost_usd"] for m in models), 8),
        "by_model": models,
    }


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


class TenantBudgets:
    """Each tenant's LLM spend today (UTC), from its traces' ``llm_usage``, against its budget."""

    def __init__(self, store: Store, clock=time.monotonic) -> None:
        self.store = store
        self.clock = clock
        self._spent: dict[str, tuple[str, float, float]] = {}  # tenant -> (day, usd, read at)
        self._lock = threading.Lock()

    @staticmethod
    def budget(tenant: str) -> float | None:
        budgets = config.setting("tenant_daily_budget_usd")
        return budgets.get(tenant, budgets.get("*"))

    def spent_today(self, tenant: str) -> float:
        day = _today()
        with self._lock:
            cached = self._spent.get(tenant)
            if cached and cached[0] == day and self.clock() - cached[2] < SPEND_REREAD_S:
                return cached[1]
        rows = self.store.trace_rows(TraceFilter(tenant, None, f"{day}T00:00:00"))
        payloads = self.store.trace_payloads([r.trace_id for r in rows]) if rows else {}
        usd = sum(float((p.get("llm_usage") or {}).get("cost_usd") or 0.0) for p in payloads.values())
        with self._lock:
            self._spent[tenant] = (day, usd, self.clock())
        return usd

    def exhausted(self, tenant: str) -> str | None:
        """Why ``tenant`` may not have another LLM answer today, or None while it may."""
        budget = self.budget(tenant)
        if budget is None:
            return None
        spent = self.spent_today(tenant)
        if spent < budget:
            return None
        return f"tenant {tenant!r} has spent US${spent:.4f} of its US${budget:.2f} LLM budget today (UTC)"

    def add(self, tenant: str, usd: float) -> None:
        """Count an answer this process just paid for, before the next reread."""
        with self._lock:
            cached = self._spent.get(tenant)
            if cached and cached[0] == _today():
                self._spent[tenant] = (cached[0], cached[1] + usd, cached[2])
