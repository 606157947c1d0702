"""Every chunk's id, URL, heading path and text digest, as ``citedocs ingest`` would make them, one per line.

    python benchmarks/chunk_urls.py DOCS [--format F] [--base-url URL] > before.tsv

For diffing a reader change over a whole corpus: run it before and after, then ``diff``. It reads and
chunks (the chunker counts word pieces with the embedder's tokenizer) but embeds nothing.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

from citedocs.ingest.boundary import walk_docs
from citedocs.ingest.chunker import chunk_page
from citedocs.ingest.detect import plan_ingest
from citedocs.ingest.document import DocumentError
from citedocs.ingest.readers import SourceFile, for_site, reader_named

DEFAULT_BASE = "https://site.invalid/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", type=Path)
    parser.add_argument("--format")
    parser.add_argument("--base-url")
    args = parser.parse_args()
    plan = plan_ingest(args.docs, args.format, args.base_url, None, DEFAULT_BASE)
    print(f"# {plan.describe()}")
    reader = for_site(reader_named(plan.format), plan.site)
    files, _ = walk_docs(plan.docs_dir, tuple(reader.suffixes))
    for file in files:
        rel = file.relative_to(plan.docs_dir).as_posix()
        try:
            page = reader.read(SourceFile(rel, file.read_text(encoding="utf-8", errors="replace"), plan.docs_dir, plan.base_url))
        except DocumentError as exc:
            print(f"{rel}\trefused: {exc}")
            continue
        for chunk in chunk_page(page):
            digest = hashlib.sha256(chunk.text.encode()).hexdigest()[:12]
            print(f"{chunk.id}\t{chunk.url}\t{' > '.join(chunk.heading_path)}\t{digest}")


if __name__ == "__main__":
    main()
