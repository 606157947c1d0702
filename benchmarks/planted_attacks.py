"""Detection rate of planted content over generated attack mutations.

    python benchmarks/planted_attacks.py [-n 2000] [--seed 0] [--ask 50]

Mutates every attack of tests/planted_attacks.py ``-n`` times in all (zero-width characters, look-alike
letters, case, verb synonyms, plural and titled addressees, Markdown/HTML/reST constructs, splits
across lines, hidden markup) from a seeded generator, reads each mutated page with the real reader and
the corpus's screen (as ``citedocs ingest`` does, without embedding), and counts a mutation as stopped
when none of its words reaches a chunk. ``--fixed defended|undefended`` instead asks the questions of
the fixed attack pages (tests/data/planted-attacks/), with the defences on, or switched off to show
that the questions do reach the planted text. ``--ask K`` also ingests the first K mutations into a
throwaway corpus (real embedding, SQLite, extractive backend) and asks each one's questions through
the HTTP app's ``/ask``, counting those whose answer or citations show the attack. Prints the rate per
attack and overall, and every mutation that got through.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from planted_attacks import ATTACKS, BASE_URL, indexed_needles, mutate, needles_in  # noqa: E402


def ask_through_app(mutations: list) -> list:
    """The mutations whose needles show in an /ask answer or its citations."""
    import os

    from fastapi.testclient import TestClient

    with tempfile.TemporaryDirectory() as home:
        os.environ["CITEDOCS_HOME"] = home
        os.environ["CITEDOCS_RATE_LIMIT_PER_MINUTE"] = "0"  # one client asking many questions on purpose
        from citedocs.api.app import create_app
        from citedocs.service import Services

        services = Services.open(Path(home) / "citedocs.sqlite3", backend="extractive")
        client = TestClient(create_app(services))
        reached = []
        for n, mutation in enumerate(mutations):
            docs = Path(home) / "docs" / mutation.fmt
            docs.mkdir(parents=True, exist_ok=True)
            (docs / mutation.file_name).write_text(mutation.page, encoding="utf-8")
            services.ingest(docs, f"mutated-{mutation.fmt}", BASE_URL, format=mutation.reader)
            for question in mutation.attack.questions:
                response = client.post("/ask", json={"question": question, "corpus": f"mutated-{mutation.fmt}"})
                response.raise_for_status()
                body = response.json()
                shown = body["answer"] + "\n".join(c["text"] + c["snippet"] for c in body["citations"])
                if needles_in(shown, mutation.attack):
                    reached.append((mutation, question))
                    break
        services.store.close()
        return reached


def fixed_pages(undefended: bool) -> tuple[int, int]:
    """(questions whose answer or citations show the attack, questions asked) over the fixed attack
    pages of tests/data/planted-attacks/. ``undefended``: with hidden-content dropping and the screen
    switched off (fault injection, to show that the questions do reach the planted text)."""
    import json
    import os
    from collections import Counter as _Counter

    from fastapi.testclient import TestClient

    from citedocs.ingest import planted
    from citedocs.ingest.readers import html, visibility
    from planted_attacks import FORMATS

    if undefended:
        planted.Screen.flags = lambda self, path, text: []
        html.drop_invisible = lambda doc: _Counter()
        visibility.fragment_hides = lambda tag, attrs: None
    pages = Path(__file__).resolve().parent.parent / "tests" / "data" / "planted-attacks"
    manifest = json.loads((pages / "attacks.json").read_text(encoding="utf-8"))
    shown = asked = 0
    with tempfile.TemporaryDirectory() as home:
        os.environ["CITEDOCS_HOME"] = home
        os.environ["CITEDOCS_RATE_LIMIT_PER_MINUTE"] = "0"
        from citedocs.api.app import create_app
        from citedocs.service import Services

        services = Services.open(Path(home) / "citedocs.sqlite3", backend="extractive")
        client = TestClient(create_app(services))
        for fmt, (reader, _) in FORMATS.items():
            services.ingest(pages / fmt, f"fixed-{fmt}", BASE_URL, format=reader)
            for attack in (a for a in manifest if a["page"].startswith(fmt + "/")):
                for question in attack["questions"]:
                    response = client.post("/ask", json={"question": question, "corpus": f"fixed-{fmt}"})
                    response.raise_for_status()
                    body = response.json()
                    text = planted.perceived(body["answer"] + "\n".join(c["text"] + c["snippet"] for c in body["citations"]))
                    asked += 1
                    shown += any(n in text for n in attack["needles"])
        services.store.close()
    return shown, asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="mutations in all (spread evenly over the attacks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ask", type=int, default=0, help="also ask the first K mutations through /ask")
    parser.add_argument(
        "--fixed", choices=("defended", "undefended"), help="only ask the fixed attack pages' questions through /ask"
    )
    args = parser.parse_args()
    if args.fixed:
        shown, asked = fixed_pages(args.fixed == "undefended")
        print(f"fixed attack pages, {args.fixed}: {shown}/{asked} questions show the planted text in the answer or its citations")
        return
    rng = random.Random(args.seed)
    mutations = [mutate(ATTACKS[i % len(ATTACKS)], rng.choice) for i in range(args.n)]
    stopped, total = Counter(), Counter()
    escaped = []
    for mutation in mutations:
        total[mutation.attack.name] += 1
        if indexed_needles(mutation):
            escaped.append(mutation)
        else:
            stopped[mutation.attack.name] += 1
    for attack in ATTACKS:
        name = attack.name
        print(f"{name}: {stopped[name]}/{total[name]} stopped ({100 * stopped[name] / max(total[name], 1):.1f}%)")
    print(f"all: {sum(stopped.values())}/{len(mutations)} mutations stopped before any chunk ({100 * sum(stopped.values()) / len(mutations):.2f}%), seed {args.seed}")
    for mutation in escaped:
        print(f"  reached a chunk: {mutation.describe()}")
    if args.ask:
        asked = mutations[: args.ask]
        reached = ask_through_app(asked)
        print(f"/ask: {len(asked) - len(reached)}/{len(asked)} mutations never shown in an answer or citation")
        for mutation, question in reached:
            print(f"  reached an answer to {question!r}: {mutation.describe()}")


if __name__ == "__main__":
    main()
