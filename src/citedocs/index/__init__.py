"""Index storage: the ``Store`` interface (``store``) and its two backends, embedded SQLite
(``sqlite``) and PostgreSQL + pgvector (``postgres``), with the BM25 scorer they share (``bm25``,
``fts5_postings``) and the stored form of the reranker's token vectors (``token_codec``).

Layer: under every pipeline stage, beside ``models``. May import only the shared modules
(``config``, ``text``, ``types``); never a model, a stage, the service or an adapter.
"""

from __future__ import annotations

from pathlib import Path

from .. import config
from .store import IngestChanges, Store, StoreUnavailable


def open_store(location: str | Path | None = None) -> Store:
    """The store at ``location`` (a postgresql:// URL or a SQLite file path), else the configured one:
    PostgreSQL when ``database_url`` is set, otherwise the SQLite file in CITEDOCS_HOME."""
    from_setting = location is None
    if location is None:
        location = config.setting("database_url") or config.database_path()
    if not str(location).startswith(("postgresql://", "postgres://")):
        from .sqlite import SQLiteStore

        return SQLiteStore(Path(location))
    try:
        from .postgres import PostgresStore
    except ImportError as exc:
        raise StoreUnavailable(
            f"a PostgreSQL store was asked for but its driver is missing ({exc});"
            " install it with: pip install 'citedocs[postgres]'"
        ) from exc
    try:
        return PostgresStore(str(location))
    except StoreUnavailable as exc:
        if not from_setting:
            raise
        raise StoreUnavailable(f"{exc} (the database_url setting, CITEDOCS_DATABASE_URL or database_url in the config file)") from exc


def copy_corpus(source: Store, target: Store, corpus: str) -> int:
    """Make ``target``'s copy of the corpus identical to ``source``'s, vectors included (no
    re-embedding), in one target transaction; returns the number of chunks copied."""
    info = source.get_corpus(corpus)
    if info is None:
        raise KeyError(corpus)
    chunks = list(source.export_chunks(corpus))
    documents = source.documents(corpus)
    kept = {chunk.id for chunk, _ in chunks}
    target.apply_ingest(
        IngestChanges(
            corpus=info,
            upsert_chunks=chunks,
            delete_chunk_ids=[i for i in target.chunk_hashes(corpus) if i not in kept],
            upsert_documents=list(documents.values()),
            delete_document_paths=[p for p in target.documents(corpus) if p not in documents],
        )
    )
    return len(chunks)
