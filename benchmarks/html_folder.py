"""Time the HTML reader over a built docs folder, and a crawl of it from a loopback static server.

    python benchmarks/html_folder.py /usr/share/doc/python3.11/html [--crawl]

Reading needs no model: it is the reader plus the chunker over every page. ``--crawl`` serves the
folder's parent with ``python -m http.server`` on 127.0.0.1 and crawls it twice with the default
(polite) settings: the first crawl downloads, the second must get 304 everywhere. Nothing is embedded.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from citedocs.ingest.chunker import chunk_page
from citedocs.ingest.crawl import CrawlSettings, crawl
from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.html import HTML


def read_folder(folder: Path) -> None:
    started, cpu = time.monotonic(), time.process_time()
    pages = chunks = noted = 0
    for path in sorted(folder.rglob("*.html")):
        rel = path.relative_to(folder).as_posix()
        page = HTML.read(SourceFile(rel, path.read_text(encoding="utf-8"), folder, "https://example.test/"))
        pages, chunks, noted = pages + 1, chunks + len(chunk_page(page)), noted + bool(page.notes)
    print(
        f"read: {pages} pages -> {chunks} chunks ({noted} generated pages noted) in "
        f"{time.monotonic() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU; load {os.getloadavg()}"
    )


def crawl_folder(folder: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder.parent)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(2)
        with tempfile.TemporaryDirectory() as mirror:
            for label in ("crawl", "re-crawl"):
                load = os.getloadavg()
                report = crawl(f"http://127.0.0.1:{port}/{folder.name}/", Path(mirror), CrawlSettings())
                print(f"{label}: {dict(report.counts())} in {report.seconds:.1f} s; load {load} -> {os.getloadavg()}")
    finally:
        server.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--crawl", action="store_true", help="also crawl it from a loopback server")
    args = parser.parse_args()
    read_folder(args.folder)
    if args.crawl:
        crawl_folder(args.folder)


if __name__ == "__main__":
    main()
