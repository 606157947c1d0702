"""Is an index searched correctly by a process set to another encoder runtime?

Opens the Astro index in ``HOME`` (read only: nothing is ingested) with whatever
``CITEDOCS_ENCODER_RUNTIME`` the environment sets, and counts how many of the stored top-8 rankings
of ``tests/data/astro-dev-rankings.json`` (20 dev questions x 4 retrieval modes, written from an
fp32 index) a fresh run reproduces. On the fp32 seed index with ``CITEDOCS_ENCODER_RUNTIME=onnx-int8``
every ranking should match, since queries are embedded by the runtime that embedded their corpus.

    CITEDOCS_ENCODER_RUNTIME=onnx-int8 PYTHONPATH=src:tests python docs/decisions/scripts/rankings_across_runtimes.py HOME
"""

from __future__ import annotations

import json
import sys

from citedocs.service import Services
from rankings import RANKINGS_FILE, rankings


def main() -> None:
    services = Services.open(f"{sys.argv[1]}/citedocs.sqlite3")
    print("process runtime:", services.encoder.name, "| corpus pipeline:", services.corpus("astro").pipeline)
    stored = json.loads(RANKINGS_FILE.read_text(encoding="utf-8"))
    current = rankings(services, "astro")
    same = sum(current[mode][question] == stored[mode][question] for mode in stored for question in stored[mode])
    print(f"{same} of {sum(len(v) for v in stored.values())} stored rankings reproduced")


if __name__ == "__main__":
    main()
