"""Embedded store: one SQLite file with FTS5 for BM25 and float32 vectors as blobs.

Each corpus has its own FTS5 table (``fts_<hash of the name>``): FTS5 computes BM25's statistics
(document count, average field lengths, document frequencies) over a whole table, so with one
shared table a corpus's rankings changed whenever another corpus, perhaps another tenant's, was
ingested. A database written with the earlier single ``chunks_fts`` table is split on open.

BM25 top-k queries are answered by an in-memory impact index (``bm25.py``) built from the FTS5
table's own tokens and cached per corpus version like the vector matrix: FTS5 ranks every chunk
matching any query term, which at 100k chunks took 421 ms a query. The scores and their order are
FTS5's, bit for bit; phrases of several tokens (which need positions) still go to FTS5.

Nearest-vector search is exact (one matrix product over the corpus' vectors, kept in memory and
reloaded when the corpus version changes); at the sizes one machine serves that beats an ANN index.

Every ingest is one ``BEGIN IMMEDIATE`` transaction, so a killed or failed ingest leaves the
previous index exactly as it was (SQLite rolls the journal back on the next open).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..text import fts_match_expression, search_terms
from ..types import Chunk, ChunkId
from .bm25 import FIELD_WEIGHTS, BM25Index
from .fts5_postings import Fts5Tokenizer, read_postings
from .store import (
    ADMIN_ACTION_COLUMNS,
    JOB_COLUMNS,
    KEY_COLUMNS,
    SOURCE_COLUMNS,
    AdminAction,
    ApiKey,
    CorpusSource,
    SyncJob,
    job_from_row,
    job_row_values,
    source_from_row,
    ChunkVectors,
    CorpusInfo,
    CorpusOwnedByOtherTenant,
    DocumentRecord,
    INSIGHTS_SQL,
    TRACE_COLUMNS_INDEX,
    DROPPED_INDEXES,
    IngestChanges,
    StoreFull,
    TraceColumns,
    TraceFilter,
    TraceRow,
    ingest_lost,
    pause_mid_write_if_asked,
    shared_tables,
    trace_lost,
)
from .token_codec import PackedTokens

SCHEMA = """
CREATE TABLE IF NOT EXISTS corpora (
    name TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    source_dir TEXT NOT NULL,
    version TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT 'default'
);
CREATE TABLE IF NOT EXISTS documents (
    corpus TEXT NOT NULL,
    path TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    chunk_ids TEXT NOT NULL,
    PRIMARY KEY (corpus, path)
);
CREATE TABLE IF NOT EXISTS chunks (
    rid INTEGER PRIMARY KEY,
    corpus TEXT NOT NULL,
    id TEXT NOT NULL,
    doc_path TEXT NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,
    anchor TEXT NOT NULL,
    anchor_path TEXT NOT NULL,
    url TEXT NOT NULL,
    text TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    embedding BLOB NOT NULL,
    language TEXT NOT NULL DEFAULT '',
    UNIQUE (corpus, id)
);
CREATE TABLE IF NOT EXISTS chunk_tokens (
    rid INTEGER PRIMARY KEY,
    n_tokens INTEGER NOT NULL,
    vectors BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    created_at TEXT NOT NULL,
    payload TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT 'default',
    question TEXT,
    refused INTEGER,
    reason TEXT,
    latency_ms REAL,
    question_vector BLOB
);
"""
SCHEMA += shared_tables(serial_key="INTEGER PRIMARY KEY", blob="BLOB")

# Columns added after the first release: (table, column, definition) for databases created before.
_ADDED_COLUMNS = (
    ("corpora", "tenant", "TEXT NOT NULL DEFAULT 'default'"),
    ("traces", "tenant", "TEXT NOT NULL DEFAULT 'default'"),
    ("api_keys", "scope", "TEXT NOT NULL DEFAULT 'full'"),
    ("api_keys", "origins", "TEXT NOT NULL DEFAULT ''"),
    # the columns insights read, beside the payload (NULL ``refused``: a trace not summarised yet)
    ("traces", "question", "TEXT"),
    ("traces", "refused", "INTEGER"),
    ("traces", "reason", "TEXT"),
    ("traces", "latency_ms", "REAL"),
    ("traces", "question_vector", "BLOB"),
    ("chunks", "language", "TEXT NOT NULL DEFAULT ''"),  # its page's language ('' = written before it was kept)
)

_FTS_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
    title, headings, body, tokenize = "porter unicode61 tokenchars '_'"
)"""
_LEGACY_FTS = "chunks_fts"  # one table for every corpus, with a ``corpus`` column (before per-corpus tables)


def fts_table(corpus: str) -> str:
    """The name of the corpus's FTS5 table (a hash, so any corpus name makes a safe identifier)."""
    return "fts_" + hashlib.sha256(corpus.encode("utf-8")).hexdigest()[:24]
_CHUNK_COLUMNS = "id, doc_path, title, heading_path, anchor, anchor_path, url, text, token_count, language"


def _row_to_chunk(row: sqlite3.Row) -> Chunk:
    return Chunk(
        id=ChunkId(row["id"]),
        doc_path=row["doc_path"],
        title=row["title"],
        heading_path=tuple(json.loads(row["heading_path"])),
        anchor=row["anchor"],
        anchor_path=tuple(json.loads(row["anchor_path"])),
        url=row["url"],
        text=row["text"],
        token_count=row["token_count"],
        language=row["language"],
    )


class SQLiteStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        for table, column, definition in _ADDED_COLUMNS:
            existing = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in existing:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
        self._db.execute("CREATE INDEX IF NOT EXISTS traces_created_at ON traces (created_at)")
        for index in DROPPED_INDEXES:
            self._db.execute(f"DROP INDEX IF EXISTS {index}")
        for index in TRACE_COLUMNS_INDEX:
            self._db.execute(index)
        self._db.execute("CREATE INDEX IF NOT EXISTS traces_unsummarised ON traces (trace_id) WHERE refused IS NULL")
        self._db.execute("CREATE INDEX IF NOT EXISTS feedback_trace ON feedback (trace_id)")
        self._summarise_older_traces()
        self._split_legacy_fts()
        self._matrices: dict[str, tuple[str, list[ChunkId], np.ndarray]] = {}  # corpus -> (version, ids, vectors)
        self._bm25: dict[str, tuple[tuple[str, str], BM25Index]] = {}  # corpus -> ((version, pipeline), index)
        self._bm25_build = threading.Lock()  # one build at a time; the store's lock stays free meanwhile
        self._tokenizer = Fts5Tokenizer(_FTS_TABLE)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tables(self) -> set[str]:
        return {r["name"] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _split_legacy_fts(self) -> None:
        """Move the rows of the shared FTS5 table into per-corpus tables (no re-embedding), once."""
        if _LEGACY_FTS not in self._tables():
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            if _LEGACY_FTS not in self._tables():  # another process split it while this one waited
                db.execute("ROLLBACK")
                return
            corpora = [r["corpus"] for r in db.execute(f"SELECT DISTINCT corpus FROM {_LEGACY_FTS}")]
            for corpus in corpora:
                table = fts_table(corpus)
                db.execute(_FTS_TABLE.format(table=table))
                db.execute(
                    f"INSERT INTO {table} (rowid, title, headings, body)"
                    f" SELECT rowid, title, headings, body FROM {_LEGACY_FTS} WHERE corpus = ? ORDER BY rowid",
                    (corpus,),
                )
            db.execute(f"DROP TABLE {_LEGACY_FTS}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # corpora and documents -------------------------------------------------------------
    def list_corpora(self, tenant: str | None = None) -> list[CorpusInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM corpora WHERE ? IS NULL OR tenant = ? ORDER BY name", (tenant, tenant)
            ).fetchall()
        return [CorpusInfo(**dict(r)) for r in rows]

    def get_corpus(self, name: str) -> CorpusInfo | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM corpora WHERE name = ?", (name,)).fetchone()
        return CorpusInfo(**dict(row)) if row else None

    def documents(self, corpus: str) -> dict[str, DocumentRecord]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM documents WHERE corpus = ?", (corpus,)).fetchall()
        return {
            r["path"]: DocumentRecord(r["path"], r["file_hash"], tuple(json.loads(r["chunk_ids"]))) for r in rows
        }

    def chunk_hashes(self, corpus: str) -> dict[ChunkId, str]:
        with self._lock:
            rows = self._db.execute("SELECT id, content_hash FROM chunks WHERE corpus = ?", (corpus,)).fetchall()
        return {ChunkId(r["id"]): r["content_hash"] for r in rows}

    def apply_ingest(self, changes: IngestChanges) -> None:
        corpus = changes.corpus.name
        with self._lock, self._full_disk(*ingest_lost(corpus)):
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                owner = db.execute("SELECT tenant FROM corpora WHERE name = ?", (corpus,)).fetchone()
                if owner and owner["tenant"] != changes.corpus.tenant:
                    raise CorpusOwnedByOtherTenant(
                        f"corpus {corpus!r} belongs to tenant {owner['tenant']!r}; pick another corpus name"
                    )
                db.execute(_FTS_TABLE.format(table=fts_table(corpus)))
                for chunk_id in changes.delete_chunk_ids:
                    self._delete_chunk(corpus, chunk_id)
                for n, (chunk, vectors) in enumerate(changes.upsert_chunks):
                    self._delete_chunk(corpus, chunk.id)
                    self._insert_chunk(corpus, chunk, vectors)
                    pause_mid_write_if_asked(n, n + 1, len(changes.upsert_chunks))
                db.executemany(
                    "DELETE FROM documents WHERE corpus = ? AND path = ?",
                    [(corpus, p) for p in changes.delete_document_paths],
                )
                db.executemany(
                    "INSERT OR REPLACE INTO documents (corpus, path, file_hash, chunk_ids) VALUES (?, ?, ?, ?)",
                    [(corpus, d.path, d.file_hash, json.dumps(d.chunk_ids)) for d in changes.upsert_documents],
                )
                info = changes.corpus
                count = db.execute("SELECT count(*) FROM chunks WHERE corpus = ?", (corpus,)).fetchone()[0]
                db.execute(
                    "INSERT OR REPLACE INTO corpora (name, base_url, source_dir, version, pipeline, chunk_count,"
                    " updated_at, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        info.name, info.base_url, info.source_dir, info.version, info.pipeline, count,
                        info.updated_at, info.tenant,
                    ),
                )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite has rolled back by itself after some errors (a full disk among them)
                    db.execute("ROLLBACK")
                raise

    @contextmanager
    def _full_disk(self, lost: str, then: str = "") -> Iterator[None]:
        """A write that finds the disk full (SQLITE_FULL; it was rolled back) raises StoreFull."""
        try:
            yield
        except sqlite3.Error as exc:
            if exc.sqlite_errorcode == sqlite3.SQLITE_FULL:
                raise StoreFull(f"the index ({self.path})", lost, then) from exc
            raise

    def _delete_chunk(self, corpus: str, chunk_id: ChunkId) -> None:
        row = self._db.execute("SELECT rid FROM chunks WHERE corpus = ? AND id = ?", (corpus, chunk_id)).fetchone()
        if row:
            self._db.execute("DELETE FROM chunks WHERE rid = ?", (row["rid"],))
            self._db.execute(f"DELETE FROM {fts_table(corpus)} WHERE rowid = ?", (row["rid"],))
            self._db.execute("DELETE FROM chunk_tokens WHERE rid = ?", (row["rid"],))

    def _insert_chunk(self, corpus: str, chunk: Chunk, vectors: ChunkVectors) -> None:
        cursor = self._db.execute(
            "INSERT INTO chunks (corpus, id, doc_path, title, heading_path, anchor, anchor_path, url, text,"
            " token_count, content_hash, embedding, language) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                corpus,
                chunk.id,
                chunk.doc_path,
                chunk.title,
                json.dumps(chunk.heading_path),
                chunk.anchor,
                json.dumps(chunk.anchor_path),
                chunk.url,
                chunk.text,
                chunk.token_count,
                chunk.hash,
                np.asarray(vectors.sentence, dtype=np.float32).tobytes(),
                chunk.language,
            ),
        )
        if vectors.tokens is not None:
            self._db.execute(
                "INSERT INTO chunk_tokens (rid, n_tokens, vectors) VALUES (?, ?, ?)",
                (cursor.lastrowid, vectors.tokens.rows, vectors.tokens.data),
            )
        self._db.execute(
            f"INSERT INTO {fts_table(corpus)} (rowid, title, headings, body) VALUES (?, ?, ?, ?)",
            (
                cursor.lastrowid,
                " ".join(search_terms(chunk.title)),
                " ".join(search_terms(" ".join(chunk.heading_path))),
                " ".join(search_terms(chunk.text)),
            ),
        )

    # retrieval ---------------------------------------------------------------------------
    def get_chunks(self, corpus: str, ids: list[ChunkId]) -> list[Chunk]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE corpus = ? AND id IN ({marks})", (corpus, *ids)
            ).fetchall()
        by_id = {r["id"]: _row_to_chunk(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def lexical_search(
        self, corpus: str, terms: list[str], limit: int, match_all: bool = False
    ) -> list[tuple[ChunkId, float]]:
        if not terms:
            return []
        phrases = self._tokenizer.tokens(terms)
        if any(len(phrase) != 1 for phrase in phrases):  # adjacency needs FTS5's positions
            return self.fts5_search(corpus, terms, limit, match_all)
        index = self.bm25_index(corpus)
        return index.top_k(phrases, limit, match_all) if index else []

    def fts5_search(
        self, corpus: str, terms: list[str], limit: int, match_all: bool = False
    ) -> list[tuple[ChunkId, float]]:
        """``lexical_search`` by FTS5's own ``bm25()``: phrases of several tokens, and the reference
        the impact index is tested against."""
        if not terms:
            return []
        weights = ", ".join(str(w) for w in FIELD_WEIGHTS)  # title, heading path, body
        table = fts_table(corpus)
        with self._lock:
            if table not in self._tables():  # a corpus never ingested
                return []
            rows = self._db.execute(
                f"SELECT c.id AS id, bm25({table}, {weights}) AS score FROM {table}"
                f" JOIN chunks c ON c.rid = {table}.rowid"
                f" WHERE {table} MATCH ? ORDER BY score LIMIT ?",
                (fts_match_expression(terms, match_all), limit),
            ).fetchall()
        # FTS5's bm25() is "lower is better"; flip it so every stage reports higher = better.
        return [(ChunkId(r["id"]), -float(r["score"])) for r in rows]

    def bm25_index(self, corpus: str) -> BM25Index | None:
        """The corpus's impact index, rebuilt when its version or pipeline changed (None: no such corpus)."""
        key = self._corpus_key(corpus)
        cached = self._bm25.get(corpus)
        if cached and cached[0] == key:
            return cached[1]
        with self._bm25_build:
            table = fts_table(corpus)
            with self._lock:
                if table not in self._tables():
                    return None
                # one read transaction: the rows and the version they are cached under agree
                self._db.execute("BEGIN")
                try:
                    key = self._corpus_key(corpus)
                    cached = self._bm25.get(corpus)
                    if cached and cached[0] == key:
                        return cached[1]
                    rows = self._db.execute(
                        f"SELECT c.id, f.title, f.headings, f.body FROM {table} f"
                        " JOIN chunks c ON c.rid = f.rowid ORDER BY f.rowid"
                    ).fetchall()
                finally:
                    self._db.execute("COMMIT")
            index = BM25Index.from_postings(read_postings(rows, self._tokenizer))
            self._bm25[corpus] = (key, index)
            return index

    def _corpus_key(self, corpus: str) -> tuple[str, str]:
        with self._lock:
            row = self._db.execute("SELECT version, pipeline FROM corpora WHERE name = ?", (corpus,)).fetchone()
        return (row["version"], row["pipeline"]) if row else ("", "")

    def dense_search(self, corpus: str, query_vector: np.ndarray, limit: int) -> list[tuple[ChunkId, float]]:
        ids, matrix = self._corpus_matrix(corpus)
        if not ids or limit <= 0:
            return []
        scores = matrix @ query_vector
        limit = min(limit, len(ids))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.argsort(-scores[top])]
        return [(ids[i], float(scores[i])) for i in top]

    def _corpus_matrix(self, corpus: str) -> tuple[list[ChunkId], np.ndarray]:
        with self._lock:
            row = self._db.execute("SELECT version FROM corpora WHERE name = ?", (corpus,)).fetchone()
            version = row["version"] if row else ""
            cached = self._matrices.get(corpus)
            if cached is None or cached[0] != version:
                rows = self._db.execute(
                    "SELECT id, embedding FROM chunks WHERE corpus = ? ORDER BY rid", (corpus,)
                ).fetchall()
                ids = [ChunkId(r["id"]) for r in rows]
                matrix = np.frombuffer(b"".join(r["embedding"] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                cached = self._matrices[corpus] = (version, ids, matrix)
        return cached[1], cached[2]

    def export_chunks(self, corpus: str) -> Iterator[tuple[Chunk, ChunkVectors]]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join('c.' + c for c in _CHUNK_COLUMNS.split(', '))}, c.embedding AS embedding,"
                " t.n_tokens AS n_tokens, t.vectors AS token_vectors FROM chunks c"
                " LEFT JOIN chunk_tokens t ON t.rid = c.rid WHERE c.corpus = ? ORDER BY c.rid",
                (corpus,),
            ).fetchall()
        for r in rows:
            tokens = None if r["token_vectors"] is None else PackedTokens(bytes(r["token_vectors"]), r["n_tokens"])
            yield _row_to_chunk(r), ChunkVectors(np.frombuffer(r["embedding"], dtype=np.float32), tokens)

    def token_vectors(self, corpus: str, ids: list[ChunkId]) -> dict[ChunkId, PackedTokens]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT c.id AS id, t.n_tokens AS n, t.vectors AS vectors FROM chunks c"
                f" JOIN chunk_tokens t ON t.rid = c.rid WHERE c.corpus = ? AND c.id IN ({marks})",
                (corpus, *ids),
            ).fetchall()
        return {ChunkId(r["id"]): PackedTokens(bytes(r["vectors"]), r["n"]) for r in rows}

    # traces and feedback ---------------------------------------------------------------------
    def save_trace(self, trace_id: str, corpus: CorpusInfo, created_at: str, payload: dict) -> None:
        columns = TraceColumns.of(payload)
        with self._lock, self._full_disk(*trace_lost(trace_id)):
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT OR REPLACE INTO traces (trace_id, corpus, created_at, payload, tenant, question, refused,"
                    " reason, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (trace_id, corpus.name, created_at, json.dumps(payload), corpus.tenant, *columns.row()),
                )
                self._write_citations(trace_id, corpus.name, corpus.tenant, created_at, columns)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite has rolled back by itself after some errors (a full disk among them)
                    db.execute("ROLLBACK")
                raise

    def _write_citations(self, trace_id: str, corpus: str, tenant: str, created_at: str, columns: TraceColumns) -> None:
        self._db.execute("DELETE FROM trace_citations WHERE trace_id = ?", (trace_id,))
        self._db.executemany(
            "INSERT INTO trace_citations (trace_id, tenant, corpus, created_at, chunk_id, content_hash) VALUES (?, ?, ?, ?, ?, ?)",
            [(trace_id, tenant, corpus, created_at, cid, digest) for cid, digest in columns.citations],
        )

    def _summarise_older_traces(self) -> None:
        """Fill the insights columns of traces an older citedocs wrote (payload only), in batches."""
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT trace_id, corpus, tenant, created_at, payload FROM traces WHERE refused IS NULL LIMIT 1000"
                ).fetchall()
                if not rows:
                    return
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for row in rows:
                        columns = TraceColumns.of(json.loads(row["payload"]))
                        self._db.execute(
                            "UPDATE traces SET question = ?, refused = ?, reason = ?, latency_ms = ? WHERE trace_id = ?",
                            (*columns.row(), row["trace_id"]),
                        )
                        self._write_citations(row["trace_id"], row["corpus"], row["tenant"], row["created_at"], columns)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    def trace_rows(self, where: TraceFilter, limit: int | None = None) -> list[TraceRow]:
        rows = self._insights_read(INSIGHTS_SQL["rows"].render(where), limit)
        return [TraceRow(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def insights_rows(self, where: TraceFilter, queries: Sequence[str], limit: int | None = None) -> dict[str, list[tuple]]:
        self._summarise_older_traces()  # traces an older process wrote since this store opened
        return {query: self._insights_read(INSIGHTS_SQL[query].render(where), limit) for query in queries}

    def _insights_read(self, statement: tuple[str, tuple], limit: int | None) -> list[tuple]:
        sql, params = statement
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None  # plain tuples: 100k rows build no Row objects
            return cursor.execute(
                sql + (" LIMIT ?" if limit is not None else ""), (*params, *(() if limit is None else (limit,)))
            ).fetchall()

    def citing_traces(self, where: TraceFilter, corpus: str, chunk_ids: list[str]) -> list[tuple]:
        rows: list[tuple] = []
        with self._lock:
            cursor = self._db.cursor()
            cursor.row_factory = None
            for start in range(0, len(chunk_ids), 500):
                batch = chunk_ids[start : start + 500]
                sql, params = INSIGHTS_SQL["citing"].render(where, chunk_ids=",".join("?" * len(batch)))
                rows += cursor.execute(sql, (*params, corpus, *batch)).fetchall()
        return sorted(rows, key=lambda r: (r[1], r[0]), reverse=True) if len(chunk_ids) > 500 else rows

    def _by_trace_id(self, column: str, trace_ids: list[str]) -> list[sqlite3.Row]:
        rows = []
        with self._lock:
            for start in range(0, len(trace_ids), 500):
                batch = trace_ids[start : start + 500]
                rows += self._db.execute(
                    f"SELECT trace_id, {column} AS value FROM traces WHERE trace_id IN ({','.join('?' * len(batch))})"
                    f" AND {column} IS NOT NULL",
                    batch,
                ).fetchall()
        return rows

    def trace_payloads(self, trace_ids: list[str]) -> dict[str, dict]:
        return {r["trace_id"]: json.loads(r["value"]) for r in self._by_trace_id("payload", trace_ids)}

    def get_trace(self, trace_id: str, tenant: str | None = None) -> dict | None:
        with self._lock:
            row = self._db.execute(
                "SELECT payload FROM traces WHERE trace_id = ? AND (? IS NULL OR tenant = ?)", (trace_id, tenant, tenant)
            ).fetchone()
            if not row:
                return None
            feedback = self._db.execute(
                "SELECT verdict, comment, created_at FROM feedback WHERE trace_id = ? ORDER BY id", (trace_id,)
            ).fetchall()
        payload = json.loads(row["payload"])
        payload["feedback"] = [dict(f) for f in feedback]
        return payload

    def save_feedback(self, trace_id: str, verdict: str, comment: str | None, created_at: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO feedback (trace_id, verdict, comment, created_at) VALUES (?, ?, ?, ?)",
                (trace_id, verdict, comment, created_at),
            )

    def prune_traces(self, created_before: str) -> int:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                old = "SELECT trace_id FROM traces WHERE created_at < ?"
                db.execute(f"DELETE FROM feedback WHERE trace_id IN ({old})", (created_before,))
                db.execute(f"DELETE FROM trace_citations WHERE trace_id IN ({old})", (created_before,))
                count = db.execute("DELETE FROM traces WHERE created_at < ?", (created_before,)).rowcount
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite has rolled back by itself after some errors (a full disk among them)
                    db.execute("ROLLBACK")
                raise
        return count

    # API keys ------------------------------------------------------------------------------------
    def add_api_key(self, key: ApiKey, secret_sha256: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO api_keys (key_id, secret_sha256, tenant, name, created_at, revoked_at, scope, origins)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.key_id, secret_sha256, key.tenant, key.name, key.created_at, key.revoked_at,
                    key.scope, key.stored_origins(),
                ),
            )

    def find_api_key(self, secret_sha256: str) -> ApiKey | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_sha256 = ?", (secret_sha256,)
            ).fetchone()
        return ApiKey.from_row(dict(row)) if row else None

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {KEY_COLUMNS} FROM api_keys WHERE ? IS NULL OR tenant = ? ORDER BY tenant, created_at",
                (tenant, tenant),
            ).fetchall()
        return [ApiKey.from_row(dict(r)) for r in rows]

    def revoke_api_key(self, key_id: str, revoked_at: str) -> ApiKey | None:
        with self._lock:
            self._db.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (revoked_at, key_id)
            )
            row = self._db.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        return ApiKey.from_row(dict(row)) if row else None

    # Audit log -----------------------------------------------------------------------------------
    def mark_gaps(self, trace_ids: list[str], state: str, marked_by: str, at: str) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT INTO gap_marks (trace_id, state, marked_by, marked_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (trace_id) DO UPDATE SET state = excluded.state, marked_by = excluded.marked_by,"
                " marked_at = excluded.marked_at",
                [(t, state, marked_by, at) for t in trace_ids],
            )

    def gap_marks(self, trace_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        found: dict[str, tuple[str, str, str]] = {}
        with self._lock:
            for start in range(0, len(trace_ids), 500):
                batch = trace_ids[start : start + 500]
                rows = self._db.execute(
                    f"SELECT trace_id, state, marked_by, marked_at FROM gap_marks WHERE trace_id IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
                found.update((r[0], (r[1], r[2], r[3])) for r in rows)
        return found

    def record_admin_action(self, action: AdminAction) -> None:
        with self._lock:
            self._db.execute(
                f"INSERT INTO admin_actions ({ADMIN_ACTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (action.at, action.tenant, action.key_id, action.action, action.target, action.outcome, action.detail),
            )

    def admin_actions(self, tenant: str | None = None, limit: int = 100) -> list[AdminAction]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {ADMIN_ACTION_COLUMNS} FROM admin_actions WHERE ? IS NULL OR tenant = ? ORDER BY id DESC LIMIT ?",
                (tenant, tenant, limit),
            ).fetchall()
        return [AdminAction(**dict(r)) for r in rows]

    # sources, sync jobs, webhook deliveries --------------------------------------------------------
    def save_source(self, source: CorpusSource) -> None:
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO corpus_sources ({SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    source.corpus, source.tenant, source.kind, source.location, json.dumps(source.options),
                    source.webhook_secret, source.next_sync_at, source.updated_at,
                ),
            )

    def get_source(self, corpus: str) -> CorpusSource | None:
        with self._lock:
            row = self._db.execute(f"SELECT {SOURCE_COLUMNS} FROM corpus_sources WHERE corpus = ?", (corpus,)).fetchone()
        return source_from_row(dict(row)) if row else None

    def list_sources(self, tenant: str | None = None) -> list[CorpusSource]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {SOURCE_COLUMNS} FROM corpus_sources WHERE ? IS NULL OR tenant = ? ORDER BY corpus", (tenant, tenant)
            ).fetchall()
        return [source_from_row(dict(r)) for r in rows]

    def move_next_sync(self, corpus: str, expected: str | None, new: str | None) -> bool:
        with self._lock:
            return self._db.execute(
                "UPDATE corpus_sources SET next_sync_at = ? WHERE corpus = ? AND next_sync_at IS ?", (new, corpus, expected)
            ).rowcount == 1

    def create_job(self, job: SyncJob, archive: bytes | None = None) -> tuple[SyncJob, bool]:
        values = job_row_values(job.as_dict())
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                active = db.execute(
                    f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE corpus = ? AND status IN ('queued', 'running')", (job.corpus,)
                ).fetchone()
                if active is None:
                    db.execute(
                        f"INSERT INTO sync_jobs ({JOB_COLUMNS}, archive) VALUES ({', '.join('?' * (len(values) + 1))})",
                        (*values.values(), archive),
                    )
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite has rolled back by itself after some errors (a full disk among them)
                    db.execute("ROLLBACK")
                raise
        return (job, True) if active is None else (job_from_row(dict(active)), False)

    def get_job(self, job_id: str) -> SyncJob | None:
        with self._lock:
            row = self._db.execute(f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE id = ?", (job_id,)).fetchone()
        return job_from_row(dict(row)) if row else None

    def list_jobs(self, tenant: str | None = None, corpus: str | None = None, limit: int = 50) -> list[SyncJob]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE (? IS NULL OR tenant = ?) AND (? IS NULL OR corpus = ?)"
                " ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (tenant, tenant, corpus, corpus, limit),
            ).fetchall()
        return [job_from_row(dict(r)) for r in rows]

    def update_job(self, job_id: str, **fields) -> SyncJob | None:
        values = job_row_values(fields)
        with self._lock:
            self._db.execute(
                f"UPDATE sync_jobs SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?", (*values.values(), job_id)
            )
        return self.get_job(job_id)

    def claim_job(self, worker: str, now: str, job_id: str | None = None) -> SyncJob | None:
        with self._lock:
            row = self._db.execute(
                "UPDATE sync_jobs SET status = 'running', worker = ?, started_at = ?, heartbeat_at = ?, attempts = attempts + 1"
                " WHERE id = (SELECT id FROM sync_jobs WHERE status = 'queued' AND (? IS NULL OR id = ?)"
                " ORDER BY created_at, rowid LIMIT 1) AND status = 'queued'"
                f" RETURNING {JOB_COLUMNS}",
                (worker, now, now, job_id, job_id),
            ).fetchone()
        return job_from_row(dict(row)) if row else None

    def stale_jobs(self, heartbeat_before: str) -> list[SyncJob]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE status = 'running' AND heartbeat_at < ? ORDER BY created_at",
                (heartbeat_before,),
            ).fetchall()
        return [job_from_row(dict(r)) for r in rows]

    def job_archive(self, job_id: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT archive FROM sync_jobs WHERE id = ?", (job_id,)).fetchone()
        return bytes(row["archive"]) if row and row["archive"] is not None else None

    def record_delivery(self, corpus: str, delivery_id: str, at: str, forget_before: str) -> bool:
        with self._lock:
            self._db.execute("DELETE FROM webhook_deliveries WHERE received_at < ?", (forget_before,))
            return self._db.execute(
                "INSERT OR IGNORE INTO webhook_deliveries (corpus, delivery_id, received_at) VALUES (?, ?, ?)",
                (corpus, delivery_id, at),
            ).rowcount == 1
