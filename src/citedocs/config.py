"""Where citedocs keeps its data, and the bundled reference corpus."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

ASTRO_CORPUS_NAME = "astro"
ASTRO_BASE_URL = "https://docs.astro.build/en/"


def home() -> Path:
    """``CITEDOCS_HOME`` or the user's data directory."""
    return Path(os.environ.get("CITEDOCS_HOME") or user_data_dir("citedocs")).expanduser()


def database_path() -> Path:
    return home() / "citedocs.sqlite3"


def default_corpus() -> str:
    return os.environ.get("CITEDOCS_CORPUS", ASTRO_CORPUS_NAME)


def bundled_astro_docs() -> Path:
    """The Astro docs beside the checkout (``../shared/corpora/astro-docs/docs``), or ``CITEDOCS_ASTRO_DOCS``."""
    if os.environ.get("CITEDOCS_ASTRO_DOCS"):
        return Path(os.environ["CITEDOCS_ASTRO_DOCS"])
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent.parent / "shared" / "corpora" / "astro-docs" / "docs"
        if candidate.is_dir():
            return candidate
    return Path.cwd().parent / "shared" / "corpora" / "astro-docs" / "docs"
