"""PostgreSQL + pgvector store: the same ``Store`` as the SQLite default, for several server processes.

- Lexical search is BM25 over an inverted index in a table (``postings``: corpus, lexeme, chunk,
  weighted term frequency, chunk length), scored by the impact index every store shares
  (``bm25.py``, built from the table once per corpus version and kept in each process) with the
  formula and field weights of the SQLite index's FTS5 ``bm25()`` (title 2, heading path 3, body
  1; k1 1.2, b 0.75), so the two backends rank alike. Scoring in SQL aggregated every posting of
  every query term and took about a second a query at 100k chunks. The lexemes are the same search
  terms (identifier parts, compounds, camelCase pieces; see ``text.py``), Porter-stemmed like
  FTS5's ``porter`` tokenizer. PostgreSQL's
  ``tsvector``/``ts_rank`` was tried first: it has no IDF, and BM25-only recall@8 on the dev set
  fell from 0.95 to 0.56. Its parser would also split ``import_meta_env`` at the underscores.
- Nearest-vector search is an HNSW index (inner product on unit vectors) over
  ``embedding::vector(dim)``, partial to the rows of that width, created by the first ingest that
  knows the dimension; the corpus
  filter uses pgvector's iterative index scan so a filtered query still returns ``limit`` rows.
- Every ingest is one transaction under a per-corpus advisory lock, so a killed ingest leaves the
  previous index as it was and two concurrent ingests of one corpus cannot interleave.
- Several server processes on one database act as one service: each request reads the corpus row,
  so a new corpus version is served by every process from its next request on (the first one
  rebuilds that process's BM25 index); traces, feedback and keys are rows here; and the rate limit
  is a token bucket per caller in ``rate_buckets``, updated in one atomic statement on the
  database's clock (``take_rate_token``), so N processes admit the configured rate, not N times it.
- A lost database (restart, network) fails the requests that need it with ``StoreUnavailable``
  after at most ``_CONNECT_WAIT_S``, and at once while one request has just found it down (HTTP 503
  ``store_unavailable``; an outage never fills the request queue); pooled connections are checked
  before use, so service resumes by itself once the server is back.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

import numpy as np
import psycopg
import snowballstemmer
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from ..text import search_terms
from ..types import Chunk, ChunkId
from .bm25 import FIELD_WEIGHTS, SNAPSHOT_FORMAT, BM25Index, Postings
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
    StoreUnavailable,
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
CREATE EXTENSION IF NOT EXISTS vector;
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
    chunk_ids TEXT[] NOT NULL,
    PRIMARY KEY (corpus, path)
);
CREATE TABLE IF NOT EXISTS chunks (
    rid BIGSERIAL PRIMARY KEY,
    corpus TEXT NOT NULL,
    id TEXT NOT NULL,
    doc_path TEXT NOT NULL,
    title TEXT NOT NULL,
    heading_path TEXT[] NOT NULL,
    anchor TEXT NOT NULL,
    anchor_path TEXT[] NOT NULL,
    url TEXT NOT NULL,
    text TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    term_count INTEGER NOT NULL,
    embedding VECTOR NOT NULL,
    n_tokens INTEGER,
    token_vectors BYTEA,
    language TEXT NOT NULL DEFAULT '',
    UNIQUE (corpus, id)
);
CREATE TABLE IF NOT EXISTS postings (
    corpus TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    rid BIGINT NOT NULL REFERENCES chunks(rid) ON DELETE CASCADE,
    tf REAL NOT NULL,
    doc_length INTEGER NOT NULL,
    PRIMARY KEY (corpus, lexeme, rid)
);
CREATE INDEX IF NOT EXISTS postings_rid ON postings (rid);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    created_at TEXT NOT NULL,
    payload TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT 'default'
);
CREATE INDEX IF NOT EXISTS traces_created_at ON traces (created_at);
"""
SCHEMA += shared_tables(serial_key="BIGSERIAL PRIMARY KEY", blob="BYTEA", job_order="    seq BIGSERIAL,\n")
SCHEMA += """-- a corpus version's BM25 index as the first process to build it wrote it (BM25Index.dump, in parts
-- under 1 GB), so that every other process loads it instead of building it again; stored uncompressed
CREATE TABLE IF NOT EXISTS bm25_snapshots (
    corpus TEXT NOT NULL,
    version TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    format TEXT NOT NULL,
    part INTEGER NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (corpus, version, pipeline, format, part)
);
ALTER TABLE bm25_snapshots ALTER COLUMN data SET STORAGE EXTERNAL;
-- one token bucket per caller, shared by every server process on this database
CREATE TABLE IF NOT EXISTS rate_buckets (
    identity TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    granted BOOLEAN NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
-- added after the first release, for databases created before
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS scope TEXT NOT NULL DEFAULT 'full';
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS origins TEXT NOT NULL DEFAULT '';
-- the columns insights read, beside the payload (NULL ``refused``: a trace not summarised yet)
ALTER TABLE traces ADD COLUMN IF NOT EXISTS question TEXT;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS refused BOOLEAN;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS reason TEXT;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS latency_ms DOUBLE PRECISION;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS question_vector BYTEA;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS language TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS traces_unsummarised ON traces (trace_id) WHERE refused IS NULL;
CREATE INDEX IF NOT EXISTS feedback_trace ON feedback (trace_id);
"""
SCHEMA += "".join(f"DROP INDEX IF EXISTS {index};\n" for index in DROPPED_INDEXES)
SCHEMA += "".join(index + ";\n" for index in TRACE_COLUMNS_INDEX)

log = logging.getLogger(__name__)

# Session-level advisory lock key under which processes starting at once create the schema.
_SCHEMA_LOCK = 0x636974_65646F63  # "citedoc"

# Longest a request waits for a database connection before failing with StoreUnavailable (503).
_CONNECT_WAIT_S = 3.0
# Token bucket refill and spend in one statement, on the database's clock (the same for every
# process, whatever the machines' clocks say); ``granted`` tells whether this call got a token.
_TAKE_TOKEN = """
INSERT INTO rate_buckets AS b (identity, tokens, granted, updated_at)
VALUES (%(identity)s, %(burst)s - 1, true, now())
ON CONFLICT (identity) DO UPDATE SET
    granted = least(%(burst)s, b.tokens + extract(epoch FROM now() - b.updated_at) * %(rate)s) >= 1,
    tokens = least(%(burst)s, b.tokens + extract(epoch FROM now() - b.updated_at) * %(rate)s)
             - CASE WHEN least(%(burst)s, b.tokens + extract(epoch FROM now() - b.updated_at) * %(rate)s) >= 1
                    THEN 1 ELSE 0 END,
    updated_at = now()
RETURNING granted, tokens
"""
_FORGET_BUCKETS_EVERY = 1000  # takes between deletions of buckets idle long enough to be full again

_EF_SEARCH_FLOOR = 100  # HNSW candidate list; raised to 2x the requested rows when that is larger

_CHUNK_COLUMNS = "id, doc_path, title, heading_path, anchor, anchor_path, url, text, token_count, language"

_stemmers = threading.local()  # a snowballstemmer stemmer keeps its state while it stems: one per thread
_TOKEN = re.compile(r"\w+")  # FTS5 unicode61 with '_' as a token character


@functools.lru_cache(maxsize=1 << 18)  # the pure-Python stemmer was two thirds of an ingest's write time
def _lexeme(term: str) -> str:
    if not hasattr(_stemmers, "porter"):
        _stemmers.porter = snowballstemmer.stemmer("porter")
    return _stemmers.porter.stemWord(term) or term  # Porter reduces a lone "s" to nothing


def chunk_terms(chunk: Chunk) -> tuple[dict[str, float], int]:
    """The chunk's lexemes with field-weighted term frequencies, and its length in terms."""
    frequencies: dict[str, float] = {}
    length = 0
    for weight, text in zip(FIELD_WEIGHTS, (chunk.title, " ".join(chunk.heading_path), chunk.text)):
        for term in search_terms(text):
            lexeme = _lexeme(term)
            frequencies[lexeme] = frequencies.get(lexeme, 0.0) + weight
            length += 1
    return frequencies, length


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def _row_to_chunk(row: dict) -> Chunk:
    return Chunk(
        id=ChunkId(row["id"]),
        doc_path=row["doc_path"],
        title=row["title"],
        heading_path=tuple(row["heading_path"]),
        anchor=row["anchor"],
        anchor_path=tuple(row["anchor_path"]),
        url=row["url"],
        text=row["text"],
        token_count=row["token_count"],
        language=row["language"],
    )


def _postgres(sql: str) -> str:
    """Insights SQL (written for SQLite) in psycopg's placeholders; ``+t.created_at`` (SQLite: test the
    time on each row rather than seek it) is plain ``t.created_at`` here."""
    return sql.replace("+t.created_at", "t.created_at").replace("?", "%s")


# a BYTEA value holds at most 1 GB; a 1M-chunk corpus's index is about 0.7 GB
_SNAPSHOT_PART_BYTES = 256 * 1024 * 1024

# array_send of a one-dimensional array without NULLs: a 20-byte header (dimensions, NULL flag,
# element type, length, lower bound), then each element as its byte length and big-endian value
_ARRAY_HEADER = 20
_INT8_ELEMENTS = np.dtype([("size", ">i4"), ("value", ">i8")])
_FLOAT4_ELEMENTS = np.dtype([("size", ">i4"), ("value", ">f4")])


def _array_values(data: bytes, elements: np.dtype) -> np.ndarray:
    """The values of an ``array_send`` result, in native byte order."""
    values = np.frombuffer(data, elements, offset=_ARRAY_HEADER)["value"]
    return values.astype(values.dtype.newbyteorder("="))


class PostgresStore:
    def __init__(self, url: str, max_connections: int = 8) -> None:
        self.url = url
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
                try:
                    conn.execute(SCHEMA)
                    self._migrate_vector_indexes(conn)
                    self._summarise_older_traces(conn)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))
        except psycopg.errors.FeatureNotSupported as exc:
            raise StoreUnavailable(
                f"PostgreSQL at {redacted(url)} has no pgvector extension ({exc}); install pgvector on that server"
            ) from exc
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot open PostgreSQL at {redacted(url)}: {str(exc).strip()}; check the database URL and that the server is up"
            ) from exc
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs={"row_factory": dict_row},
            configure=register_vector,
            check=ConnectionPool.check_connection,  # a connection broken by a server restart is replaced, not used
            timeout=_CONNECT_WAIT_S,
            open=True,
            name="citedocs",
        )
        self._takes = itertools.count(1)
        self._bm25: dict[str, tuple[tuple[str, str], BM25Index]] = {}  # corpus -> ((version, pipeline), index)
        self._bm25_build = threading.Lock()
        self._snapshot_writers: list[threading.Thread] = []
        self._unreachable_until = 0.0  # monotonic time until which requests fail at once (_connection)

    def close(self) -> None:
        for writer in self._snapshot_writers:
            writer.join()
        self._pool.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; a database that is down or went away mid-request is StoreUnavailable.

        Once a request has waited ``_CONNECT_WAIT_S`` in vain, the others fail at once for the next
        ``_CONNECT_WAIT_S`` instead of each holding a request slot while it waits too (an outage would
        otherwise fill the queue and turn into 503 ``overloaded``); then one request tries again."""
        if time.monotonic() < self._unreachable_until:
            raise StoreUnavailable(self._unreachable_message("no connection in the last few seconds"))
        try:
            with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            if isinstance(exc, PoolTimeout):
                self._unreachable_until = time.monotonic() + _CONNECT_WAIT_S
            raise StoreUnavailable(self._unreachable_message(str(exc).strip() or type(exc).__name__)) from exc

    def _unreachable_message(self, why: str) -> str:
        return (
            f"PostgreSQL at {redacted(self.url)} is unreachable ({why}); "
            "retry shortly: service resumes by itself when the database is back"
        )

    @contextmanager
    def _full_disk(self, lost: str, then: str = "") -> Iterator[None]:
        """A write that finds the server's disk full (disk_full, rolled back) raises StoreFull, not the
        StoreUnavailable ("retry shortly") that other writes get for it."""
        try:
            yield
        except StoreUnavailable as exc:
            if isinstance(exc.__cause__, psycopg.errors.DiskFull):
                raise StoreFull(f"the database at {redacted(self.url)}", lost, then) from exc.__cause__
            raise

    def _read(self, sql: str, params: tuple | dict = ()) -> list[dict]:
        with self._connection() as conn:
            return conn.execute(sql, params).fetchall()

    def _write(self, sql: str, params: tuple = ()) -> None:
        with self._connection() as conn:
            conn.execute(sql, params)

    # shared rate limit ---------------------------------------------------------------------
    def take_rate_token(self, identity: str, per_minute: int) -> float:
        """Spend one of ``identity``'s tokens (burst ``per_minute``, refilled evenly): 0.0 when granted,
        else the seconds until the next token. Every process on this database shares the bucket."""
        rate = per_minute / 60.0
        with self._connection() as conn:
            row = conn.execute(_TAKE_TOKEN, {"identity": identity, "burst": float(per_minute), "rate": rate}).fetchone()
            if next(self._takes) % _FORGET_BUCKETS_EVERY == 0:  # a full bucket is what a new caller gets anyway
                conn.execute("DELETE FROM rate_buckets WHERE updated_at < now() - interval '60 seconds'")
        return 0.0 if row["granted"] else (1.0 - row["tokens"]) / rate

    # corpora and documents -------------------------------------------------------------
    def list_corpora(self, tenant: str | None = None) -> list[CorpusInfo]:
        rows = self._read(
            "SELECT * FROM corpora WHERE %s::text IS NULL OR tenant = %s ORDER BY name", (tenant, tenant)
        )
        return [CorpusInfo(**r) for r in rows]

    def get_corpus(self, name: str) -> CorpusInfo | None:
        rows = self._read("SELECT * FROM corpora WHERE name = %s", (name,))
        return CorpusInfo(**rows[0]) if rows else None

    def documents(self, corpus: str) -> dict[str, DocumentRecord]:
        rows = self._read("SELECT path, file_hash, chunk_ids FROM documents WHERE corpus = %s", (corpus,))
        return {r["path"]: DocumentRecord(r["path"], r["file_hash"], tuple(r["chunk_ids"])) for r in rows}

    def chunk_hashes(self, corpus: str) -> dict[ChunkId, str]:
        rows = self._read("SELECT id, content_hash FROM chunks WHERE corpus = %s", (corpus,))
        return {ChunkId(r["id"]): r["content_hash"] for r in rows}

    def apply_ingest(self, changes: IngestChanges) -> None:
        info = changes.corpus
        corpus = info.name
        with self._full_disk(*ingest_lost(corpus)), self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"citedocs-corpus:{corpus}",))
            owner = conn.execute("SELECT tenant FROM corpora WHERE name = %s", (corpus,)).fetchone()
            if owner and owner["tenant"] != info.tenant:
                raise CorpusOwnedByOtherTenant(
                    f"corpus {corpus!r} belongs to tenant {owner['tenant']!r}; pick another corpus name"
                )
            replaced = [*changes.delete_chunk_ids, *(chunk.id for chunk, _ in changes.upsert_chunks)]
            conn.execute("DELETE FROM chunks WHERE corpus = %s AND id = ANY(%s)", (corpus, replaced))
            with conn.cursor() as cursor:
                total = len(changes.upsert_chunks)
                batch = 256
                for start in range(0, total, batch):
                    self._insert_chunks(cursor, corpus, changes.upsert_chunks[start : start + batch])
                    pause_mid_write_if_asked(start, start + batch, total)
                cursor.execute(
                    "DELETE FROM documents WHERE corpus = %s AND path = ANY(%s)", (corpus, changes.delete_document_paths)
                )
                cursor.executemany(
                    "INSERT INTO documents (corpus, path, file_hash, chunk_ids) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (corpus, path) DO UPDATE SET file_hash = EXCLUDED.file_hash, chunk_ids = EXCLUDED.chunk_ids",
                    [(corpus, d.path, d.file_hash, list(d.chunk_ids)) for d in changes.upsert_documents],
                )
            count = conn.execute("SELECT count(*) AS n FROM chunks WHERE corpus = %s", (corpus,)).fetchone()["n"]
            conn.execute(
                "INSERT INTO corpora (name, base_url, source_dir, version, pipeline, chunk_count, updated_at, tenant)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET base_url = EXCLUDED.base_url,"
                " source_dir = EXCLUDED.source_dir, version = EXCLUDED.version, pipeline = EXCLUDED.pipeline,"
                " chunk_count = EXCLUDED.chunk_count, updated_at = EXCLUDED.updated_at, tenant = EXCLUDED.tenant",
                (info.name, info.base_url, info.source_dir, info.version, info.pipeline, count, info.updated_at, info.tenant),
            )
            if changes.upsert_chunks:
                self._ensure_vector_index(conn, len(changes.upsert_chunks[0][1].sentence))

    @classmethod
    def _insert_chunks(cls, cursor: psycopg.Cursor, corpus: str, batch: list[tuple[Chunk, ChunkVectors]]) -> None:
        terms = {chunk.id: chunk_terms(chunk) for chunk, _ in batch}
        cursor.executemany(
            "INSERT INTO chunks (corpus, id, doc_path, title, heading_path, anchor, anchor_path, url, text,"
            " token_count, content_hash, term_count, embedding, n_tokens, token_vectors, language)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [cls._chunk_row(corpus, chunk, vectors, terms[chunk.id][1]) for chunk, vectors in batch],
        )
        cursor.execute("SELECT rid, id FROM chunks WHERE corpus = %s AND id = ANY(%s)", (corpus, list(terms)))
        rids = {r["id"]: r["rid"] for r in cursor.fetchall()}
        with cursor.copy("COPY postings (corpus, lexeme, rid, tf, doc_length) FROM STDIN") as copy:
            for chunk_id, (frequencies, length) in terms.items():
                for lexeme, tf in frequencies.items():
                    copy.write_row((corpus, lexeme, rids[chunk_id], tf, length))

    @staticmethod
    def _chunk_row(corpus: str, chunk: Chunk, vectors: ChunkVectors, term_count: int) -> tuple:
        tokens = vectors.tokens
        return (
            corpus,
            chunk.id,
            chunk.doc_path,
            chunk.title,
            list(chunk.heading_path),
            chunk.anchor,
            list(chunk.anchor_path),
            chunk.url,
            chunk.text,
            chunk.token_count,
            chunk.hash,
            term_count,
            np.asarray(vectors.sentence, dtype=np.float32),
            None if tokens is None else tokens.rows,
            None if tokens is None else tokens.data,
            chunk.language,
        )

    @classmethod
    def _migrate_vector_indexes(cls, conn: psycopg.Connection) -> None:
        """Vector indexes were once whole-table (``chunks_embedding_hnsw_<width>``), which breaks as soon
        as corpora of two widths share the table (setting dense_model): each becomes the partial index
        ``_ensure_vector_index`` builds for its width."""
        old = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexname ~ '^chunks_embedding_hnsw_[0-9]+$'"
        ).fetchall()
        for (name,) in old:
            conn.execute(f'DROP INDEX "{name}"')
            cls._ensure_vector_index(conn, int(name.rsplit("_", 1)[1]))

    @staticmethod
    def _ensure_vector_index(conn: psycopg.Connection, dim: int) -> None:
        # One partial HNSW index per embedding width: the column is untyped, so corpora embedded by
        # models of different widths (setting dense_model) share the table, each searched by its own index.
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS chunks_dense_hnsw_{dim} ON chunks"
            f" USING hnsw ((embedding::vector({dim})) vector_ip_ops) WHERE vector_dims(embedding) = {dim}"
        )

    # retrieval ---------------------------------------------------------------------------
    def get_chunks(self, corpus: str, ids: list[ChunkId]) -> list[Chunk]:
        if not ids:
            return []
        rows = self._read(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE corpus = %s AND id = ANY(%s)", (corpus, list(ids)))
        by_id = {r["id"]: _row_to_chunk(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def lexical_search(
        self, corpus: str, terms: list[str], limit: int, match_all: bool = False
    ) -> list[tuple[ChunkId, float]]:
        # A term is a phrase of its word tokens, as FTS5 reads a quoted term ("astro's" is
        # astro + s). Postings keep no positions, so a phrase matches a chunk that holds all of its
        # tokens. Any phrase matching is enough, or all of them with match_all.
        phrases = [[_lexeme(token) for token in _TOKEN.findall(t.lower())] for t in dict.fromkeys(terms)]
        phrases = [phrase for phrase in phrases if phrase]
        if not phrases:
            return []
        index = self.bm25_index(corpus)
        return index.top_k(phrases, limit, match_all) if index else []

    def bm25_index(self, corpus: str) -> BM25Index | None:
        """The corpus's impact index, loaded again when its version or pipeline changed (None: no
        such corpus): from the snapshot another process wrote for that version, else built from the
        postings (then written as the snapshot for the others)."""
        key = self._corpus_key(corpus)
        cached = self._bm25.get(corpus)
        if cached and cached[0] == key:
            return cached[1]
        with self._bm25_build:
            with self._connection() as conn, conn.transaction():
                # one database snapshot: the postings and the version they are cached under agree
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                key = self._corpus_key(corpus, conn)
                cached = self._bm25.get(corpus)
                if cached and cached[0] == key:
                    return cached[1]
                if key == ("", ""):
                    return None
                index = self._load_bm25_snapshot(conn, corpus, key)
                built = index is None
                if built:
                    index = BM25Index.from_postings(self._read_postings(conn, corpus))
            self._bm25[corpus] = (key, index)
            if built:  # in the background: the request that built the index need not wait for the write
                writer = threading.Thread(target=self._save_bm25_snapshot, args=(corpus, key, index), name="citedocs-bm25-snapshot")
                writer.start()
                self._snapshot_writers = [w for w in self._snapshot_writers if w.is_alive()] + [writer]
        return index

    @staticmethod
    def _load_bm25_snapshot(conn: psycopg.Connection, corpus: str, key: tuple[str, str]) -> BM25Index | None:
        where = "corpus = %s AND version = %s AND pipeline = %s AND format = %s"
        params = (corpus, *key, SNAPSHOT_FORMAT)
        with conn.cursor(binary=True, row_factory=tuple_row) as cursor:
            sizes = cursor.execute(f"SELECT part, length(data) FROM bm25_snapshots WHERE {where} ORDER BY part", params).fetchall()
            if not sizes or [part for part, _ in sizes] != list(range(len(sizes))):
                return None
            data, at = bytearray(sum(size for _, size in sizes)), 0
            for part, size in sizes:  # one part in memory at a time besides the whole
                data[at : at + size] = cursor.execute(f"SELECT data FROM bm25_snapshots WHERE {where} AND part = %s", (*params, part)).fetchone()[0]
                at += size
        try:
            return BM25Index.load(data)
        except ValueError as exc:  # unreadable: build it again, and overwrite it
            log.warning("the stored BM25 index of corpus %r could not be read (%s); building it again", corpus, exc)
            return None

    def _save_bm25_snapshot(self, corpus: str, key: tuple[str, str], index: BM25Index) -> None:
        """Write ``index`` as its version's snapshot (replacing what the corpus had), unless the corpus
        moved on meanwhile. Best effort: a failed write (a full disk, a lost connection) costs
        the other processes a build of their own, and never the request that built it."""
        data = memoryview(index.dump())
        try:
            with self._connection() as conn, conn.transaction():
                current = self._corpus_key(corpus, conn)
                if current != key:
                    return
                # older versions' snapshots, and this version's if it could not be read
                conn.execute("DELETE FROM bm25_snapshots WHERE corpus = %s", (corpus,))
                for part, start in enumerate(range(0, len(data), _SNAPSHOT_PART_BYTES)):
                    conn.execute(
                        "INSERT INTO bm25_snapshots (corpus, version, pipeline, format, part, data)"
                        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        (corpus, *key, SNAPSHOT_FORMAT, part, data[start : start + _SNAPSHOT_PART_BYTES]),
                    )
        except Exception as exc:  # an expected operational failure: said in one line, not a traceback
            log.warning("the BM25 index of corpus %r was not stored for other processes (%s: %s)", corpus, type(exc).__name__, exc)

    def _corpus_key(self, corpus: str, conn: psycopg.Connection | None = None) -> tuple[str, str]:
        """The corpus's (version, pipeline), read in ``conn``'s transaction if given; ("", "") if none."""
        sql, params = "SELECT version, pipeline FROM corpora WHERE name = %s", (corpus,)
        rows = conn.execute(sql, params).fetchall() if conn is not None else self._read(sql, params)
        return (rows[0]["version"], rows[0]["pipeline"]) if rows else ("", "")

    @staticmethod
    def _read_postings(conn: psycopg.Connection, corpus: str) -> Postings:
        """The corpus's postings, one row per lexeme. Each lexeme's chunks and frequencies come as
        ``array_send`` bytes, read straight into numpy: at 1M chunks (~50M postings) no posting
        becomes a Python object, and the CSR arrays are built without a global sort."""
        with conn.cursor(row_factory=tuple_row) as cursor:
            cursor.execute("SELECT rid, id, term_count FROM chunks WHERE corpus = %s ORDER BY rid", (corpus,))
            rows = cursor.fetchall()
        rids, chunk_ids, lengths = zip(*rows) if rows else ((), (), ())
        rids = np.array(rids, dtype=np.int64)
        lexemes: list[str] = []
        positions: list[np.ndarray] = []
        frequencies: list[np.ndarray] = []
        with conn.cursor(binary=True) as cursor:
            cursor.execute(
                "SELECT lexeme, array_send(array_agg(rid)) AS rids, array_send(array_agg(tf)) AS tfs FROM postings"
                " WHERE corpus = %s GROUP BY lexeme",
                (corpus,),
            )
            for r in cursor:
                at = np.searchsorted(rids, _array_values(r["rids"], _INT8_ELEMENTS)).astype(np.int32)
                tf = _array_values(r["tfs"], _FLOAT4_ELEMENTS)
                if len(at) > 1 and (at[1:] < at[:-1]).any():  # array_agg keeps no order; a lexeme's chunks ascend
                    order = np.argsort(at, kind="stable")
                    at, tf = at[order], tf[order]
                lexemes.append(r["lexeme"])
                positions.append(at)
                frequencies.append(tf)
        sizes = np.fromiter(map(len, positions), dtype=np.int64, count=len(positions))
        return Postings(
            chunk_ids=list(chunk_ids),
            lengths=np.array(lengths, dtype=np.int64),
            lexemes=lexemes,
            indptr=np.r_[0, np.cumsum(sizes)],
            chunks=np.concatenate(positions) if positions else np.zeros(0, dtype=np.int32),
            frequencies=np.concatenate(frequencies) if frequencies else np.zeros(0, dtype=np.float32),
        )

    def dense_search(self, corpus: str, query_vector: np.ndarray, limit: int) -> list[tuple[ChunkId, float]]:
        if limit <= 0:
            return []
        dim = int(len(query_vector))
        with self._connection() as conn:
            conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(_EF_SEARCH_FLOOR, 2 * limit))}")
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(
                f"SELECT id, embedding::vector({dim}) <#> %s AS distance FROM chunks"
                f" WHERE corpus = %s AND vector_dims(embedding) = {dim} ORDER BY distance LIMIT %s",
                (np.asarray(query_vector, dtype=np.float32), corpus, limit),
            ).fetchall()
        # <#> is the negated inner product; relaxed_order may leave neighbours slightly out of order.
        return sorted(((ChunkId(r["id"]), -float(r["distance"])) for r in rows), key=lambda hit: -hit[1])

    def token_vectors(self, corpus: str, ids: list[ChunkId]) -> dict[ChunkId, PackedTokens]:
        if not ids:
            return {}
        rows = self._read(
            "SELECT id, n_tokens, token_vectors FROM chunks"
            " WHERE corpus = %s AND id = ANY(%s) AND token_vectors IS NOT NULL",
            (corpus, list(ids)),
        )
        return {ChunkId(r["id"]): PackedTokens(bytes(r["token_vectors"]), r["n_tokens"]) for r in rows}

    def export_chunks(self, corpus: str) -> Iterator[tuple[Chunk, ChunkVectors]]:
        with self._connection() as conn, conn.cursor(name="citedocs_export") as cursor:
            cursor.execute(
                f"SELECT {_CHUNK_COLUMNS}, embedding, n_tokens, token_vectors FROM chunks WHERE corpus = %s ORDER BY rid",
                (corpus,),
            )
            for r in cursor:
                tokens = None if r["token_vectors"] is None else PackedTokens(bytes(r["token_vectors"]), r["n_tokens"])
                yield _row_to_chunk(r), ChunkVectors(np.asarray(r["embedding"].to_numpy(), dtype=np.float32), tokens)

    # traces and feedback ---------------------------------------------------------------------
    def save_trace(self, trace_id: str, corpus: CorpusInfo, created_at: str, payload: dict) -> None:
        columns = TraceColumns.of(payload)
        with self._full_disk(*trace_lost(trace_id)), self._connection() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO traces (trace_id, corpus, created_at, payload, tenant, question, refused, reason, latency_ms)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (trace_id) DO UPDATE SET corpus = EXCLUDED.corpus, created_at = EXCLUDED.created_at,"
                " payload = EXCLUDED.payload, tenant = EXCLUDED.tenant, question = EXCLUDED.question,"
                " refused = EXCLUDED.refused, reason = EXCLUDED.reason, latency_ms = EXCLUDED.latency_ms",
                (trace_id, corpus.name, created_at, json.dumps(payload), corpus.tenant, *self._typed(columns)),
            )
            self._write_citations(conn, trace_id, corpus.name, corpus.tenant, created_at, columns)

    @staticmethod
    def _typed(columns: TraceColumns) -> tuple:
        question, refused, reason, latency = columns.row()
        return question, bool(refused), reason, latency

    @staticmethod
    def _write_citations(
        conn: psycopg.Connection, trace_id: str, corpus: str, tenant: str, created_at: str, columns: TraceColumns
    ) -> None:
        conn.execute("DELETE FROM trace_citations WHERE trace_id = %s", (trace_id,))
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO trace_citations (trace_id, tenant, corpus, created_at, chunk_id, content_hash)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [(trace_id, tenant, corpus, created_at, cid, digest) for cid, digest in columns.citations],
            )

    @classmethod
    def _summarise_older_traces(cls, conn: psycopg.Connection) -> None:
        """Fill the insights columns of traces an older citedocs wrote (payload only), in batches."""
        while True:
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cursor:
                rows = cursor.execute(
                    "SELECT trace_id, corpus, tenant, created_at, payload FROM traces WHERE refused IS NULL"
                    " LIMIT 1000 FOR UPDATE SKIP LOCKED"
                ).fetchall()
                for trace_id, corpus, tenant, created_at, payload in rows:
                    columns = TraceColumns.of(json.loads(payload))
                    conn.execute(
                        "UPDATE traces SET question = %s, refused = %s, reason = %s, latency_ms = %s WHERE trace_id = %s",
                        (*cls._typed(columns), trace_id),
                    )
                    cls._write_citations(conn, trace_id, corpus, tenant, created_at, columns)
            if not rows:
                return

    def trace_rows(self, where: TraceFilter, limit: int | None = None) -> list[TraceRow]:
        with self._connection() as conn:
            return [TraceRow(*r) for r in self._insights_read(conn, INSIGHTS_SQL["rows"].render(where), limit)]

    def insights_rows(self, where: TraceFilter, queries: Sequence[str], limit: int | None = None) -> dict[str, list[tuple]]:
        with self._connection() as conn:
            self._summarise_older_traces(conn)  # traces an older process wrote since this store opened
            return {query: self._insights_read(conn, INSIGHTS_SQL[query].render(where), limit) for query in queries}

    @staticmethod
    def _insights_read(conn: psycopg.Connection, statement: tuple[str, tuple], limit: int | None) -> list[tuple]:
        sql, params = statement
        with conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(_postgres(sql) + " LIMIT %s", (*params, limit)).fetchall()

    def citing_traces(self, where: TraceFilter, corpus: str, chunk_ids: list[str]) -> list[tuple]:
        sql, params = INSIGHTS_SQL["citing"].render(where, chunk_ids="SELECT unnest(?::text[])")
        with self._connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            return cursor.execute(_postgres(sql), (*params, corpus, chunk_ids)).fetchall()

    def trace_payloads(self, trace_ids: list[str]) -> dict[str, dict]:
        rows = self._read("SELECT trace_id, payload FROM traces WHERE trace_id = ANY(%s)", (trace_ids,))
        return {r["trace_id"]: json.loads(r["payload"]) for r in rows}

    def get_trace(self, trace_id: str, tenant: str | None = None) -> dict | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT payload FROM traces WHERE trace_id = %s AND (%s::text IS NULL OR tenant = %s)",
                (trace_id, tenant, tenant),
            ).fetchone()
            if not row:
                return None
            feedback = conn.execute(
                "SELECT verdict, comment, created_at FROM feedback WHERE trace_id = %s ORDER BY id", (trace_id,)
            ).fetchall()
        payload = json.loads(row["payload"])
        payload["feedback"] = [dict(f) for f in feedback]
        return payload

    def save_feedback(self, trace_id: str, verdict: str, comment: str | None, created_at: str) -> None:
        self._write(
            "INSERT INTO feedback (trace_id, verdict, comment, created_at) VALUES (%s, %s, %s, %s)",
            (trace_id, verdict, comment, created_at),
        )

    def prune_traces(self, created_before: str) -> int:
        with self._connection() as conn, conn.transaction():
            for table in ("feedback", "trace_citations"):
                conn.execute(
                    f"DELETE FROM {table} WHERE trace_id IN (SELECT trace_id FROM traces WHERE created_at < %s)",
                    (created_before,),
                )
            return conn.execute("DELETE FROM traces WHERE created_at < %s", (created_before,)).rowcount

    # API keys ------------------------------------------------------------------------------------
    def add_api_key(self, key: ApiKey, secret_sha256: str) -> None:
        self._write(
            "INSERT INTO api_keys (key_id, secret_sha256, tenant, name, created_at, revoked_at, scope, origins)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                key.key_id, secret_sha256, key.tenant, key.name, key.created_at, key.revoked_at,
                key.scope, key.stored_origins(),
            ),
        )

    def find_api_key(self, secret_sha256: str) -> ApiKey | None:
        rows = self._read(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE secret_sha256 = %s", (secret_sha256,))
        return ApiKey.from_row(rows[0]) if rows else None

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        rows = self._read(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE %s::text IS NULL OR tenant = %s ORDER BY tenant, created_at",
            (tenant, tenant),
        )
        return [ApiKey.from_row(r) for r in rows]

    def revoke_api_key(self, key_id: str, revoked_at: str) -> ApiKey | None:
        with self._connection() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL", (revoked_at, key_id)
            )
            row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)).fetchone()
        return ApiKey.from_row(row) if row else None

    # Audit log -----------------------------------------------------------------------------------
    def mark_gaps(self, trace_ids: list[str], state: str, marked_by: str, at: str) -> None:
        with self._connection() as conn, conn.transaction():
            conn.cursor().executemany(
                "INSERT INTO gap_marks (trace_id, state, marked_by, marked_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (trace_id) DO UPDATE SET state = EXCLUDED.state, marked_by = EXCLUDED.marked_by,"
                " marked_at = EXCLUDED.marked_at",
                [(t, state, marked_by, at) for t in trace_ids],
            )

    def gap_marks(self, trace_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        rows = self._read("SELECT trace_id, state, marked_by, marked_at FROM gap_marks WHERE trace_id = ANY(%s)", (trace_ids,))
        return {r["trace_id"]: (r["state"], r["marked_by"], r["marked_at"]) for r in rows}

    def record_admin_action(self, action: AdminAction) -> None:
        self._write(
            f"INSERT INTO admin_actions ({ADMIN_ACTION_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (action.at, action.tenant, action.key_id, action.action, action.target, action.outcome, action.detail),
        )

    def admin_actions(self, tenant: str | None = None, limit: int = 100) -> list[AdminAction]:
        rows = self._read(
            f"SELECT {ADMIN_ACTION_COLUMNS} FROM admin_actions WHERE %s::text IS NULL OR tenant = %s ORDER BY id DESC LIMIT %s",
            (tenant, tenant, limit),
        )
        return [AdminAction(**r) for r in rows]

    # sources, sync jobs, webhook deliveries --------------------------------------------------------
    def save_source(self, source: CorpusSource) -> None:
        self._write(
            f"INSERT INTO corpus_sources ({SOURCE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (corpus) DO UPDATE SET tenant = EXCLUDED.tenant, kind = EXCLUDED.kind,"
            " location = EXCLUDED.location, options = EXCLUDED.options, webhook_secret = EXCLUDED.webhook_secret,"
            " next_sync_at = EXCLUDED.next_sync_at, updated_at = EXCLUDED.updated_at",
            (
                source.corpus, source.tenant, source.kind, source.location, json.dumps(source.options),
                source.webhook_secret, source.next_sync_at, source.updated_at,
            ),
        )

    def get_source(self, corpus: str) -> CorpusSource | None:
        rows = self._read(f"SELECT {SOURCE_COLUMNS} FROM corpus_sources WHERE corpus = %s", (corpus,))
        return source_from_row(rows[0]) if rows else None

    def list_sources(self, tenant: str | None = None) -> list[CorpusSource]:
        rows = self._read(
            f"SELECT {SOURCE_COLUMNS} FROM corpus_sources WHERE %s::text IS NULL OR tenant = %s ORDER BY corpus",
            (tenant, tenant),
        )
        return [source_from_row(r) for r in rows]

    def move_next_sync(self, corpus: str, expected: str | None, new: str | None) -> bool:
        with self._connection() as conn:
            return conn.execute(
                "UPDATE corpus_sources SET next_sync_at = %s WHERE corpus = %s AND next_sync_at IS NOT DISTINCT FROM %s",
                (new, corpus, expected),
            ).rowcount == 1

    def create_job(self, job: SyncJob, archive: bytes | None = None) -> tuple[SyncJob, bool]:
        values = job_row_values(job.as_dict())
        with self._connection() as conn, conn.transaction():
            inserted = conn.execute(
                f"INSERT INTO sync_jobs ({JOB_COLUMNS}, archive) VALUES ({', '.join(['%s'] * (len(values) + 1))})"
                " ON CONFLICT (corpus) WHERE status IN ('queued', 'running') DO NOTHING RETURNING id",
                (*values.values(), archive),
            ).fetchone()
            if inserted:
                return job, True
            active = conn.execute(
                f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE corpus = %s AND status IN ('queued', 'running')", (job.corpus,)
            ).fetchone()
        if active is None:  # it finished between the two statements: try again
            return self.create_job(job, archive)
        return job_from_row(active), False

    def get_job(self, job_id: str) -> SyncJob | None:
        rows = self._read(f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE id = %s", (job_id,))
        return job_from_row(rows[0]) if rows else None

    def list_jobs(self, tenant: str | None = None, corpus: str | None = None, limit: int = 50) -> list[SyncJob]:
        rows = self._read(
            f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE (%s::text IS NULL OR tenant = %s) AND (%s::text IS NULL OR corpus = %s)"
            " ORDER BY created_at DESC, seq DESC LIMIT %s",
            (tenant, tenant, corpus, corpus, limit),
        )
        return [job_from_row(r) for r in rows]

    def update_job(self, job_id: str, **fields) -> SyncJob | None:
        values = job_row_values(fields)
        self._write(
            f"UPDATE sync_jobs SET {', '.join(f'{k} = %s' for k in values)} WHERE id = %s", (*values.values(), job_id)
        )
        return self.get_job(job_id)

    def claim_job(self, worker: str, now: str, job_id: str | None = None) -> SyncJob | None:
        rows = self._read(
            "UPDATE sync_jobs SET status = 'running', worker = %s, started_at = %s, heartbeat_at = %s, attempts = attempts + 1"
            " WHERE id = (SELECT id FROM sync_jobs WHERE status = 'queued' AND (%s::text IS NULL OR id = %s)"
            " ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)"
            f" RETURNING {JOB_COLUMNS}",
            (worker, now, now, job_id, job_id),
        )
        return job_from_row(rows[0]) if rows else None

    def stale_jobs(self, heartbeat_before: str) -> list[SyncJob]:
        rows = self._read(
            f"SELECT {JOB_COLUMNS} FROM sync_jobs WHERE status = 'running' AND heartbeat_at < %s ORDER BY created_at",
            (heartbeat_before,),
        )
        return [job_from_row(r) for r in rows]

    def job_archive(self, job_id: str) -> bytes | None:
        rows = self._read("SELECT archive FROM sync_jobs WHERE id = %s", (job_id,))
        return bytes(rows[0]["archive"]) if rows and rows[0]["archive"] is not None else None

    def record_delivery(self, corpus: str, delivery_id: str, at: str, forget_before: str) -> bool:
        with self._connection() as conn, conn.transaction():
            conn.execute("DELETE FROM webhook_deliveries WHERE received_at < %s", (forget_before,))
            return conn.execute(
                "INSERT INTO webhook_deliveries (corpus, delivery_id, received_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (corpus, delivery_id, at),
            ).rowcount == 1
