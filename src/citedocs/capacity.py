"""How much work one server process admits: in-flight slots, wait queue, per-caller rate.

Each comes from its setting when set, else from the core count, so a bigger machine admits
more without configuration and a small one refuses early instead of queueing without bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import config, threads

# Extractive /ask answers per second per core, measured by benchmarks/load_shed.py (see
# docs/benchmarks/latency.md, "Overload"): the per-caller default rate is derived from it.
ASKS_PER_CORE_PER_S = 1.6
# The largest share of the server's capacity one API key (or client IP) gets by default.
FAIR_SHARE = 0.25


@dataclass(frozen=True)
class Capacity:
    max_in_flight: int
    max_queue: int
    max_queue_wait_s: float
    rate_limit_per_minute: int  # 0 = no limit


def capacity() -> Capacity:
    """This process's share: a server with N workers admits ``cores / N`` per worker by default, so the
    whole server works on one request per core (each worker runs one torch thread; threads.py)."""
    in_flight = config.setting("max_in_flight") or threads.cores_per_worker()
    queue = config.setting("max_queue")
    rate = config.setting("rate_limit_per_minute")
    if rate is None:
        rate = max(1, math.floor(threads.usable_cores() * ASKS_PER_CORE_PER_S * 60 * FAIR_SHARE))
    return Capacity(
        max_in_flight=in_flight,
        max_queue=2 * in_flight if queue is None else queue,
        max_queue_wait_s=config.setting("max_queue_wait_s"),
        rate_limit_per_minute=rate,
    )
