"""Ingest a docs folder with a named reader, through the Python API.

Until ``citedocs ingest --format`` exists this is how a non-MDX corpus gets indexed, e.g. the
Flask (Sphinx reST) docs before ``citedocs eval-retrieval ... --corpus flask``:

    .venv/bin/python scripts/ingest_with_reader.py ../shared/corpora/flask-docs/docs \\
        --format rst --corpus flask --base-url https://flask.palletsprojects.com/en/stable/
"""

from __future__ import annotations

import argparse
from pathlib import Path

from citedocs.ingest.pipeline import ingest_corpus
from citedocs.ingest.readers import reader_named
from citedocs.service import Services


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--format", required=True, help="reader name, e.g. rst or mdx")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--base-url", required=True)
    args = parser.parse_args()
    services = Services.open()
    report = ingest_corpus(services.store, services.encoder, args.source, args.corpus, args.base_url, reader=reader_named(args.format))
    print(
        f"{args.corpus}: {report.files_parsed}/{report.files_seen} files parsed, {report.added} chunks added, "
        f"{report.changed} changed, {report.removed} removed, {report.unchanged} unchanged in {report.seconds:.1f}s"
    )
    for skipped in report.skipped:
        print(f"skipped {skipped.path}: {skipped.reason}")


if __name__ == "__main__":
    main()
