"""Users' questions written from docs passages by the bundled 1.5B model (doc2query / InPars recipe).

Passages are the chunks of ingested training corpora (never a held-out one: see ``HELD_OUT``),
sampled in a fixed seeded order, round-robin over the corpora. Each passage is shown to the model
with its units (``sentences.split_units``: sentences, list items, code blocks) numbered; a few-shot
prompt asks for one question a user of the product would type and the number of the unit that
states the answer. The reply is constrained by a JSON schema whose unit number is an ``enum`` of the
passage's prose units, so every record names a real unit of its passage.

Every record is appended to the JSONL file as soon as it is written, so a partial run is usable and
a rerun resumes after the passages already done. Filtering (round-trip retrieval, title-only
questions) is ``build_labels.py``'s job, so the raw file keeps what the model wrote.

    CITEDOCS_HOME=DIR nice -n 5 python scripts/reader/generate_questions.py \
        --corpus flask --corpus vitepress --corpus mkdocs-material --corpus astro \
        --out data/reader/questions.jsonl --limit 3000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import httpx

from citedocs.generate.llm_server import ManagedServer, ServerConfig
from citedocs.index import open_store
from citedocs.models.llm_file import MODEL_NAME, model_path
from citedocs.sentences import split_units
from citedocs.types import Chunk

HELD_OUT = {"click", "jinja", "starlette", "python-html", "python", "citedocs"}
"""Corpora the held-out sets ask about: never a source of training questions."""
SEED = 20261128
MIN_PROSE_UNITS = 2
MIN_UNIT_WORDS = 6
MAX_UNITS = 24  # a longer passage is shown up to here
MAX_UNIT_CHARS = 400  # a longer unit (a code block, mostly) is cut for the prompt
_WORD = re.compile(r"\w+")
# release notes: a list of one-line changes per version, rarely what a user asks about
SKIPPED_PAGES = re.compile(r"(?:^|/)(?:changelog|changes|release-notes|history)(?:[./]|$)", re.IGNORECASE)

SYSTEM = (
    "You write the question a user of a software product would type into its documentation's search box. "
    "You are given one passage of the documentation with its sentences numbered. Write ONE question that the "
    "passage answers, phrased the way a user who has not read the passage would ask it: about a task, a "
    "behaviour, an option or an error, in their own words, not copied from the heading. Then give the number "
    "of the sentence that states the answer. Reply with JSON only."
)
# Few-shot examples about a made-up tool, so no corpus's wording (and no eval question) leaks in.
EXAMPLES = [
    (
        "Page: Configuration > Cache directory\n"
        "[1] Bricks keeps downloaded packages in a cache so repeated builds are fast.\n"
        "[2] By default the cache lives in `~/.cache/bricks`.\n"
        "[3] Set the `BRICKS_CACHE_DIR` environment variable to move it, for example to a larger disk.\n"
        "[4] The cache is safe to delete at any time.",
        {"question": "how can I put the bricks package cache on another drive?", "answer_unit": 3},
    ),
    (
        "Page: Deploying > Health checks\n"
        "[1] The server exposes `/ready` for load balancers.\n"
        "[2] It answers 503 until every worker has loaded its routes, then 200.\n"
        "[3] ```\nhealthcheck:\n  path: /ready\n```",
        {"question": "why does my load balancer get a 503 right after the server starts?", "answer_unit": 2},
    ),
]


def prose_units(chunk: Chunk) -> list[tuple[int, str, bool]]:
    """The chunk's units, numbered from 1, each with whether it is prose an answer may point at."""
    units = []
    for number, unit in enumerate(split_units(chunk.text)[:MAX_UNITS], start=1):
        text = unit.text if len(unit.text) <= MAX_UNIT_CHARS else unit.text[:MAX_UNIT_CHARS] + " …"
        answerable = not unit.is_code and len(_WORD.findall(unit.text)) >= MIN_UNIT_WORDS
        units.append((number, text, answerable))
    return units


def passage_prompt(chunk: Chunk, units: list[tuple[int, str, bool]]) -> str:
    where = " > ".join(dict.fromkeys((chunk.title, *chunk.heading_path)))
    return f"Page: {where}\n" + "\n".join(f"[{n}] {text}" for n, text, _ in units)


def ask(client: httpx.Client, url: str, key: str, prompt: str, choices: list[int]) -> dict:
    messages = [{"role": "system", "content": SYSTEM}]
    for shown, reply in EXAMPLES:
        messages += [{"role": "user", "content": shown}, {"role": "assistant", "content": json.dumps(reply)}]
    messages.append({"role": "user", "content": prompt})
    schema = {
        "type": "object",
        "properties": {"question": {"type": "string", "maxLength": 200}, "answer_unit": {"type": "integer", "enum": choices}},
        "required": ["question", "answer_unit"],
    }
    response = client.post(
        f"{url}/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={
            "model": MODEL_NAME, "messages": messages, "temperature": 0.2, "seed": SEED, "max_tokens": 90,
            "response_format": {"type": "json_schema", "json_schema": {"name": "question", "schema": schema}},
        },
        timeout=300.0,
    )
    response.raise_for_status()
    return json.loads(response.json()["choices"][0]["message"]["content"])


def sampled(store, corpora: list[str]) -> list[tuple[str, Chunk]]:
    """Every usable chunk of every corpus, each corpus in its own seeded order, interleaved round-robin."""
    orders = []
    for corpus in corpora:
        ids = sorted(store.chunk_hashes(corpus))
        random.Random(f"{SEED}:{corpus}").shuffle(ids)
        chunks = [
            c for c in store.get_chunks(corpus, ids)
            if not SKIPPED_PAGES.search(c.doc_path) and sum(a for *_, a in prose_units(c)) >= MIN_PROSE_UNITS
        ]
        by_id = {c.id: c for c in chunks}
        orders.append([(corpus, by_id[i]) for i in ids if i in by_id])
    out = []
    for row in range(max(map(len, orders), default=0)):
        out += [order[row] for order in orders if row < len(order)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", required=True, help="an ingested training corpus (repeat)")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file, appended to (resumes)")
    parser.add_argument("--limit", type=int, default=3000, help="stop when the file holds this many records")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    args = parser.parse_args()
    if leaked := HELD_OUT & set(args.corpus):
        parser.error(f"held-out corpora cannot be a source of training questions: {sorted(leaked)}")
    store = open_store(None)
    done = set()
    if args.out.is_file():
        done = {(r["corpus"], r["chunk_hash"]) for r in map(json.loads, args.out.read_text(encoding="utf-8").splitlines())}
    todo = [(corpus, c) for corpus, c in sampled(store, args.corpus) if (corpus, c.hash) not in done]
    print(f"{len(done)} records already; {len(todo)} passages left to sample from", flush=True)
    server = ManagedServer(ServerConfig(model=model_path(), threads=args.threads, n_ctx=8192, poll=0))
    url = server.start()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    written, started = len(done), time.monotonic()
    with httpx.Client() as client, args.out.open("a", encoding="utf-8") as out:
        for corpus, chunk in todo:
            if written >= args.limit:
                break
            units = prose_units(chunk)
            choices = [n for n, _, answerable in units if answerable]
            try:
                reply = ask(client, url, server.api_key, passage_prompt(chunk, units), choices)
            except (httpx.HTTPError, json.JSONDecodeError, KeyError) as exc:
                print(f"skip {corpus}/{chunk.id}: {exc}", file=sys.stderr, flush=True)
                continue
            number = reply["answer_unit"]
            record = {
                "corpus": corpus, "chunk_id": chunk.id, "chunk_hash": chunk.hash, "doc_path": chunk.doc_path,
                "url": chunk.url, "title": chunk.title, "heading_path": list(chunk.heading_path),
                "question": reply["question"].strip(), "answer_unit_index": number - 1,
                "answer_unit": split_units(chunk.text)[number - 1].text, "generator": MODEL_NAME,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            written += 1
            rate = (written - len(done)) / max(1e-9, time.monotonic() - started) * 3600
            print(f"{written}/{args.limit} ({rate:.0f}/h) {corpus}: {record['question']}", flush=True)
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
