"""Incremental, crash-safe ingestion of a folder of docs into a named corpus."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from .. import config
from ..config import DEFAULT_TENANT
from ..models.encoders import LATE_INTERACTION_TOKENS, BiEncoder, ModelMissing, dense_encoder, dense_mark
from ..language import pages_mark, pipeline_language
from ..index.store import ChunkVectors, CorpusInfo, DocumentRecord, IngestChanges, Store, pause_mid_embed_if_asked
from ..types import Chunk, ChunkId, content_hash
from .admission import AdmissionDecision, AdmissionPolicy
from .boundary import OutsideRoot, inside, walk_docs
from .chunker import CHUNKER_VERSION, chunk_document
from .document import DocumentError, ReaderUnavailable
from . import inventory
from .page_language import corpus_language, language_notes, page_language
from .planted import FlaggedSentence
from .readers import Reader
from .readers.mdx import MDX


class IngestError(ValueError):
    """The whole run cannot proceed (bad folder, bad arguments); nothing was written."""


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str
    kept_previous: bool  # the last good version of this file stays searchable


@dataclass(frozen=True)
class HiddenContent:
    """Text a page holds but a browser does not show (readers/visibility.py): dropped, never evidence."""

    path: str
    dropped: dict[str, int]  # reason ("display:none", "hidden attribute", ...) -> elements that held text

    def describe(self) -> str:
        return ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()))


@dataclass
class IngestReport:
    corpus: str
    files_seen: int = 0
    files_parsed: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # "<path>: <what the reader dropped or could not resolve>"
    plan: str = ""  # the format, base URL and folder read, and why (set by the service that chose them)
    admission: list[AdmissionDecision] = field(default_factory=list)  # one per file seen
    flagged: list[FlaggedSentence] = field(default_factory=list)  # planted instructions withheld from the chunks
    hidden: list[HiddenContent] = field(default_factory=list)  # per page, what a browser does not show (dropped)
    policy: str = "default"  # the admission policy file, or "default"
    admission_report: Path | None = None  # where the admission report was written
    version: str = ""
    seconds: float = 0.0
    dense_model: str = "minilm"  # whose vectors the dense stage searches (setting dense_model)
    languages: Counter[str] = field(default_factory=Counter)  # pages parsed by this ingest, per language
    changed_ids: list[str] = field(default_factory=list)  # chunks added or whose text changed (what a sync report lists)
    removed_ids: list[str] = field(default_factory=list)  # chunks that vanished

    def file_outcomes(self) -> list[AdmissionDecision]:
        """Every file seen: admitted, or rejected by the policy or as malformed, with the reason."""
        malformed = {s.path: f"malformed: {s.reason}" for s in self.skipped}
        return [AdmissionDecision(d.path, False, malformed[d.path]) if d.path in malformed else d for d in self.admission]

    def rejected_by_reason(self) -> Counter[str]:
        return Counter(d.reason.split(":")[0] for d in self.file_outcomes() if not d.admitted)

    def write_admission_report(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        outcomes = self.file_outcomes()
        body = {
            "corpus": self.corpus,
            "version": self.version,
            "policy": self.policy,
            "admitted": sum(d.admitted for d in outcomes),
            "rejected": dict(self.rejected_by_reason()),
            "files": [asdict(d) for d in outcomes],
            "flagged_sentences": [asdict(f) for f in self.flagged],
            "hidden_content": [asdict(h) for h in self.hidden],
            "notes": self.notes,  # what the readers dropped or could not resolve, "<path>: <note>"
        }
        path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)
_FRONTMATTER = re.compile(r"\A---\r?\n.*?\r?\n---\r?\n", re.S)


def _decode(path: Path, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise DocumentError("binary file (contains NUL bytes), not Markdown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not valid UTF-8 (byte {exc.start}); re-save the file as UTF-8") from exc


def corpus_version(hashes: dict[ChunkId, str]) -> str:
    return content_hash(*(f"{cid}={h}" for cid, h in sorted(hashes.items())))


def find_documents(source_dir: Path, reader: Reader = MDX) -> list[Path]:
    return _walk(source_dir, reader)[0]


def _walk(source_dir: Path, reader: Reader) -> tuple[list[Path], list[OutsideRoot]]:
    """The docs files inside ``source_dir``, and the links that lead out of it (never read)."""
    kinds = ", ".join(f"*{s}" for s in reader.suffixes)
    if not source_dir.exists():
        raise IngestError(f"folder not found: {source_dir}. Pass the folder that holds your docs ({kinds}).")
    if not source_dir.is_dir():
        raise IngestError(f"not a folder: {source_dir}. Pass the folder that holds your docs ({kinds}).")
    files, outside = walk_docs(source_dir, tuple(reader.suffixes))
    if not files:
        markdown, _ = walk_docs(source_dir, (".md", ".mdx"))
        hint = (
            f" It holds {len(markdown)} Markdown files, which Sphinx reads (as MyST) only when the conf.py"
            " with the docs names myst_parser or myst_nb in its extensions; none found here does"
            " (or it is not valid Python: the detection note says)."
            if reader.name == "rst" and markdown
            else ""
        )
        raise IngestError(
            f"no {reader.label} files ({kinds}) under {source_dir}; nothing was changed.{hint} "
            "Check the path, or name the docs format with --format."
        )
    return files, outside


def _too_large(size: int, limit: int) -> str:
    return (
        f"too_large: {size:,} bytes, over the {limit:,}-byte limit; split the file, or raise the limit "
        "with --max-file-size / max_file_bytes"
    )


def _no_chunks(text: str) -> DocumentError:
    return DocumentError(
        f"no text could be extracted from its {len(text):,} characters (e.g. lists or quotes nested deeper "
        "than the Markdown parser follows); flatten the structure so it can be cited"
    )


@dataclass(frozen=True)
class ChunkQuota:
    """How many chunks the corpus's new version may hold: its tenant's quota less its other corpora's chunks."""

    tenant: str
    limit: int  # the tenant_max_chunks setting
    others: int  # chunks of the tenant's other corpora

    @property
    def room(self) -> int:
        return self.limit - self.others

    def refusal(self, chunks: int) -> str:
        return (
            f"the new version has {chunks:,} chunks; with the {self.others:,} of tenant {self.tenant!r}'s other corpora that "
            f"is over its quota of {self.limit:,} chunks (tenant_max_chunks). Nothing was changed: remove docs, or ask "
            "the operator to raise the quota"
        )


def ingest_corpus(
    store: Store,
    encoder: BiEncoder,
    source_dir: Path,
    corpus: str,
    base_url: str,
    progress: ProgressFn | None = None,
    policy: AdmissionPolicy = AdmissionPolicy(),
    tenant: str = DEFAULT_TENANT,
    reader: Reader = MDX,
    max_file_bytes: int | None = None,
    chunk_quota: ChunkQuota | None = None,
) -> IngestReport:
    """Parse changed files, embed changed chunks, then write everything in one transaction.

    Files larger than ``max_file_bytes`` (default: the max_file_bytes setting) are not read. A
    version with more chunks than ``chunk_quota`` allows is refused before anything is embedded."""
    limit = max_file_bytes or config.setting("max_file_bytes")
    started = datetime.now(timezone.utc)
    if not corpus or not corpus.replace("-", "").replace("_", "").isalnum():
        raise IngestError(f"invalid corpus name {corpus!r}: use letters, digits, '-' or '_'")
    if not base_url.startswith(("http://", "https://")):
        raise IngestError(f"--base-url must be an http(s) URL, got {base_url!r}")
    files, outside = _walk(source_dir, reader)
    screen = inventory.screen_for(corpus, base_url, policy)  # with what an admin approved in the inventory
    token_format = config.setting("token_format")
    report = IngestReport(corpus=corpus, files_seen=len(files) + len(outside), policy=str(policy.source or "default"))
    report.admission.extend(AdmissionDecision(o.link, False, o.reason) for o in outside)
    new_docs: dict[str, DocumentRecord] = {}
    fresh_chunks: dict[ChunkId, Chunk] = {}
    kept_ids: set[ChunkId] = set()
    entries = []
    for path in files:
        rel = path.relative_to(source_dir).as_posix()
        if not inside(path, source_dir):  # re-checked at read time: a link swapped since the walk
            report.admission.append(AdmissionDecision(rel, False, OutsideRoot(rel, str(path.resolve())).reason))
            continue
        size = path.stat().st_size
        if size > limit:
            report.admission.append(AdmissionDecision(rel, False, _too_large(size, limit)))
            continue
        data = path.read_bytes()
        decision = policy.decide(rel, data)
        report.admission.append(decision)
        if not decision.admitted:  # not in new_docs: its chunks are removed in the same transaction
            continue
        entries.append((path, path.relative_to(source_dir).as_posix(), data, hashlib.sha256(data).hexdigest()[:16]))
    previous = store.get_corpus(corpus)
    language, dense_model = _language_and_dense_model(store, corpus, previous, entries)
    report.dense_model = dense_model
    try:
        dense = dense_encoder(dense_model)
    except ModelMissing as exc:
        raise IngestError(f"{exc}, or set CITEDOCS_DENSE_MODEL=minilm. Nothing was changed.") from None
    pipeline = (
        f"{reader.name}-{reader.version}+chunker-{CHUNKER_VERSION}+{encoder.name}+tokens{LATE_INTERACTION_TOKENS}-{token_format}"
        f"+screen-{screen.fingerprint()}{dense_mark(dense_model)}{pages_mark(language)}"
    )
    rebuild = previous is None or previous.pipeline != pipeline or previous.base_url != base_url
    # only the screen changed (a host approved): every file is read again, unchanged chunks keep their vectors
    reparse = rebuild and previous is not None and previous.base_url == base_url and _unscreened(previous.pipeline) == _unscreened(pipeline)
    rebuild = rebuild and not reparse
    old_docs = {} if rebuild or reparse else store.documents(corpus)
    old_hashes = {} if rebuild else store.chunk_hashes(corpus)
    # ids held by unchanged files: a new or edited file that maps to the same page must not take them
    commit = inventory.git_commit(source_dir)
    fresh_entries: list[inventory.Entry] = []
    withheld_rows: list[dict] = []
    claimed = {
        cid for _, rel, _, h in entries if rel in old_docs and old_docs[rel].file_hash == h for cid in old_docs[rel].chunk_ids
    }
    for n, (path, rel, data, file_hash) in enumerate(entries, start=1):
        old = old_docs.get(rel)
        if old and old.file_hash == file_hash:
            new_docs[rel] = old
            kept_ids.update(old.chunk_ids)
        else:
            try:
                text = _decode(path, data)
                parsed = chunk_document(rel, text, base_url, reader, source_dir, screen)
                # a note, a withheld sentence or hidden content says why text was dropped
                unexplained = not parsed.withheld and not parsed.page.notes and not parsed.page.hidden
                if not parsed.chunks and unexplained and re.search(r"\w", _FRONTMATTER.sub("", text, count=1)):
                    raise _no_chunks(text)
                clash = [c.id for c in parsed.chunks if c.id in fresh_chunks or c.id in claimed]
                if clash:
                    raise DocumentError(f"its chunk ids clash with another file's (e.g. {clash[0]})")
            except ReaderUnavailable as exc:
                raise IngestError(str(exc)) from None
            except DocumentError as exc:
                report.skipped.append(SkippedFile(rel, str(exc), kept_previous=old is not None))
                if old:  # keep serving the last good version rather than losing it
                    new_docs[rel] = old
                    kept_ids.update(old.chunk_ids)
            else:
                report.files_parsed += 1
                if parsed.chunks:
                    page_lang = page_language(parsed.page, "\n".join(c.text for c in parsed.chunks))[0]
                    report.languages[page_lang] += 1
                    parsed = replace(parsed, chunks=[replace(c, language=page_lang) for c in parsed.chunks])
                report.notes.extend(f"{rel}: {note}" for note in parsed.page.notes)
                report.flagged.extend(parsed.withheld)
                fresh_entries.extend(replace(e, commit=commit) for e in parsed.inventory)
                withheld_rows.extend(
                    {"path": rel, "title": parsed.page.title, "url": f"{parsed.page.url}#{f.section}" if f.section else parsed.page.url,
                     "reason": f.reason, "sentence": f.sentence}
                    for f in parsed.withheld
                )
                if parsed.page.hidden:
                    report.hidden.append(HiddenContent(rel, dict(parsed.page.hidden)))
                fresh_chunks.update((c.id, c) for c in parsed.chunks)
                new_docs[rel] = DocumentRecord(rel, file_hash, tuple(c.id for c in parsed.chunks))
        if progress:
            progress("parse", n, len(entries))

    report.notes.extend(f"languages: {note}" for note in language_notes(report.languages))
    kept_ids -= fresh_chunks.keys()
    to_embed = [c for c in fresh_chunks.values() if old_hashes.get(c.id) != c.hash]
    report.added = sum(1 for c in to_embed if c.id not in old_hashes)
    report.changed = len(to_embed) - report.added
    report.unchanged = len(kept_ids) + len(fresh_chunks) - len(to_embed)
    new_ids = kept_ids | fresh_chunks.keys()
    removed = [cid for cid in old_hashes if cid not in new_ids]
    report.removed = len(removed)

    if chunk_quota is not None and len(new_ids) > chunk_quota.room:
        raise IngestError(chunk_quota.refusal(len(new_ids)))
    vectors = _embed(encoder, to_embed, token_format, progress, dense)
    hashes = {cid: old_hashes[cid] for cid in kept_ids} | {c.id: c.hash for c in fresh_chunks.values()}
    report.version = corpus_version(hashes)
    changes = IngestChanges(
        corpus=CorpusInfo(
            name=corpus,
            base_url=base_url,
            source_dir=str(source_dir.resolve()),
            version=report.version,
            pipeline=pipeline,
            chunk_count=len(hashes),
            updated_at=started.isoformat(timespec="seconds"),
            tenant=tenant,
        ),
        upsert_chunks=list(zip(to_embed, vectors)),
        delete_chunk_ids=removed if not rebuild else _all_ids_of(store, corpus, previous),
        upsert_documents=[d for p, d in new_docs.items() if old_docs.get(p) != d],
        delete_document_paths=[p for p in (store.documents(corpus) if rebuild or reparse else old_docs) if p not in new_docs],
    )
    store.apply_ingest(changes)
    reread = {e.path for e in fresh_entries} | {w["path"] for w in withheld_rows}
    kept_paths = [p for p, d in new_docs.items() if old_docs.get(p) == d and p not in reread]
    inventory.save(corpus, kept_paths, fresh_entries, withheld_rows)
    report.changed_ids = sorted(c.id for c in to_embed)
    report.removed_ids = sorted(set(changes.delete_chunk_ids) - hashes.keys())
    report.seconds = (datetime.now(timezone.utc) - started).total_seconds()
    return report


def _language_and_dense_model(
    store: Store, corpus: str, previous: CorpusInfo | None, entries: list[tuple[Path, str, bytes, str]]
) -> tuple[str, str]:
    """The corpus's main language and its dense model (setting ``dense_model``; ``auto``: multilingual-e5
    where the pages are mostly not English, or users ask in a language other than theirs (setting
    ``question_languages``), else MiniLM). Files unchanged since the last ingest keep the language it
    recorded, so a sync that finds nothing changed reads no text and loads no language identifier."""
    unchanged = previous is not None and {rel: h for _, rel, _, h in entries} == {
        rel: d.file_hash for rel, d in store.documents(corpus).items()
    }
    if unchanged:
        language = pipeline_language(previous.pipeline)
    else:
        language = corpus_language([(rel, data.decode("utf-8", errors="replace")) for _, rel, data, _ in entries])
    choice = config.setting("dense_model")
    if choice != "auto":
        return language, choice
    asked = set(filter(None, config.setting("question_languages").split(","))) | {language}
    return language, "minilm" if asked == {"en"} else "multilingual-e5"


def _unscreened(pipeline: str) -> str:
    return re.sub(r"\+screen-[0-9a-f]+", "", pipeline)


def _all_ids_of(store: Store, corpus: str, previous: CorpusInfo | None) -> list[ChunkId]:
    return list(store.chunk_hashes(corpus)) if previous else []


def _embed(
    encoder: BiEncoder, chunks: list[Chunk], token_format: str, progress: ProgressFn | None, dense: BiEncoder | None = None
) -> list[ChunkVectors]:
    """Embed in length-sorted groups: similar lengths share a batch, so little time goes to padding.
    ``encoder`` gives the reranker's token vectors and, unless a ``dense`` model is chosen, the
    sentence vector the dense stage searches."""
    order = sorted(range(len(chunks)), key=lambda i: len(chunks[i].text))
    vectors: list[ChunkVectors | None] = [None] * len(chunks)
    group = 256
    for start in range(0, len(order), group):
        part = order[start : start + group]
        texts = [chunks[i].embedding_text() for i in part]
        pairs = encoder.encode_with_tokens(texts, LATE_INTERACTION_TOKENS)
        sentences = [s for s, _ in pairs] if dense is None else list(dense.encode(texts, batch_size=16))
        for i, sentence, (_, tokens) in zip(part, sentences, pairs):
            vectors[i] = ChunkVectors.packed(sentence, tokens, token_format)
        if progress:
            progress("embed", min(start + group, len(chunks)), len(chunks))
        pause_mid_embed_if_asked()
    return vectors  # type: ignore[return-value]
