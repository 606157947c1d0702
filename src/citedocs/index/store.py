"""The storage interface every index backend implements.

It is deliberately narrow (corpora, documents, chunks with vectors, lexical and nearest-vector
search, traces, API keys) so that the embedded SQLite default (``sqlite.py``) and PostgreSQL +
pgvector (``postgres.py``) are interchangeable: retrieval, the API and the CLI see only this.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
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

    def save_trace(self, trace_id: str, corpus: CorpusInfo, created_at: str, payload: dict) -> None: ...

    def get_trace(self, trace_id: str, tenant: str | None = None) -> dict | None: ...

    def save_feedback(self, trace_id: str, verdict: str, comment: str | None, created_at: str) -> None: ...

    def prune_traces(self, created_before: str) -> int:
        """Delete traces created before this ISO timestamp, with their feedback; return how many."""
        ...

    def add_api_key(self, key: ApiKey, secret_sha256: str) -> None: ...

    def find_api_key(self, secret_sha256: str) -> ApiKey | None: ...

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]: ...

    def revoke_api_key(self, key_id: str, revoked_at: str) -> ApiKey | None:
        """The key as revoked (first revocation time kept), or None if there is no such key."""
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
