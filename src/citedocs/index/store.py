"""The storage interface every index backend implements.

It is deliberately narrow (corpora, documents, chunks with vectors, lexical and nearest-vector
search, traces, API keys) so that the embedded SQLite default (``sqlite.py``) and PostgreSQL +
pgvector (``postgres.py``) are interchangeable: retrieval, the API and the CLI see only this.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..config import DEFAULT_TENANT
from ..types import Chunk, ChunkId
from .token_codec import PackedTokens


@dataclass(frozen=True)
class CorpusInfo:
    name: str
    base_url: str
    source_dir: str
    version: str  # hash over admitted chunk ids + content hashes
    pipeline: str  # chunker version + embedding model; a change forces a full rebuild
    chunk_count: int
    updated_at: str
    tenant: str = DEFAULT_TENANT  # the only tenant whose API keys may see this corpus (when auth is on)


FULL_SCOPE = "full"  # every route of the key's tenant
PUBLISHABLE_SCOPE = "publishable"  # the widget's routes only, from the key's own origins (auth.py)
ADMIN_SCOPE = "admin"  # every route of the key's tenant, the /admin routes included (auth.py)


@dataclass(frozen=True)
class ApiKey:
    """An API key's public record; the secret itself is never stored, only its sha256."""

    key_id: str
    tenant: str
    name: str
    created_at: str
    revoked_at: str | None = None
    scope: str = FULL_SCOPE
    origins: tuple[str, ...] = ()  # the browser origins a publishable key is accepted from

    @property
    def publishable(self) -> bool:
        return self.scope == PUBLISHABLE_SCOPE

    @property
    def admin(self) -> bool:
        return self.scope == ADMIN_SCOPE

    def as_dict(self) -> dict:
        """The key's public record as JSON (never its secret, which is not stored)."""
        return {**self.__dict__, "origins": list(self.origins)}

    def stored_origins(self) -> str:
        """The origins as the stores keep them: one text column, space-separated (origins hold no spaces)."""
        return " ".join(self.origins)

    @classmethod
    def from_row(cls, row: dict) -> ApiKey:
        """A key from a store row holding KEY_COLUMNS."""
        return cls(**{**row, "origins": tuple(row["origins"].split())})


KEY_COLUMNS = "key_id, tenant, name, created_at, revoked_at, scope, origins"


@dataclass(frozen=True)
class AdminAction:
    """One authenticated admin action, as the audit log keeps it: who, on what, and how it ended."""

    at: str
    tenant: str
    key_id: str
    action: str  # e.g. "corpus.sync", "corpus.upload", "key.create"
    target: str  # e.g. the corpus name or key id
    outcome: str  # "ok", "rejected", or an error code
    detail: str = ""


ADMIN_ACTION_COLUMNS = "at, tenant, key_id, action, target, outcome, detail"


SOURCE_KINDS = ("folder", "git", "crawl", "archive")
JOB_STATUSES = ("queued", "running", "succeeded", "failed", "held")
ACTIVE_JOB_STATUSES = ("queued", "running")


@dataclass(frozen=True)
class CorpusSource:
    """Where a corpus's docs come from, so that a sync can read them again (see citedocs/sync)."""

    corpus: str
    tenant: str
    kind: str  # one of SOURCE_KINDS
    location: str  # a folder, a git working tree, a site URL, or the folder the last upload was unpacked in
    options: dict = field(default_factory=dict)  # base_url, format, branch, pull, every, eval, floors, crawl limits
    webhook_secret: str | None = None  # the HMAC key of POST /hooks/corpora/{name}; None: no webhook
    next_sync_at: str | None = None  # the next scheduled sync (options["every"]), ISO UTC
    updated_at: str = ""


SOURCE_COLUMNS = "corpus, tenant, kind, location, options, webhook_secret, next_sync_at, updated_at"


@dataclass(frozen=True)
class SyncJob:
    """One sync of a corpus, as the jobs table keeps it (the admin routes return ``as_dict``)."""

    id: str
    corpus: str
    tenant: str
    trigger: str  # cli | admin | webhook | schedule | upload
    status: str  # one of JOB_STATUSES
    created_at: str
    attempts: int = 0  # runs started (a worker killed mid-job leaves it running; the job is then retried)
    progress: dict = field(default_factory=dict)  # {"phase": "parse" | "embed" | ..., "done": n, "total": n}
    report: dict | None = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    heartbeat_at: str | None = None
    worker: str | None = None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_JOB_STATUSES

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


JOB_COLUMNS = (
    "id, corpus, tenant, trigger, status, created_at, attempts, progress, report, error, started_at, finished_at,"
    " heartbeat_at, worker"
)
JOB_JSON_FIELDS = ("progress", "report")  # kept as JSON text on both stores


def source_from_row(row: dict) -> CorpusSource:
    return CorpusSource(**{**row, "options": json.loads(row["options"] or "{}")})


def job_from_row(row: dict) -> SyncJob:
    values = dict(row)
    for name in JOB_JSON_FIELDS:
        values[name] = json.loads(values[name]) if values[name] else ({} if name == "progress" else None)
    return SyncJob(**values)


def job_row_values(fields: dict) -> dict:
    """Field values as the stores keep them (the JSON fields as text)."""
    return {k: json.dumps(v) if k in JOB_JSON_FIELDS and v is not None else v for k, v in fields.items()}


@dataclass(frozen=True)
class TraceRow:
    """What insights read of one stored trace: the columns kept beside its JSON payload."""

    trace_id: str
    corpus: str
    created_at: str
    question: str
    refused: bool
    reason: str  # the refusal reason's code ("low_retrieval_confidence"); "" for an answer
    latency_ms: float | None


TRACE_ROW_COLUMNS = "trace_id, corpus, created_at, question, refused, reason, latency_ms"


@dataclass(frozen=True)
class TraceColumns:
    """A trace's payload reduced to the columns insights read (written with the trace; computed once,
    on open, for a trace written by an older citedocs, which kept only the payload)."""

    question: str
    refused: int
    reason: str
    latency_ms: float | None
    citations: tuple[tuple[str, str | None], ...]  # (chunk id, its content hash when answered; None before hashes were kept)

    @classmethod
    def of(cls, payload: dict) -> TraceColumns:
        hashes = payload.get("cited_hashes") or {}
        latency = (payload.get("latency_ms") or {}).get("total")
        return cls(
            question=str(payload.get("question") or ""),
            refused=int(bool(payload.get("refused"))),
            reason=str(payload.get("refusal_reason") or "").split(":", 1)[0].strip(),
            latency_ms=float(latency) if isinstance(latency, (int, float)) else None,
            citations=tuple((str(cid), hashes.get(cid)) for cid in payload.get("cited_ids") or ()),
        )

    def row(self) -> tuple:
        """question, refused, reason, latency_ms: the order of the stores' UPDATE and INSERT statements."""
        return (self.question, self.refused, self.reason, self.latency_ms)


@dataclass(frozen=True)
class TraceFilter:
    """Which traces an insights read covers: one tenant's (None: all), one corpus (None: all), a time range."""

    tenant: str | None = None
    corpus: str | None = None
    since: str = ""  # ISO timestamp, inclusive
    until: str = "9999"  # ISO timestamp, exclusive
    outcome: str | None = None  # one of TRACE_OUTCOMES: only refused, answered, or voted-down traces

    def sql(self, seek_days: bool = False, seek_time: bool = True) -> tuple[str, tuple]:
        """The WHERE clause over the traces or citations (``t``), in SQLite's placeholders, and its
        parameters: only the conditions that apply, so an index that starts with the tenant serves a
        tenant's rows in its own order (an ``x IS NULL OR`` condition would keep any index from it).

        ``seek_days``: the range is sought on the day (``substr(created_at, 1, 10)``, what the
        traces_insights index starts with after the tenant), each row's time still tested exactly;
        ``seek_time=False``: the time is tested on each row (``+``: SQLite reads the index in its
        order instead of seeking the range, which would cost a sort for the GROUP BY)."""
        terms: list[str] = []
        params: list[str] = []
        if self.tenant is not None:
            terms.append("t.tenant = ?")
            params.append(self.tenant)
        if self.corpus is not None:
            terms.append("t.corpus = ?")
            params.append(self.corpus)
        if seek_days:
            terms.append("substr(t.created_at, 1, 10) BETWEEN ? AND ?")
            params += [self.since[:10], self.until[:10]]
        column = "t.created_at" if seek_time else "+t.created_at"
        terms += [f"{column} >= ?", f"{column} < ?"]
        params += [self.since, self.until]
        if self.outcome is not None:
            terms.append(TRACE_OUTCOMES[self.outcome])
        return " AND ".join(terms), tuple(params)


# The tables both stores define alike, in either dialect: ``serial_key`` an auto-numbered primary key,
# ``blob`` a byte string, ``job_order`` a column that orders jobs (PostgreSQL's text ids and times don't).
SHARED_TABLES = """\
CREATE TABLE IF NOT EXISTS trace_citations (
    trace_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    corpus TEXT NOT NULL,
    created_at TEXT NOT NULL,
    chunk_id TEXT NOT NULL,
    content_hash TEXT
);
CREATE INDEX IF NOT EXISTS trace_citations_trace ON trace_citations (trace_id);
CREATE INDEX IF NOT EXISTS trace_citations_insights ON trace_citations (tenant, corpus, chunk_id, content_hash, created_at);
CREATE TABLE IF NOT EXISTS feedback (
    id {serial_key},
    trace_id TEXT NOT NULL REFERENCES traces(trace_id),
    verdict TEXT NOT NULL,
    comment TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    scope TEXT NOT NULL DEFAULT 'full',
    origins TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS gap_marks (
    trace_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    marked_by TEXT NOT NULL,
    marked_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS admin_actions (
    id {serial_key},
    at TEXT NOT NULL,
    tenant TEXT NOT NULL,
    key_id TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS corpus_sources (
    corpus TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    location TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{{}}',
    webhook_secret TEXT,
    next_sync_at TEXT,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sync_jobs (
{job_order}    id TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    tenant TEXT NOT NULL,
    trigger TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    progress TEXT NOT NULL DEFAULT '{{}}',
    report TEXT,
    error TEXT,
    started_at TEXT,
    finished_at TEXT,
    heartbeat_at TEXT,
    worker TEXT,
    archive {blob}
);
CREATE UNIQUE INDEX IF NOT EXISTS sync_jobs_one_active ON sync_jobs (corpus) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS sync_jobs_created ON sync_jobs (created_at);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    corpus TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (corpus, delivery_id)
);
"""


def shared_tables(serial_key: str, blob: str, job_order: str = "") -> str:
    """SHARED_TABLES in one store's dialect."""
    return SHARED_TABLES.format(serial_key=serial_key, blob=blob, job_order=job_order)


_VOTED_DOWN = "SELECT trace_id FROM feedback WHERE verdict = 'down'"
TRACE_OUTCOMES = {"refused": "t.refused", "answered": "NOT t.refused", "thumbs_down": f"t.trace_id IN ({_VOTED_DOWN})"}
# index-only reads of the traces' insight columns, and of a trace's range columns by its id (feedback
# joins): no insights scan touches the (large) payloads. traces_insights is in the order the counts
# group by (tenant, day, corpus, outcome), so the database counts a day's rows as it reads them
# instead of sorting every row in range first.
TRACE_COLUMNS_INDEX = (
    "CREATE INDEX IF NOT EXISTS traces_insights_days ON traces"
    " (tenant, substr(created_at, 1, 10), corpus, refused, reason, created_at, latency_ms)",
    "CREATE INDEX IF NOT EXISTS traces_range ON traces (trace_id, created_at, tenant, corpus)",
)
# indexes an older citedocs made that the ones above replace
DROPPED_INDEXES = ("traces_insights",)


@dataclass(frozen=True)
class InsightsQuery:
    """One insights read: SQL in SQLite's placeholders with ``{where}`` (TraceFilter.sql) and how its
    range is sought."""

    sql: str
    seek_days: bool = False
    seek_time: bool = True

    def render(self, where: TraceFilter, **parts: str) -> tuple[str, tuple]:
        clause, params = where.sql(self.seek_days, self.seek_time)
        return self.sql.format(where=clause, **parts), params


# The insights' reads aggregate in the database, so a large history never crosses into Python row by
# row; each groups by the tenant first (the order of its index; the caller adds the tenants up).
INSIGHTS_SQL = {
    # (tenant, day, corpus, refused, reason, count)
    "counts": InsightsQuery(
        "SELECT t.tenant, substr(t.created_at, 1, 10), t.corpus, t.refused, t.reason, count(*) FROM traces t"
        " WHERE {where} GROUP BY 1, 2, 3, 4, 5",
        seek_days=True,
        seek_time=False,
    ),
    "latencies": InsightsQuery(
        "SELECT t.latency_ms FROM traces t WHERE {where} AND t.latency_ms IS NOT NULL", seek_days=True, seek_time=False
    ),
    # (tenant, corpus, chunk id, content hash when cited, times cited), in the order of trace_citations_insights
    "citations": InsightsQuery(
        "SELECT t.tenant, t.corpus, t.chunk_id, t.content_hash, count(*) FROM trace_citations t"
        " WHERE {where} GROUP BY 1, 2, 3, 4",
        seek_time=False,
    ),
    # (trace id, created_at, chunk id, content hash when cited) of the citations of some of one corpus's
    # chunks: the filter's parameters, then the corpus, then the chunk ids ({chunk_ids}: each store's list)
    "citing": InsightsQuery(
        "SELECT t.trace_id, t.created_at, t.chunk_id, t.content_hash FROM trace_citations t"
        " WHERE {where} AND t.corpus = ? AND t.chunk_id IN ({chunk_ids}) ORDER BY t.created_at DESC, t.trace_id"
    ),
    "feedback": InsightsQuery(
        "SELECT f.trace_id, f.verdict, f.comment, f.created_at FROM feedback f"
        " JOIN traces t ON t.trace_id = f.trace_id WHERE {where} ORDER BY f.id"
    ),
    # refused (not for a backend failure) or voted down: the docs gaps' questions, newest first
    # (TRACE_ROW_COLUMNS, then whether it was voted down)
    "gap_candidates": InsightsQuery(
        f"SELECT {', '.join('t.' + c for c in TRACE_ROW_COLUMNS.split(', '))}, t.trace_id IN ({_VOTED_DOWN})"
        " FROM traces t WHERE {where} AND ((t.refused AND t.reason <> 'backend_error')"
        f" OR t.trace_id IN ({_VOTED_DOWN})) ORDER BY t.created_at DESC"
    ),
    # TRACE_ROW_COLUMNS of the traces in range, newest first
    "rows": InsightsQuery(f"SELECT {TRACE_ROW_COLUMNS} FROM traces t WHERE {{where}} ORDER BY t.created_at DESC"),
}


@dataclass(frozen=True)
class DocumentRecord:
    path: str
    file_hash: str
    chunk_ids: tuple[ChunkId, ...]


@dataclass(frozen=True)
class ChunkVectors:
    """What the index keeps of a chunk's embedding pass: the unit sentence vector (dense retrieval)
    and its token vectors packed small (``token_codec``), the late-interaction reranker's side of the match."""

    sentence: np.ndarray
    tokens: PackedTokens | None  # None: the reranker encodes the chunk itself

    @classmethod
    def packed(cls, sentence: np.ndarray, tokens: np.ndarray, token_format: str) -> ChunkVectors:
        return cls(np.asarray(sentence, dtype=np.float32), PackedTokens.pack(tokens, token_format))


@dataclass
class IngestChanges:
    """Everything one ingest run writes; applied in a single transaction."""

    corpus: CorpusInfo
    upsert_chunks: list[tuple[Chunk, ChunkVectors]] = field(default_factory=list)
    delete_chunk_ids: list[ChunkId] = field(default_factory=list)
    upsert_documents: list[DocumentRecord] = field(default_factory=list)
    delete_document_paths: list[str] = field(default_factory=list)


class CorpusOwnedByOtherTenant(ValueError):
    pass


class StoreUnavailable(RuntimeError):
    """The configured store cannot be opened; the message says what to fix."""


class StoreFull(RuntimeError):
    """The disk under the store ran out of space during a write, which was rolled back; the message
    says what was lost and what to do."""

    def __init__(self, where: str, lost: str, then: str = "") -> None:
        super().__init__(
            f"no space left on the disk that holds {where}: {lost}; free disk space there (or move it to a"
            f" larger disk){', then ' + then if then else ''}"
        )


def ingest_lost(corpus: str) -> tuple[str, str]:
    """StoreFull's ``lost`` and ``then`` for an ingest (its one transaction rolled back)."""
    return f"the ingest of corpus {corpus!r} was rolled back and its live version keeps serving unchanged", "run the ingest again"


def trace_lost(trace_id: str) -> tuple[str]:
    """StoreFull's ``lost`` for an answer's trace (the answer itself is still given)."""
    return (f"the trace {trace_id} of an answer was not saved",)


# Fault injection for the crash-safety tests only: pause inside the write transaction so the test
# can kill the process while the transaction is open.
_PAUSE_IN_WRITE_ENV = "CITEDOCS_FAULT_PAUSE_IN_WRITE"


def pause_mid_write_if_asked(written_before: int, written_after: int, total: int) -> None:
    """Pause (fault injection only) once the writes cross the half-way mark."""
    if written_before <= total // 2 < written_after and os.environ.get(_PAUSE_IN_WRITE_ENV):
        time.sleep(float(os.environ[_PAUSE_IN_WRITE_ENV]))


_PAUSE_IN_EMBED_ENV = "CITEDOCS_FAULT_PAUSE_IN_EMBED"


def pause_mid_embed_if_asked() -> None:
    """Pause (fault injection only) after each embedded group, so a test can kill a worker mid-embed."""
    if os.environ.get(_PAUSE_IN_EMBED_ENV):
        time.sleep(float(os.environ[_PAUSE_IN_EMBED_ENV]))


class Store(Protocol):
    """``tenant=None`` in a read means "any tenant" (auth off, or the operator's CLI)."""

    def list_corpora(self, tenant: str | None = None) -> list[CorpusInfo]: ...

    def get_corpus(self, name: str) -> CorpusInfo | None: ...

    def documents(self, corpus: str) -> dict[str, DocumentRecord]: ...

    def chunk_hashes(self, corpus: str) -> dict[ChunkId, str]: ...

    def apply_ingest(self, changes: IngestChanges) -> None:
        """Raises CorpusOwnedByOtherTenant if the corpus exists under a different tenant."""
        ...

    def get_chunks(self, corpus: str, ids: list[ChunkId]) -> list[Chunk]: ...

    def lexical_search(
        self, corpus: str, terms: list[str], limit: int, match_all: bool = False
    ) -> list[tuple[ChunkId, float]]: ...

    def dense_search(self, corpus: str, query_vector: np.ndarray, limit: int) -> list[tuple[ChunkId, float]]:
        """The chunks whose unit sentence vectors have the highest inner product with the query's."""
        ...

    def export_chunks(self, corpus: str) -> Iterator[tuple[Chunk, ChunkVectors]]:
        """Every chunk with its stored vectors (copying an index to another backend needs no re-embedding)."""
        ...

    def token_vectors(self, corpus: str, ids: list[ChunkId]) -> dict[ChunkId, PackedTokens]:
        """Stored token vectors, packed (see ``ChunkVectors``); chunks indexed without them are absent."""
        ...

    def save_trace(self, trace_id: str, corpus: CorpusInfo, created_at: str, payload: dict) -> None:
        ...

    def get_trace(self, trace_id: str, tenant: str | None = None) -> dict | None: ...

    def save_feedback(self, trace_id: str, verdict: str, comment: str | None, created_at: str) -> None: ...

    def trace_rows(self, where: TraceFilter, limit: int | None = None) -> list[TraceRow]:
        """The traces in range, newest first (``limit``: only the newest that many)."""
        ...

    def insights_rows(self, where: TraceFilter, queries: Sequence[str], limit: int | None = None) -> dict[str, list[tuple]]:
        """The rows of some of INSIGHTS_SQL's queries over the traces in range, by name (``limit``: at
        most that many each); the traces an older citedocs wrote since the store opened are summarised
        first, once for all of them."""
        ...

    def citing_traces(self, where: TraceFilter, corpus: str, chunk_ids: list[str]) -> list[tuple]:
        """INSIGHTS_SQL["citing"]: the citations in range of these chunks of ``corpus``."""
        ...

    def trace_payloads(self, trace_ids: list[str]) -> dict[str, dict]:
        """The stored payloads of these traces (without feedback), by trace id."""
        ...

    def prune_traces(self, created_before: str) -> int:
        """Delete traces created before this ISO timestamp, with their feedback; return how many."""
        ...

    def add_api_key(self, key: ApiKey, secret_sha256: str) -> None: ...

    def find_api_key(self, secret_sha256: str) -> ApiKey | None: ...

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]: ...

    def revoke_api_key(self, key_id: str, revoked_at: str) -> ApiKey | None:
        """The key as revoked (first revocation time kept), or None if there is no such key."""
        ...

    def mark_gaps(self, trace_ids: list[str], state: str, marked_by: str, at: str) -> None:
        """Mark refused or down-voted questions as no docs gap any more (``state``: dismissed by an
        admin, or resolved by a sync job); a later mark replaces an earlier one."""
        ...

    def gap_marks(self, trace_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        """trace id -> (state, marked_by, marked_at) of those marked."""
        ...

    def record_admin_action(self, action: AdminAction) -> None:
        """Append one entry to the audit log of admin actions (never updated or deleted by citedocs)."""
        ...

    def admin_actions(self, tenant: str | None = None, limit: int = 100) -> list[AdminAction]:
        """The newest audit entries first, of one tenant or (None) of all."""
        ...

    # sources, sync jobs and webhook deliveries (citedocs/sync) ---------------------------------------
    def save_source(self, source: CorpusSource) -> None: ...

    def get_source(self, corpus: str) -> CorpusSource | None: ...

    def list_sources(self, tenant: str | None = None) -> list[CorpusSource]: ...

    def move_next_sync(self, corpus: str, expected: str | None, new: str | None) -> bool:
        """Set the corpus's next_sync_at to ``new`` if it still is ``expected`` (one scheduler wins)."""
        ...

    def create_job(self, job: SyncJob, archive: bytes | None = None) -> tuple[SyncJob, bool]:
        """Insert ``job`` unless the corpus has an active (queued or running) job: then that one, and False."""
        ...

    def get_job(self, job_id: str) -> SyncJob | None: ...

    def list_jobs(self, tenant: str | None = None, corpus: str | None = None, limit: int = 50) -> list[SyncJob]:
        """Newest first."""
        ...

    def update_job(self, job_id: str, **fields) -> SyncJob | None: ...

    def claim_job(self, worker: str, now: str, job_id: str | None = None) -> SyncJob | None:
        """Mark the oldest queued job (or ``job_id`` if queued) running for ``worker``; None if there is none."""
        ...

    def stale_jobs(self, heartbeat_before: str) -> list[SyncJob]:
        """Running jobs whose worker has not reported since ``heartbeat_before`` (it died)."""
        ...

    def job_archive(self, job_id: str) -> bytes | None: ...

    def record_delivery(self, corpus: str, delivery_id: str, at: str, forget_before: str) -> bool:
        """Remember a webhook delivery id; False if it was seen already (a replay). Ids older than
        ``forget_before`` are forgotten."""
        ...

    def close(self) -> None: ...
