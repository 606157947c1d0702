"""Where the Python 3.11 HTML docs (Debian's python3.11-doc, ~530 Sphinx pages) are installed.

Tests that read or serve them skip when the package is absent; in CI (``CI`` set, and `.ci/run`
installs the package) its absence is a failure instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

PUBLIC_BASE_URL = "https://docs.python.org/3.11/"
DEV_CASES = Path(__file__).resolve().parent.parent / "evals" / "python-html-dev.jsonl"


def _locate() -> Path | None:
    default = Path("/usr/share/doc/python3.11/html")
    if (default / "index.html").is_file():
        return default
    try:
        listed = subprocess.run(["dpkg", "-L", "python3.11-doc"], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return None
    index = next((line for line in listed.splitlines() if line.endswith("/html/index.html")), None)
    return Path(index).parent if index else None


def python_docs_html() -> Path:
    """The folder, or a skip (a failure in CI) that says how to install it."""
    folder = _locate()
    if folder is None:
        message = "needs the Python 3.11 HTML docs: apt-get install python3.11-doc"
        if os.environ.get("CI"):
            raise RuntimeError(message)
        pytest.skip(message)
    return folder


def python_docs_chunks(*pages: str) -> dict:
    """The chunks of these pages of the Python docs (paths under the html folder), read by the HTML
    reader and chunked as ingest chunks them, by id."""
    from citedocs.ingest.chunker import chunk_page
    from citedocs.ingest.readers import SourceFile
    from citedocs.ingest.readers.html import HTML

    folder = python_docs_html()
    chunks = {}
    for rel in pages:
        page = HTML.read(SourceFile(rel, (folder / rel).read_text(encoding="utf-8"), folder, PUBLIC_BASE_URL))
        chunks.update((c.id, c) for c in chunk_page(page))
    return chunks
