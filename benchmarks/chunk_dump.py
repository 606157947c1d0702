"""Every chunk a docs folder gives, one JSON line each: id, URL, heading path, content hash.

    python benchmarks/chunk_dump.py PROJECT_OR_DOCS [--format F] [--base-url URL] [--page-urls dir|html] > chunks.jsonl

Reads the docs the way ``citedocs ingest`` would (detected format, the site config's settings and
base URL, else ``https://site.invalid/``) and chunks them (the chunker counts word pieces with the
embedder's tokenizer) without embedding anything, so two versions of a reader can be compared with
``diff``: identical files mean identical citations and identical chunk text. A refused page is one
line naming it and the reason.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citedocs.ingest.chunker import chunk_document
from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import DocumentError

BASE = "https://site.invalid/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", type=Path)
    parser.add_argument("--format")
    parser.add_argument("--base-url")
    parser.add_argument("--page-urls")
    args = parser.parse_args()
    plan = plan_ingest(args.docs, args.format, args.base_url, None, BASE, args.page_urls)
    reader = plan.reader()
    for source in plan.sources():
        try:
            parsed = chunk_document(source.rel_path, source.text, plan.base_url, reader, plan.docs_dir)
        except DocumentError as exc:
            print(json.dumps({"refused": source.rel_path, "reason": str(exc)}))
            continue
        for chunk in parsed.chunks:
            print(json.dumps([chunk.id, chunk.url, chunk.heading_path, chunk.hash], ensure_ascii=False))

if __name__ == "__main__":
    main()
