"""False positives of the planted-content screen: flagged sentences on real docs, per 100k sentences.

    python benchmarks/planted_false_positives.py [--list] [DOCS ...]

With no DOCS: every shared corpus (``evals/corpora/*/docs``) and the Python 3.11 HTML docs
(``/usr/share/doc/python3.11/html``, Debian's python3.11-doc) when installed. Each page is read by
the reader ``citedocs ingest`` would pick (the same plan as ``benchmarks/chunk_dump.py``), and every
block is screened exactly as ingest screens it, with the strictest screen: no allowed hosts, not
even the corpus's own site, nothing approved. Nothing is embedded. ``--list`` prints each flagged
sentence with its page and reason, for review. Each corpus's line also says the time spent
screening (the ingest cost of the screen, parsing included), per page.

Runs against any version of ``citedocs`` on PYTHONPATH, so the figure before a change to the rules
and after it come from the same script.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.planted import Screen
from citedocs.sentences import split_units

SHARED = Path(__file__).resolve().parent.parent / "evals" / "corpora"  # beside the checkout
PYTHON_HTML = Path("/usr/share/doc/python3.11/html")


def default_folders() -> list[Path]:
    folders = sorted(p for p in SHARED.glob("*/docs") if p.is_dir())
    if (PYTHON_HTML / "index.html").is_file():
        folders.append(PYTHON_HTML)
    return folders


def sentence_count(text: str) -> int:
    """Prose sentences and code lines (fence markers not counted): one count for every version."""
    count = 0
    for unit in split_units(text):
        lines = unit.text.splitlines() if unit.is_code else [unit.text]
        count += sum(1 for line in lines if line.strip() and not line.startswith("```"))
    return count


def screen_folder(docs: Path, screen: Screen) -> tuple[int, list, int, float]:
    """(sentences read, flagged sentences, pages, seconds spent screening) over a docs folder."""
    sentences, flagged, pages, seconds = 0, [], 0, 0.0
    for page in plan_ingest(docs, None, None, None, "https://site.invalid/", None).pages():
        sentences += sum(sentence_count(block.text) for section in page.sections for block in section.blocks)
        started = time.perf_counter()
        flagged += screen.withhold(page)[1]
        seconds += time.perf_counter() - started
        pages += 1
    return sentences, flagged, pages, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", nargs="*", type=Path)
    parser.add_argument("--list", action="store_true", help="print every flagged sentence")
    args = parser.parse_args()
    total_sentences = total_flagged = 0
    for docs in args.docs or default_folders():
        sentences, flagged, pages, seconds = screen_folder(docs, Screen())
        name = {"docs": docs.parent.name, "html": "python-html"}.get(docs.name, docs.name)
        rate = 100_000 * len(flagged) / max(sentences, 1)
        cost = f"screen {seconds:.1f} s, {1000 * seconds / max(pages, 1):.1f} ms/page"
        print(f"{name}: {len(flagged)} flagged of {sentences:,} sentences ({rate:.1f} per 100k); {cost}")
        if args.list:
            for flag in flagged:
                print(f"  {flag.path}: {flag.reason}: {flag.sentence!r}")
        total_sentences += sentences
        total_flagged += len(flagged)
    rate = 100_000 * total_flagged / max(total_sentences, 1)
    print(f"all: {total_flagged} flagged of {total_sentences:,} sentences ({rate:.1f} per 100k)")


if __name__ == "__main__":
    main()
