"""The stored rankings that every speed change must reproduce (tests/data/astro-dev-rankings.json).

For a fixed sample of dev questions it records the top chunk ids of each retrieval mode on the
full Astro index. ``test_rankings.py`` compares a fresh run against the file, so thread settings,
index layouts or BM25 engines that are meant to be faster-but-identical are checked to be exactly
that. A change that is *meant* to alter rankings rewrites the file on purpose, with its measured
retrieval numbers in the commit message:

    CITEDOCS_HOME=DIR_WITH_ASTRO_INDEX .venv/bin/python tests/rankings.py --write
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from citedocs.eval.cases import load_cases
from citedocs.retrieve.hybrid import RetrievalConfig

HERE = Path(__file__).resolve().parent
RANKINGS_FILE = HERE / "data" / "astro-dev-rankings.json"
DEV_CASES = HERE.parent / "evals" / "astro-dev.jsonl"
SAMPLE_EVERY = 3  # every third dev question: 20 questions, a few seconds per run
DEPTH = 8
MODES = {
    "bm25": RetrievalConfig(mode="bm25", rerank=False),
    "dense": RetrievalConfig(mode="dense", rerank=False),
    "hybrid": RetrievalConfig(mode="hybrid", rerank=False),
    "hybrid+rerank": RetrievalConfig(mode="hybrid", rerank=True),
}


def sample_questions() -> list[str]:
    return [case.question for case in load_cases(DEV_CASES)[::SAMPLE_EVERY]]


def rankings(services, corpus: str) -> dict[str, dict[str, list[str]]]:
    """{mode: {question: top chunk ids}} on the corpus in ``services``' store."""
    return {
        mode: {
            question: [hit.chunk.id for hit in services.search(question, corpus, DEPTH, config).hits]
            for question in sample_questions()
        }
        for mode, config in MODES.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"rewrite {RANKINGS_FILE.name} from the current index")
    parser.add_argument("--corpus", default="astro")
    args = parser.parse_args()
    from citedocs.service import Services

    current = rankings(Services.open(), args.corpus)
    if args.write:
        RANKINGS_FILE.parent.mkdir(exist_ok=True)
        RANKINGS_FILE.write_text(json.dumps(current, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RANKINGS_FILE}")
        return
    stored = json.loads(RANKINGS_FILE.read_text(encoding="utf-8"))
    changed = [(m, q) for m in stored for q in stored[m] if current.get(m, {}).get(q) != stored[m][q]]
    print(f"{len(changed)} changed rankings" + "".join(f"\n  {m}: {q}" for m, q in changed))
    sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
