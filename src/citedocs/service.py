"""Service functions shared by the CLI and the HTTP API (both are thin adapters over these)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from . import config
from .encoders import BiEncoder, bi_encoder
from .index.sqlite import SQLiteStore
from .index.store import CorpusInfo, Store
from .ingest.admission import approve, default_report_path, remember_policy, resolve_policy
from .ingest.pipeline import IngestReport, ProgressFn, find_documents, ingest_corpus
from .retrieve.hybrid import HybridRetriever, RetrievalConfig, RetrievalResult
from .retrieve.rerank import default_reranker
from .ask import AskEvent, AskPipeline
from .contract import MAX_QUESTION_CHARS, AskRequest, AskResponse
from .generate.base import Generator
from .validate.support import SupportChecker
from .validate.thresholds import Thresholds, load_thresholds
from .validate.validator import CitationValidator


class UnknownCorpus(LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        hint = f"indexed corpora: {', '.join(known)}" if known else "no corpus is indexed yet; run `citedocs ingest` first"
        super().__init__(f"unknown corpus {name!r} ({hint})")
        self.name = name
        self.known = known


class EmptyQuestion(ValueError):
    pass


def check_question(question: str) -> str:
    text = (question or "").strip()
    if not text:
        raise EmptyQuestion("the question is empty; ask something about the docs")
    if len(text) > MAX_QUESTION_CHARS:
        raise EmptyQuestion(f"the question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return text


@dataclass
class Services:
    """The process-wide components, created lazily so that `--help` stays fast."""

    store: Store
    backend: str | None = None  # None: the configured default (see generate.select)

    @classmethod
    def open(cls, db_path: Path | None = None, backend: str | None = None) -> Services:
        return cls(store=SQLiteStore(db_path or config.database_path()), backend=backend)

    @cached_property
    def encoder(self) -> BiEncoder:
        return bi_encoder()

    @cached_property
    def retriever(self) -> HybridRetriever:
        return HybridRetriever(self.store, self.encoder, default_reranker(self.store.token_vectors))

    @cached_property
    def thresholds(self) -> Thresholds:
        return load_thresholds()

    @cached_property
    def generator(self) -> Generator:
        from .generate.select import make_generator

        return make_generator(self.backend, self.encoder, self.thresholds)

    @cached_property
    def pipeline(self) -> AskPipeline:
        validator = CitationValidator(SupportChecker(self.encoder, self.thresholds))
        return AskPipeline(self.store, self.retriever, self.generator, validator, self.thresholds)

    def corpus(self, name: str) -> CorpusInfo:
        info = self.store.get_corpus(name)
        if info is None:
            raise UnknownCorpus(name, [c.name for c in self.store.list_corpora()])
        return info

    def ingest(
        self,
        source_dir: Path,
        corpus: str,
        base_url: str,
        progress: ProgressFn | None = None,
        admission: Path | None = None,
        report_path: Path | None = None,
    ) -> IngestReport:
        """Ingest under the given (else remembered, else default) admission policy; write the admission report."""
        policy = resolve_policy(corpus, admission)
        report = ingest_corpus(self.store, self.encoder, source_dir, corpus, base_url, progress, policy)
        remember_policy(corpus, policy)
        report.admission_report = report_path or default_report_path(corpus)
        report.write_admission_report(report.admission_report)
        return report

    def approve(self, source_dir: Path, corpus: str, paths: list[str], admission: Path | None = None) -> dict[str, str]:
        """Pin the given corpus-relative paths (default: every doc in the folder) to their current hashes."""
        rels = paths or [p.relative_to(source_dir).as_posix() for p in find_documents(source_dir)]
        return approve(resolve_policy(corpus, admission), source_dir, rels)

    def search(
        self, question: str, corpus: str, k: int = 8, retrieval: RetrievalConfig | None = None
    ) -> RetrievalResult:
        text = check_question(question)
        info = self.corpus(corpus)
        return self.retriever.retrieve(info.name, info.version, text, k, retrieval or RetrievalConfig())

    def ask(self, request: AskRequest) -> AskResponse:
        check_question(request.question)
        return self.pipeline.ask(request, self.corpus(request.corpus or config.default_corpus()))

    def ask_events(self, request: AskRequest):
        """Validated sentences as they are accepted, then the final response (for streaming)."""
        check_question(request.question)
        info = self.corpus(request.corpus or config.default_corpus())
        return self.pipeline.ask_events(request, info)

    def trace(self, trace_id: str) -> dict | None:
        return self.store.get_trace(trace_id)
