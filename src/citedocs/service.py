"""Service functions shared by the CLI and the HTTP API (both are thin adapters over these)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

from . import config, metrics, telemetry
from .auth import NAME_PATTERN, AuthError, bearer_token, new_key_id, new_secret, secret_sha256
from .sso import OidcVerifier, looks_like_jwt
from .models.encoders import BiEncoder, DeferredBiEncoder, ModelMissing, bi_encoder, corpus_dense_choice, dense_encoder, query_encoder
from .index import copy_corpus, open_store
from .index.store import ADMIN_SCOPE, FULL_SCOPE, PUBLISHABLE_SCOPE, AdminAction, ApiKey, CorpusInfo, CorpusOwnedByOtherTenant, Store, TRACE_OUTCOMES, TraceFilter
from .insights import Insights, InsightsRange, InvalidRange, llm_spend, parse_since
from .privacy import redact
from .models.embedding_cache import EmbeddingCache
from .ingest import inventory
from .ingest.admission import approve, default_report_path, remember_policy, resolve_policy
from .ingest.crawl import CrawlError, CrawlReport, CrawlSettings, crawl, crawl_scope, is_url
from .ingest.detect import plan_ingest
from .ingest.pipeline import ChunkQuota, IngestError, IngestReport, ProgressFn, find_documents, ingest_corpus
from .retrieve.hybrid import CorpusModels, HybridRetriever, RetrievalConfig, RetrievalResult
from .language import pipeline_language
from .retrieve.null_level import NullLevels
from .retrieve.rerank import default_reranker
from .ask import AskPipeline
from .contract import MAX_QUESTION_CHARS, AskRequest, AskResponse, CorpusSummary, Passage, SearchResponse
from .generate.base import Generator
from .validate.support import SupportChecker
from .validate.thresholds import Thresholds, load_thresholds
from .validate.validator import CitationValidator


log = logging.getLogger("citedocs.retention")
RESOLVE_LIMIT = 100  # refused questions a sync checks again (the newest): each is one retrieval
audit_log = logging.getLogger("citedocs.audit")


class UnknownCorpus(LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        hint = f"indexed corpora: {', '.join(known)}" if known else "no corpus is indexed yet; run `citedocs ingest` first"
        super().__init__(f"unknown corpus {name!r} ({hint})")
        self.name = name
        self.known = known


class EmptyQuestion(ValueError):
    pass


class UnknownTrace(LookupError):
    def __init__(self, trace_id: str) -> None:
        super().__init__(f"no trace with id {trace_id!r}; trace ids are returned with each answer")


class UnknownKey(LookupError):
    def __init__(self, key_id: str) -> None:
        super().__init__(f"no API key with id {key_id!r}; `citedocs keys list` shows the key ids")


class InvalidName(ValueError):
    pass


class InvalidKeyOrigins(ValueError):
    """A publishable key without origins, origins on a full key, or a value that is not an origin."""


def check_name(kind: str, value: str) -> str:
    if not NAME_PATTERN.match(value or ""):
        raise InvalidName(f"invalid {kind} {value!r}: use 1-64 letters, digits, '-' or '_'")
    return value


# folder names that say "docs live here", not whose docs: `citedocs up my-app/docs` names the corpus my-app
_GENERIC_FOLDERS = frozenset({"doc", "docs", "documentation", "content", "contents", "src", "source", "site", "pages", "website", "en"})


def corpus_name_for(source: str) -> str:
    """The corpus name `citedocs up` uses when none is given: a URL's host
    (``https://docs.example.com/guide/`` -> ``docs-example-com``), else the folder's name, or the
    project's name when the folder has a generic name (``my-app/docs`` -> ``my-app``)."""
    if is_url(source):
        name = (urlsplit(source).hostname or "").removeprefix("www.")
    else:
        folder = Path(source).expanduser().resolve()
        while folder.name.lower() in _GENERIC_FOLDERS and folder.parent != folder:
            folder = folder.parent
        name = folder.name
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")[:64]
    return name or "docs"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def check_question(question: str) -> str:
    text = (question or "").strip()
    if not text:
        raise EmptyQuestion("the question is empty; ask something about the docs")
    if len(text) > MAX_QUESTION_CHARS:
        raise EmptyQuestion(f"the question is {len(text)} characters long; the limit is {MAX_QUESTION_CHARS}")
    return text


@dataclass
class Services:
    """The process-wide components, created lazily so that `--help` stays fast.

    Methods that take ``tenant`` see only that tenant's corpora and traces; ``tenant=None`` (auth
    off, or the operator's CLI) sees everything.
    """

    store: Store
    backend: str | None = None  # None: the configured default (see generate.select)

    @classmethod
    def open(cls, db_path: Path | None = None, backend: str | None = None) -> Services:
        """Over the SQLite file at ``db_path`` if given, else the configured store (see ``open_store``)."""
        return cls(store=open_store(db_path), backend=backend)

    @cached_property
    def encoder(self) -> BiEncoder:
        return bi_encoder()

    @cached_property
    def retriever(self) -> HybridRetriever:
        return HybridRetriever(
            self.store, self.encoder, default_reranker(self.store.token_vectors), self.corpus_models
        )

    def corpus_models(self, corpus: str) -> CorpusModels:
        """The bi-encoder runtime and the dense model that embedded ``corpus`` (its pipeline string
        says), so its queries are encoded by the same ones whatever the settings say now."""
        info = self.store.get_corpus(corpus)
        if info is None:
            return CorpusModels(self.encoder)
        return CorpusModels(
            query_encoder(info.pipeline, self.encoder), dense_encoder(corpus_dense_choice(info.pipeline)), pipeline_language(info.pipeline)
        )

    @cached_property
    def question_vectors(self) -> EmbeddingCache:
        """Stored questions' vectors for the docs gaps (repeated insights reads encode only new ones)."""
        return EmbeddingCache(self.encoder, "insights", max_entries=5_000)

    @cached_property
    def thresholds(self) -> Thresholds:
        return load_thresholds()

    @cached_property
    def generator(self) -> Generator:
        from .generate.select import make_generator

        return make_generator(self.backend, self.encoder, self.thresholds.extractive_min_sentence_score)

    @cached_property
    def pipeline(self) -> AskPipeline:
        """With an LLM backend, the LLM also grades chunks before generation and, when it writes the
        answer, verifies each claim (settings llm_grade, llm_verify, llm_answer), and with
        query_expansion = hyde first writes a passage to search beside the question; the lexical support
        check is the fallback, the no-LLM rule, and the whole check of a quoted answer."""
        from .generate.fallback import ProviderChain
        from .generate.grader import LlmGrader
        from .generate.openai_compat import OpenAICompatibleGenerator
        from .generate.quote import QuotingGenerator
        from .generate.yesno import PassageJudge
        from .retrieve.expand import HypotheticalPassage
        from .validate.entailment import LlmEntailmentChecker

        checker = lexical = SupportChecker(self.encoder, self.thresholds)
        grader = expander = None
        quoting = isinstance(self.generator, QuotingGenerator)
        llm = self.generator.llm if quoting else self.generator
        if not isinstance(llm, (OpenAICompatibleGenerator, ProviderChain)):
            llm = None
        else:
            judge = PassageJudge(llm)
            if config.setting("llm_verify") == "on" and not quoting:  # a quote is its chunk's own words
                checker = LlmEntailmentChecker(judge, checker, self.thresholds.min_entailment)
            if config.setting("llm_grade") == "on":
                enough = self.generator.quotes.chunks_considered if quoting else None  # what a quote can use
                grader = LlmGrader(judge, self.thresholds.min_grade, required=quoting, enough=enough)
            if config.setting("query_expansion") == "hyde":
                expander = HypotheticalPassage(llm)
        without_llm = budgets = None
        suggestions = config.setting("suggested_questions")
        if llm is not None and config.setting("tenant_daily_budget_usd"):
            # a tenant past its daily LLM budget is answered as with the extractive backend
            from .generate.accounting import TenantBudgets
            from .generate.select import make_generator

            budgets = TenantBudgets(self.store)
            extractive = make_generator("extractive", self.encoder, self.thresholds.extractive_min_sentence_score)
            without_llm = AskPipeline(
                self.store, self.retriever, extractive, CitationValidator(lexical), self.thresholds,
                on_trace=metrics.observe_trace, suggestions="docs" if suggestions != "off" else "off",
            )
        return AskPipeline(
            self.store,
            self.retriever,
            self.generator,
            CitationValidator(checker),
            self.thresholds,
            on_trace=metrics.observe_trace,
            grader=grader,
            expander=expander,
            budgets=budgets,
            without_llm=without_llm,
            suggestions=suggestions,
            routing=config.setting("llm_routing") == "on",
            write_questions=(lambda prompt: llm.chat([{"role": "user", "content": prompt}], 160)[0]) if llm else None,
            awaiting_review=inventory.awaiting_review,
        )

    def close(self) -> None:
        """Stop what this process started (the local backend's model server)."""
        generator = self.__dict__.get("generator")
        if generator is not None and hasattr(generator, "close"):
            generator.close()

    # corpora -------------------------------------------------------------------------------
    def corpus(self, name: str, tenant: str | None = None) -> CorpusInfo:
        """The named corpus; another tenant's corpus is reported exactly like one that does not exist."""
        info = self.store.get_corpus(name)
        if info is None or (tenant is not None and info.tenant != tenant):
            raise UnknownCorpus(name, [c.name for c in self.store.list_corpora(tenant)])
        return info

    def corpora(self, tenant: str | None = None) -> list[CorpusInfo]:
        return self.store.list_corpora(tenant)

    def default_corpus(self, tenant: str | None = None) -> str:
        """The configured default corpus if this caller may see it, else the caller's first corpus."""
        configured = config.default_corpus()
        names = [c.name for c in self.store.list_corpora(tenant)]
        return configured if configured in names or not names else names[0]

    def ingest(
        self,
        source_dir: Path,
        corpus: str,
        base_url: str | None = None,
        progress: ProgressFn | None = None,
        tenant: str = config.DEFAULT_TENANT,
        admission: Path | None = None,
        report_path: Path | None = None,
        format: str | None = None,
        max_file_bytes: int | None = None,
        page_urls: str | None = None,
        chunk_quota: ChunkQuota | None = None,
    ) -> IngestReport:
        """Ingest under the given (else remembered, else default) admission policy; write the admission report.

        The docs format and base URL come from the flags, else from the corpus's previous ingest, else
        from detecting the folder's site generator (``ingest.detect``); the report says which. Files over
        ``max_file_bytes`` (default: the max_file_bytes setting) are reported, not read; a version over
        ``chunk_quota`` is refused before anything is embedded."""
        check_name("tenant", tenant)
        existing = self.store.get_corpus(corpus)
        if existing is not None and existing.tenant != tenant:  # checked again inside the write transaction
            raise CorpusOwnedByOtherTenant(
                f"corpus {corpus!r} belongs to tenant {existing.tenant!r}; pick another corpus name"
            )
        remembered = (existing.pipeline, existing.base_url) if existing else None
        plan = plan_ingest(source_dir, format, base_url, remembered, config.ASTRO_BASE_URL, page_urls)
        if plan.base_url_defaulted and (plan.format != "mdx" or plan.from_config):
            # the default is the bundled Astro docs' site (a bare MDX folder): any other site's citations
            # would all link there
            raise IngestError(
                # reasons[-1] is plan_ingest's "using the default" line, which this replaces
                f"no base URL for these {plan.format} pages ({'; '.join(plan.reasons[:-1])}), and the default, "
                "the Astro docs' site, would be wrong: pass --base-url with the address the site is published at "
                "(e.g. --base-url https://docs.example.com/) so that citations link to your pages. Nothing was changed."
            )
        policy = resolve_policy(corpus, admission)
        try:
            with telemetry.job("ingest", **{"citedocs.corpus": corpus}) as steps:
                report = ingest_corpus(
                    self.store,
                    DeferredBiEncoder(config.setting("encoder_runtime"), lambda: self.encoder),
                    plan.docs_dir,
                    corpus,
                    plan.base_url,
                    steps.wrap(progress),
                    policy,
                    tenant,
                    plan.reader(),
                    max_file_bytes=max_file_bytes,
                    chunk_quota=chunk_quota,
                )
        except IngestError as exc:  # what was detected often says why (a conf.py that is not valid Python)
            raise IngestError(f"{exc} (read as {plan.describe()})") from exc
        report.plan = plan.describe()
        remember_policy(corpus, policy)
        report.admission_report = report_path or default_report_path(corpus)
        report.write_admission_report(report.admission_report)
        return report

    def crawl_and_ingest(
        self,
        start_url: str,
        corpus: str,
        settings: CrawlSettings = CrawlSettings(),
        progress: ProgressFn | None = None,
        tenant: str = config.DEFAULT_TENANT,
        admission: Path | None = None,
        report_path: Path | None = None,
    ) -> tuple[CrawlReport, IngestReport]:
        """Mirror the site under ``start_url`` (see ingest/crawl.py), then ingest the mirror as HTML.

        The mirror lives in ``<home>/crawl/<corpus>/``; its base URL is the start URL's folder, so
        chunk URLs are the live pages' URLs. An unreachable site raises ``CrawlError`` before
        anything is written, so the corpus keeps serving what it had.
        """
        check_name("corpus", corpus)
        check_name("tenant", tenant)
        existing = self.store.get_corpus(corpus)
        if existing is not None and existing.tenant != tenant:
            raise CorpusOwnedByOtherTenant(
                f"corpus {corpus!r} belongs to tenant {existing.tenant!r}; pick another corpus name"
            )
        crawled = self.crawl_mirror(start_url, corpus, settings)
        report = self.ingest(
            crawled.folder, corpus, crawl_scope(start_url), progress, tenant, admission, report_path, format="html"
        )
        return crawled, report

    def crawl_mirror(self, start_url: str, corpus: str, settings: CrawlSettings = CrawlSettings()) -> CrawlReport:
        """Bring the corpus's mirror of the site up to date (``<home>/crawl/<corpus>/``); CrawlError,
        with nothing changed, when no page could be fetched."""
        crawled = crawl(start_url, config.home() / "crawl" / corpus, settings)
        if not any(crawled.folder.rglob("*.htm*")):
            problems = "; ".join(f"{o.url}: {o.detail}" for o in crawled.problems()[:3]) or "no page answered"
            raise CrawlError(f"no HTML page could be fetched under {crawled.scope} ({problems}); nothing was changed")
        return crawled

    def copy_index(self, target: str, corpora: list[str] | None = None) -> dict[str, int]:
        """Copy corpora (default: all) with their vectors to another store (a postgresql:// URL or a
        SQLite path): moving between backends needs no re-embedding. Traces and keys stay behind."""
        names = corpora or [c.name for c in self.store.list_corpora()]
        for name in names:
            self.corpus(name)
        destination = open_store(target)
        try:
            return {name: copy_corpus(self.store, destination, name) for name in names}
        finally:
            destination.close()

    def approve(self, source_dir: Path, corpus: str, paths: list[str], admission: Path | None = None) -> dict[str, str]:
        """Pin the given corpus-relative paths (default: every doc in the folder) to their current hashes."""
        rels = paths or [p.relative_to(source_dir).as_posix() for p in find_documents(source_dir)]
        return approve(resolve_policy(corpus, admission), source_dir, rels)

    # questions -------------------------------------------------------------------------------
    def search(
        self,
        question: str,
        corpus: str,
        k: int = 8,
        retrieval: RetrievalConfig | None = None,
        tenant: str | None = None,
    ) -> RetrievalResult:
        text = check_question(question)
        info = self.corpus(corpus, tenant)
        return self.retriever.retrieve(info.name, text, k, retrieval or RetrievalConfig())

    def search_passages(
        self, question: str, corpus: str | None = None, k: int = 8, tenant: str | None = None
    ) -> SearchResponse:
        """A search as contract objects (for MCP and other integrations): the caller's default corpus
        when none is named, ranked chunks with their ids, URLs, titles, sections and full text."""
        info = self.corpus(corpus or self.default_corpus(tenant), tenant)
        result = self.search(question, info.name, k, tenant=tenant)
        hits = [
            Passage(id=h.chunk.id, url=h.chunk.url, title=h.chunk.title, section=h.chunk.section, score=round(h.score, 4), text=h.chunk.text)
            for h in result.hits
        ]
        return SearchResponse(
            corpus=info.name, corpus_version=info.version, query=result.query, confidence=round(result.confidence, 4), hits=hits
        )

    def corpus_summaries(self, tenant: str | None = None) -> list[CorpusSummary]:
        return [
            CorpusSummary(name=c.name, version=c.version, chunks=c.chunk_count, updated_at=c.updated_at)
            for c in self.corpora(tenant)
        ]

    def ask(self, request: AskRequest, tenant: str | None = None) -> AskResponse:
        check_question(request.question)
        return self.pipeline.ask(request, self.corpus(request.corpus or self.default_corpus(tenant), tenant))

    def ask_events(self, request: AskRequest, tenant: str | None = None):
        """Validated sentences as they are accepted, then the final response (for streaming)."""
        check_question(request.question)
        info = self.corpus(request.corpus or self.default_corpus(tenant), tenant)
        return self.pipeline.ask_events(request, info)

    # traces, feedback, retention ---------------------------------------------------------------
    def trace(self, trace_id: str, tenant: str | None = None) -> dict:
        """The trace with its feedback; another tenant's trace is reported as unknown."""
        trace = self.store.get_trace(trace_id, tenant)
        if trace is None:
            raise UnknownTrace(trace_id)
        return trace

    def trace_with_sources(self, trace_id: str, tenant: str | None = None) -> dict:
        """The trace, and the passages it cited (or, refused, the nearest three it retrieved) as the
        corpus has them now: title, section and URL, ``current: False`` where a docs change since
        removed or rewrote one. What the console shows beside the answer."""
        trace = self.trace(trace_id, tenant)
        corpus = trace.get("corpus", "")
        cited = trace.get("cited_ids") or []
        ids = cited if cited else [r["id"] for r in (trace.get("retrieved") or [])[:3]]
        found = {c.id: c for c in self.store.get_chunks(corpus, ids)} if ids and self.store.get_corpus(corpus) else {}
        hashes = trace.get("cited_hashes") or {}

        def source(chunk_id: str) -> dict:
            chunk = found.get(chunk_id)
            if chunk is None:
                return {"id": chunk_id, "title": chunk_id, "section": "", "url": None, "current": False}
            current = chunk_id not in hashes or hashes[chunk_id] == chunk.hash
            return {"id": chunk_id, "title": chunk.title, "section": chunk.section, "url": chunk.url, "current": current}

        return trace | {("sources" if cited else "nearest"): [source(i) for i in ids]}

    def dismiss_gaps(self, trace_ids: list[str], key: ApiKey | None = None, tenant: str | None = None) -> int:
        """Take questions out of the docs gaps (a writer decided they need no docs change): each must
        be a trace of the key's tenant (another tenant's is unknown); audited. Returns how many."""
        owner = key.tenant if key else tenant
        ids = list(dict.fromkeys(trace_ids))
        try:
            for trace_id in ids:
                self.trace(trace_id, owner)
        except UnknownTrace as exc:
            self.audit(key, "gap.dismiss", ", ".join(ids)[:200], "unknown_trace", str(exc), tenant=owner)
            raise
        self.store.mark_gaps(ids, "dismissed", key.key_id if key else "cli", _now().isoformat(timespec="seconds"))
        self.audit(key, "gap.dismiss", ", ".join(ids)[:200], "ok", f"{len(ids)} question(s)", tenant=owner)
        return len(ids)

    def resolve_gaps(self, corpus: str, job_id: str) -> dict:
        """After a sync put a new version live: ask retrieval again for the corpus's newest questions
        refused for weak retrieval (at most ``RESOLVE_LIMIT``, not yet dismissed or resolved), and mark
        those that now clear the refusal margin above the new version's floor as resolved by ``job_id``.
        A question refused for another reason (terms the docs never mention, an unverifiable draft) is
        left for a writer: better retrieval alone does not show it is answered. Never fails the job:
        what went wrong is in the returned report."""
        try:
            info = self.store.get_corpus(corpus)
            rows = self.store.insights_rows(TraceFilter(info.tenant, corpus, outcome="refused"), ("gap_candidates",), RESOLVE_LIMIT)
            weak = [r for r in rows["gap_candidates"] if r[5] == "low_retrieval_confidence"]
            marks = self.store.gap_marks([r[0] for r in weak]) if weak else {}
            open_ = [r for r in weak if r[0] not in marks]
            if not open_:
                return {"checked": 0, "resolved": 0}
            floor = NullLevels(self.retriever).level(corpus, info.version)
            needed = self.thresholds.min_retrieval_margin
            resolved = []
            for trace_id, _, _, question, *_ in open_:
                result = self.retriever.retrieve(corpus, question, AskRequest.model_fields["top_k"].default, RetrievalConfig())
                if result.hits and result.confidence - floor >= needed:
                    resolved.append(trace_id)
            if resolved:
                self.store.mark_gaps(resolved, "resolved", job_id, _now().isoformat(timespec="seconds"))
            return {"checked": len(open_), "resolved": len(resolved)}
        except Exception as exc:  # the new version is live whatever this finds
            logging.getLogger("citedocs.sync").warning("docs gaps could not be checked after the sync", extra={"corpus": corpus, "job": job_id, "error": str(exc)})
            return {"error": f"{type(exc).__name__}: {exc}"}

    def add_feedback(self, trace_id: str, verdict: str, comment: str | None, tenant: str | None = None) -> None:
        """Store a verdict on a trace; with ``redact_questions`` on, the comment is redacted like the question."""
        self.trace(trace_id, tenant)
        if comment and config.setting("redact_questions") == "on":
            comment = redact(comment)
        self.store.save_feedback(trace_id, verdict, comment, _now().isoformat(timespec="seconds"))

    def insights(
        self, tenant: str | None, corpus: str | None = None, since: str = "7d", until: str | None = None, gaps: bool = True
    ) -> dict:
        """The insights report (see insights.py) over ``tenant``'s traces (None: all) since ``since``.

        A corpus removed since its traces were written is still reported (by name, under
        ``removed_corpora``); another tenant's traces are never read."""
        if corpus is not None:
            check_name("corpus", corpus)
        scope = InsightsRange(tenant, corpus, parse_since(since), parse_since(until, "until") if until else None)
        # the docs gaps encode their questions' salient words (once per process: the cache keeps them)
        encode = lambda texts: self.question_vectors.encode(texts)  # noqa: E731
        report = Insights(
            self.store, self.corpora(tenant), encode, config.setting("insights_gap_limit"), config.setting("insights_weak_margin")
        )
        return {**report.report(scope, gaps), "llm_usage": llm_spend(self.store, scope.filter())}

    def recent_traces(
        self,
        tenant: str | None,
        corpus: str | None = None,
        limit: int = 50,
        outcome: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[dict]:
        """The newest traces (question, outcome, latency) with their feedback, newest first; only
        ``outcome``'s (refused, answered, thumbs_down) and those in [since, until) when given (a
        duration such as 7d or an ISO date, as the insights read them)."""
        if corpus is not None:
            check_name("corpus", corpus)
        if outcome is not None and outcome not in TRACE_OUTCOMES:
            raise InvalidRange(f"outcome {outcome!r} is not one of {', '.join(TRACE_OUTCOMES)}")
        moment = lambda value, name: parse_since(value, name).astimezone(timezone.utc).isoformat(timespec="seconds")  # noqa: E731
        where = TraceFilter(tenant, corpus, moment(since, "since") if since else "", moment(until, "until") if until else "9999", outcome)
        rows = self.store.trace_rows(where, limit)
        if not rows:
            return []
        feedback: dict[str, list[dict]] = {r.trace_id: [] for r in rows}
        for trace_id, verdict, comment, created_at in self.store.insights_rows(
            TraceFilter(tenant, corpus, since=rows[-1].created_at), ("feedback",)
        )["feedback"]:
            if trace_id in feedback:
                feedback[trace_id].append({"verdict": verdict, "comment": comment, "created_at": created_at})
        return [{**r.__dict__, "feedback": feedback[r.trace_id]} for r in rows]

    def prune_traces(self, older_than_days: int | None = None) -> int:
        """Delete traces (and their feedback) older than ``older_than_days`` (default: retention_days)."""
        days = config.setting("retention_days") if older_than_days is None else older_than_days
        return self.store.prune_traces((_now() - timedelta(days=days)).isoformat(timespec="seconds"))

    def keep_pruning(self, every_s: float, stop: threading.Event) -> threading.Thread:
        """Prune past retention_days every ``every_s`` seconds in a daemon thread, until ``stop`` is set."""

        def loop() -> None:
            while not stop.wait(every_s):
                try:
                    log.info("pruned expired traces", extra={"deleted": self.prune_traces()})
                except Exception:  # a failed round is logged and retried next round; the server keeps serving
                    log.exception("pruning expired traces failed")

        thread = threading.Thread(target=loop, name="citedocs-retention", daemon=True)
        thread.start()
        return thread

    # API keys ------------------------------------------------------------------------------------
    def create_key(
        self,
        tenant: str,
        name: str | None = None,
        publishable: bool = False,
        origins: Sequence[str] = (),
        admin: bool = False,
        by: ApiKey | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key for ``tenant``: its record and the secret, which is shown once and never stored.

        A publishable key (for the widget, in a public page) needs the origins of the pages that
        embed it, checked like ``cors_origins``; a full or admin key takes none. The audit log gets
        the creation or the rejection, made ``by`` an admin key (None: the operator's CLI).
        """
        try:
            key, secret = self._new_key(tenant, name, publishable, origins, admin)
        except (InvalidName, InvalidKeyOrigins) as exc:
            self.audit(by, "key.create", name or "(unnamed)", "rejected", str(exc), tenant=tenant)
            raise
        self.audit(by, "key.create", key.key_id, detail=f"{key.scope} key", tenant=key.tenant)
        return key, secret

    def _new_key(
        self, tenant: str, name: str | None, publishable: bool, origins: Sequence[str], admin: bool
    ) -> tuple[ApiKey, str]:
        check_name("tenant", tenant)
        if admin and publishable:
            raise InvalidKeyOrigins("a key is either --admin or --publishable: an admin key must never sit in a public page")
        if publishable and not origins:
            raise InvalidKeyOrigins(
                "a publishable key needs the origins of the pages that embed it: add --origin https://docs.example.com (repeatable)"
            )
        if origins and not publishable:
            raise InvalidKeyOrigins("--origin applies only to publishable keys: add --publishable, or drop --origin for a full key")
        try:
            allowed = tuple(dict.fromkeys(config.parse_origins(list(origins))))
        except ValueError as exc:
            raise InvalidKeyOrigins(f"--origin: {exc}") from exc
        scope = ADMIN_SCOPE if admin else PUBLISHABLE_SCOPE if publishable else FULL_SCOPE
        secret = new_secret(scope)
        key = ApiKey(new_key_id(), tenant, name or "", _now().isoformat(timespec="seconds"), scope=scope, origins=allowed)
        self.store.add_api_key(key, secret_sha256(secret))
        return key, secret

    def revoke_key(self, key_id: str, tenant: str | None = None, by: ApiKey | None = None) -> ApiKey:
        """Revoke a key; with ``tenant``, only one of that tenant's (another's is reported as unknown).
        The audit log gets the outcome, made ``by`` an admin key (None: the operator's CLI)."""
        owned = tenant is None or any(k.key_id == key_id for k in self.store.list_api_keys(tenant))
        key = self.store.revoke_api_key(key_id, _now().isoformat(timespec="seconds")) if owned else None
        if key is None:
            self.audit(by, "key.revoke", key_id, "unknown_key", tenant=tenant)
            raise UnknownKey(key_id)
        self.audit(by, "key.revoke", key.key_id, tenant=key.tenant)
        return key

    def keys(self, tenant: str | None = None) -> list[ApiKey]:
        return self.store.list_api_keys(tenant)

    @cached_property
    def sso(self) -> OidcVerifier | None:
        return OidcVerifier.from_settings()

    def authenticate(self, authorization: str | None) -> ApiKey:
        """The live key behind an Authorization header, or AuthError (401 unknown, 403 revoked); with
        single sign-on (``oidc_issuer``) a JWT bearer token names its caller instead (sso.py)."""
        token = bearer_token(authorization)
        if self.sso is not None and looks_like_jwt(token):
            return self.sso.principal(token)
        key = self.store.find_api_key(secret_sha256(token))
        if key is None:
            raise AuthError(401, "invalid_api_key", "this API key is not known; ask the operator for a key")
        if key.revoked_at:
            raise AuthError(403, "revoked_api_key", f"API key {key.key_id} was revoked at {key.revoked_at}; ask for a new one")
        return key

    def audit(
        self,
        key: ApiKey | None,
        action: str,
        target: str,
        outcome: str = "ok",
        detail: str = "",
        tenant: str | None = None,
        actor: str = "cli",
    ) -> AdminAction:
        """Record an admin action in the audit log (and the JSON log): who (the admin key, or None for
        the operator's own CLI on the server, or another ``actor`` such as a signed webhook), what, on
        which target (of ``tenant``: the key's own when a key acted), and how it ended."""
        entry = AdminAction(
            at=_now().isoformat(timespec="seconds"),
            tenant=key.tenant if key else tenant or config.DEFAULT_TENANT,
            key_id=key.key_id if key else actor,
            action=action,
            target=target,
            outcome=outcome,
            detail=detail,
        )
        self.store.record_admin_action(entry)
        audit_log.info("admin action", extra={"audit": entry.__dict__})
        return entry

    def admin_actions(self, tenant: str | None = None, limit: int = 100) -> list[AdminAction]:
        return self.store.admin_actions(tenant, limit)

    def publishable_origins(self) -> frozenset[str]:
        """Every origin of a live publishable key: pages there may call the widget's routes (api/cors.py)."""
        return frozenset(o for key in self.store.list_api_keys() if key.publishable and not key.revoked_at for o in key.origins)

    # readiness -----------------------------------------------------------------------------------
    def readiness(self) -> list[str]:
        """What keeps this process from answering (empty when ready)."""
        from .generate.select import BackendConfigError

        problems = []
        try:
            corpora = self.store.list_corpora()
        except Exception as exc:  # any store failure means not ready; the reason is reported, not raised
            problems.append(f"store: {exc}")
            corpora = []
        for corpus in corpora:
            try:
                dense_encoder(corpus_dense_choice(corpus.pipeline))
            except ModelMissing as exc:
                problems.append(f"corpus {corpus.name!r} was embedded with a dense model this install lacks: {exc}")
        try:
            backend_problem = self.generator.probe()
        except (BackendConfigError, config.ConfigError) as exc:
            backend_problem = str(exc)
        if backend_problem:
            problems.append(f"backend: {backend_problem}")
        return problems
