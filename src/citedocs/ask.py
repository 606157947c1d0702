"""The /ask pipeline: rewrite → (expand) → retrieve → gate → grade → generate + validate → contract + trace."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import config, telemetry
from .contract import AskRequest, AskResponse, Citation, RefusalReason
from .generate.accounting import TenantBudgets, usage_summary
from .generate.base import GenerationFault, Generator, Restart, UsageMeter, metered
from .generate.grader import LlmGrader
from .generate.routing import choose_route
from .privacy import redact_trace
from .index.store import CorpusInfo, Store, StoreFull
from .i18n import LanguageName, Message, N_, choose_language
from .language import detect_language
from .retrieve.expand import PROMPT_VERSION as EXPANSION_PROMPT
from .retrieve.expand import HypotheticalPassage
from .retrieve.hybrid import HybridRetriever, RetrievalConfig
from .retrieve.null_level import NullLevels
from .retrieve.suggest import FollowUps
from .types import Chunk, SearchHit
from .retrieve.rewrite import standalone_query_fallback
from .sentences import Unit, settled_units, split_units
from .validate.question import code_parts, contains_sequence, starts_command_line, unsupported_question_terms
from .validate.thresholds import Thresholds
from .validate.validator import AcceptedSentence, CitationValidator, ValidationResult

log = logging.getLogger("citedocs.ask")

REFUSAL_PREFIX = N_("I can't answer this from the {corpus} docs: ")  # then the reason, a Message
_INTRODUCES = re.compile(r":\s*(?:\[[^\]\n]+\]\s*)*(?:\n|$)")  # a sentence that ends with a colon, its markers after it


@dataclass
class AskEvent:
    kind: str  # "sentence" | "restart" | "final"
    sentence: AcceptedSentence | None = None
    response: AskResponse | None = None
    restart: Restart | None = None  # "restart": the sentences sent so far are void, the answer starts again


@dataclass
class _Trace:
    payload: dict = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    started_ns: int = field(default_factory=time.time_ns)
    stage_ms: dict[str, float] = field(default_factory=dict)
    spans: list[tuple[str, int, int]] = field(default_factory=list)  # (stage, start, end) in ns: OpenTelemetry's
    meter: UsageMeter = field(default_factory=UsageMeter)  # the tokens of the answer's LLM calls

    def timed(self, stage: str, fn, *args):
        started = time.perf_counter()
        started_ns = time.time_ns()
        try:
            with metered(self.meter):
                return fn(*args)
        finally:
            self.stage_ms[stage] = round((time.perf_counter() - started) * 1000, 1)
            self.spans.append((stage, started_ns, time.time_ns()))


def _count_lost_answers(meter: UsageMeter, attempts: list[dict]) -> None:
    """The tokens of answers a provider was writing when it died (estimated, see fallback._failed):
    spent on that provider though nothing it wrote stands."""
    for attempt in attempts:
        if attempt.get("usage"):
            meter.add(attempt["provider"], attempt["model"], attempt["usage"], "lost_answer")


class StoreProbe:
    """Corpus-wide look-ups for the question gate, through the store's full-text index."""

    def __init__(self, store: Store, corpus: str) -> None:
        self.store = store
        self.corpus = corpus

    def mentions(self, term: str) -> bool:
        return bool(self.store.lexical_search(self.corpus, [term], 1))

    def has_sequence(self, parts: list[str]) -> bool:
        hits = self.store.lexical_search(self.corpus, list(dict.fromkeys(parts)), 200, match_all=True)
        chunks = self.store.get_chunks(self.corpus, [cid for cid, _ in hits])
        return any(contains_sequence(code_parts(c.text), parts) for c in chunks)

    def runs_program(self, program: str) -> bool:
        hits = self.store.lexical_search(self.corpus, [program], 200)
        return any(starts_command_line(program, c.text) for c in self.store.get_chunks(self.corpus, [cid for cid, _ in hits]))


class _Answer:
    """One request's trace and the two ways it can end: a response or a refusal."""

    def __init__(self, pipeline: AskPipeline, request: AskRequest, corpus: CorpusInfo, notice: str | None = None) -> None:
        self.pipeline = pipeline
        self.corpus = corpus
        self.notice = notice
        self.trace = _Trace()
        self.trace_id = uuid.uuid4().hex
        self.question = request.question.strip()
        question_language = detect_language(self.question)
        self.language = choose_language(request.language, question_language)  # what citedocs says is in this
        self.scores: dict[str, float] = {}  # chunk id -> the similarity users see
        self.confidence = 0.0  # best reranker similarity among the retrieved
        self.unread_language: tuple[str, str] | None = None  # (question, docs) where no model reads both
        self.trace.payload.update(
            trace_id=self.trace_id,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            question=self.question,
            question_language=question_language,
            language=self.language,
            history=[t.model_dump() for t in request.history],
            corpus=corpus.name,
            corpus_version=corpus.version,
            backend=pipeline.generator.name,
            model=pipeline.generator.model,
            thresholds=pipeline.thresholds.as_dict(),
            tenant=corpus.tenant,
            route="default",
        )
        if notice:
            self.trace.payload["notice"] = notice

    def finish(self, response: AskResponse, raw: str | None = None, decisions: list | None = None) -> AskEvent:
        response = self._honest_when_withheld(response)
        trace = self.trace
        trace.stage_ms["total"] = round((time.perf_counter() - trace.started) * 1000, 1)
        response.notice = self.notice
        response.language = self.language
        if trace.meter.calls:
            trace.payload["llm_usage"] = usage_summary(trace.meter)
            if self.pipeline.budgets is not None:
                self.pipeline.budgets.add(self.corpus.tenant, trace.payload["llm_usage"]["cost_usd"])
        trace.payload.update(
            raw_output=raw,
            validator_decisions=decisions or [],
            answer=response.answer,
            refused=response.refused,
            refusal_reason=response.refusal_reason,
            cited_ids=[c.id for c in response.citations],
            latency_ms=trace.stage_ms,
        )
        telemetry.record_ask(
            self.trace_id,
            trace.started_ns,
            time.time_ns(),
            trace.spans,
            {"citedocs.corpus": self.corpus.name, "citedocs.refused": response.refused},
        )
        if config.setting("redact_questions") == "on":
            redact_trace(trace.payload)
        try:
            self.pipeline.store.save_trace(self.trace_id, self.corpus, trace.payload["created_at"], trace.payload)
        except StoreFull as exc:  # a full disk costs the trace, not the answer: the live version keeps serving
            log.error(str(exc), extra={"trace_id": self.trace_id})
        if self.pipeline.on_trace:
            self.pipeline.on_trace(trace.payload)
        return AskEvent("final", response=response)

    def _honest_when_withheld(self, response: AskResponse) -> AskResponse:
        """A question that needs a passage withheld for review is told so (the insights list these
        questions by their refusal reason), rather than that the docs do not cover it, or a weaker
        sentence of the section it was withheld from."""
        if self.pipeline.awaiting_review is None or (response.refusal_reason or "").startswith("backend_error"):
            return response
        cited = None if response.refused else tuple(c.url for c in response.citations)
        introduces = cited is not None and bool(_INTRODUCES.search(response.answer))
        page = self.pipeline.awaiting_review(self.corpus.name, self.question, cited, introduces)
        if page is None:
            return response
        detail = Message(
            "the part of the docs that covers this ({page}) is awaiting review by the docs team, so it is not quoted yet.",
            page=page,
        )
        return response.model_copy(
            update={
                "answer": self.refusal_text(detail),
                "refusal_reason": f"{RefusalReason.awaiting_review.value}: {detail}",
                "refused": True,
                "citations": [],
            }
        )

    def refusal_text(self, detail: Message) -> str:
        """What the user reads: the refusal and its reason in the user's language (``refusal_reason``
        keeps the English, for operators and the insights)."""
        prefix = Message(REFUSAL_PREFIX, corpus=self.corpus.name)  # a name is not a capitalised word
        return prefix.in_language(self.language) + detail.in_language(self.language)

    def refuse(self, reason: RefusalReason, detail: Message, raw: str | None = None, decisions=None) -> AskEvent:
        response = AskResponse(
            answer=self.refusal_text(detail),
            citations=[],
            refused=True,
            refusal_reason=f"{reason.value}: {detail}",
            trace_id=self.trace_id,
            corpus_version=self.corpus.version,
        )
        return self.finish(response, raw, decisions)

    def backend_failed(self, fault: GenerationFault) -> AskEvent:
        self.trace.payload["backend_fault"] = {"kind": fault.kind, "detail": fault.detail}
        detail = Message("the answer backend failed ({kind}: {detail}).", kind=fault.kind, detail=fault.detail)
        return self.refuse(RefusalReason.backend_error, detail)

    def answer(self, validation: ValidationResult, chunks: list[Chunk], raw: str) -> AskEvent:
        by_id = {c.id: c for c in chunks}
        cited: list[str] = []
        for sentence in validation.sentences:
            cited.extend(i for i in sentence.ids if i not in cited)
        citations = [
            Citation(
                id=cid,
                url=by_id[cid].url,
                title=by_id[cid].title,
                section=by_id[cid].section,
                score=round(self.scores[cid], 4),
                snippet=" ".join(by_id[cid].text.split())[:240],
                text=by_id[cid].text,
            )
            for cid in cited
        ]
        # what each cited chunk said when it was cited: a later docs change to it is then exact to find
        self.trace.payload["cited_hashes"] = {cid: by_id[cid].hash for cid in cited}
        follow_ups = self.pipeline.follow_ups
        suggestions = []
        if follow_ups is not None:
            suggestions = self.trace.timed(
                "suggest", follow_ups.suggest, self.corpus.name, self.corpus.version, self.question, [by_id[c] for c in cited]
            )
            self.trace.payload["suggestions"] = suggestions
        response = AskResponse(
            answer=validation.answer,
            citations=citations,
            refused=False,
            refusal_reason=None,
            trace_id=self.trace_id,
            corpus_version=self.corpus.version,
            suggestions=[{k: s[k] for k in ("question", "url", "source")} for s in suggestions],
        )
        return self.finish(response, raw, validation.decisions_as_dicts())


class AskPipeline:
    """The stages, each a method: rewrite, retrieve, gate, grade (with an LLM grader), then
    generate and validate together (a streamed sentence is validated as soon as it settles)."""

    def __init__(
        self,
        store: Store,
        retriever: HybridRetriever,
        generator: Generator,
        validator: CitationValidator,
        thresholds: Thresholds,
        on_trace: Callable[[dict], None] | None = None,
        grader: LlmGrader | None = None,
        expander: HypotheticalPassage | None = None,
        budgets: TenantBudgets | None = None,
        without_llm: AskPipeline | None = None,
        suggestions: str = "off",
        write_questions: Callable[[str], str] | None = None,
        routing: bool = False,
        awaiting_review: Callable[[str, str, tuple[str, ...] | None, bool], str | None] | None = None,
    ) -> None:
        self.on_trace = on_trace  # called with every stored trace (metrics)
        # (corpus, question, cited URLs or None) -> the page whose withheld passage the question needs (ingest/inventory.py)
        self.awaiting_review = awaiting_review
        self.store = store
        self.retriever = retriever
        self.null_levels = NullLevels(retriever)
        self.generator = generator
        self.validator = validator
        self.thresholds = thresholds
        self.grader = grader
        self.expander = expander
        self.budgets = budgets  # with ``without_llm``: a tenant past its daily budget is answered by that
        self.routing = routing  # send easy and hard questions to different providers (generate/routing.py)
        self.follow_ups = None
        if suggestions != "off":  # ``write_questions``: an LLM's chat, used when suggestions = llm
            writer = write_questions if suggestions == "llm" else None
            self.follow_ups = FollowUps(store, retriever, self.null_levels, thresholds.min_retrieval_margin, writer)
        self.without_llm = without_llm

    def ask(self, request: AskRequest, corpus: CorpusInfo) -> AskResponse:
        for event in self.ask_events(request, corpus):
            if event.kind == "final":
                return event.response
        raise AssertionError("ask_events ended without a final event")

    def ask_events(self, request: AskRequest, corpus: CorpusInfo, notice: str | None = None) -> Iterator[AskEvent]:
        if self.budgets is not None and self.without_llm is not None:
            spent = self.budgets.exhausted(corpus.tenant)
            if spent:
                yield from self.without_llm.ask_events(request, corpus, f"llm_budget_exhausted: {spent}; answered without the LLM")
                return
        run = _Answer(self, request, corpus, notice)
        query = self._rewrite(run, request)
        hits = self._retrieve(run, query, request.top_k, self._expand(run, query))
        refusal = self._gate(run, hits)
        if refusal is not None:
            yield refusal
            return
        chunks = [h.chunk for h in hits]
        if self.grader is not None:
            try:
                chunks = self._grade(run, chunks)
            except GenerationFault as fault:
                yield run.backend_failed(fault)
                return
            if not chunks:
                yield run.refuse(
                    RefusalReason.no_relevant_passage,
                    Message("the model judged none of the retrieved passages to help answer the question."),
                )
                return
        yield from self._generate_and_validate(run, chunks, request.history)

    def _rewrite(self, run: _Answer, request: AskRequest) -> str:
        query = run.question
        if request.history:
            rewritten = run.trace.timed("rewrite", self.generator.rewrite_query, run.question, request.history)
            query = rewritten or standalone_query_fallback(run.question, request.history)
            run.trace.payload["rewrite_method"] = "llm" if rewritten else "fallback"
        run.trace.payload["rewritten_query"] = query
        return query

    def _expand(self, run: _Answer, query: str) -> str | None:
        """The hypothetical passage searched beside the query (setting ``query_expansion``)."""
        if self.expander is None:
            return None
        passage = run.trace.timed("expand", self.expander.expand, query, run.corpus.name)
        run.trace.payload.update(expansion=passage, expansion_prompt=EXPANSION_PROMPT)
        return passage

    def _retrieve(self, run: _Answer, query: str, top_k: int, expansion: str | None = None) -> list[SearchHit]:
        trace = run.trace
        result = trace.timed(
            "retrieve", self.retriever.retrieve, run.corpus.name, query, top_k, RetrievalConfig(), expansion
        )
        trace.stage_ms.update({f"retrieve.{k}": round(v, 1) for k, v in result.stage_ms.items()})
        trace.payload["retrieval_confidence"] = result.confidence
        trace.payload["retrieved"] = [{"id": h.chunk.id, "score": h.score, "stages": h.stages.__dict__} for h in result.hits]
        # users see how closely a source matches the question (MaxSim), not its fused rank score
        run.scores = {
            h.chunk.id: h.stages.rerank_score if h.stages.rerank_score is not None else h.score for h in result.hits
        }
        run.confidence = result.confidence if result.hits else 0.0
        run.unread_language = result.unread_language
        return result.hits

    def _gate(self, run: _Answer, hits: list[SearchHit]) -> AskEvent | None:
        """Refusals decided before any generation: weak retrieval, or terms the docs never mention."""
        floor = run.trace.timed(
            "null_level", self.null_levels.level, run.corpus.name, run.corpus.version, run.trace.payload["question_language"]
        )
        run.trace.payload["retrieval_floor"] = floor
        if run.unread_language is not None:  # fail safe: only shared identifiers would tie it to a passage
            asked, docs = run.unread_language
            return run.refuse(
                RefusalReason.question_language_not_read,
                Message(
                    "this corpus is not set up for questions in this language (the question's: {asked}; the docs': "
                    "{docs}). Ask in the docs' language, or ask the docs team to add yours to its question languages.",
                    docs=LanguageName(docs),
                    asked=LanguageName(asked),
                ),
            )
        if run.confidence - floor < self.thresholds.min_retrieval_margin:
            return run.refuse(
                RefusalReason.low_retrieval_confidence,
                Message(
                    "no passage matches the question closely enough (best score {best}, {margin} above this corpus's "
                    "floor of {floor}; needed {needed}).",
                    best=f"{run.confidence:.2f}",
                    margin=f"{run.confidence - floor:.2f}",
                    floor=f"{floor:.2f}",
                    needed=f"{self.thresholds.min_retrieval_margin:.2f}",
                ),
            )
        terms = run.trace.timed(
            "question_gate",
            unsupported_question_terms,
            run.question,
            [h.chunk for h in hits],
            StoreProbe(self.store, run.corpus.name),
        )
        if terms.absent:  # a docs gap: the insights count these
            run.trace.payload["missing_terms"] = terms.absent
            return run.refuse(
                RefusalReason.question_terms_not_in_docs, Message("the docs don't mention {terms}.", terms=", ".join(terms.absent))
            )
        if terms.elsewhere:  # the docs have them, the passages found do not: no gap, and not said to be one
            run.trace.payload["unretrieved_terms"] = terms.elsewhere
            return run.refuse(
                RefusalReason.terms_not_in_passages,
                Message(
                    "none of the passages found for this question mentions {terms} (the docs do, elsewhere); ask "
                    "about it on its own, or search for it.",
                    terms=", ".join(terms.elsewhere),
                ),
            )
        return None

    def _grade(self, run: _Answer, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks the LLM grader keeps. A grader fault keeps them all and lets generation decide,
        unless grading is the answer's only LLM step (the quote style): then it ends the answer
        (re-raised), as a fault in generation would, rather than quote ungraded chunks."""
        try:
            grades = run.trace.timed("grade", self.grader.grade, run.question, chunks)
        except GenerationFault as fault:
            run.trace.payload["grades"] = {"fault": f"{fault.kind}: {fault.detail}"}
            if self.grader.required:
                raise
            return chunks
        run.trace.payload["grades"] = [g.as_dict() for g in grades]
        if len(grades) < len(chunks):
            run.trace.payload["ungraded"] = [c.id for c in chunks[len(grades) :]]  # the grader had enough
        kept = {g.chunk_id for g in grades if g.kept}
        return [c for c in chunks if c.id in kept]

    def _generate_and_validate(self, run: _Answer, chunks: list[Chunk], history) -> Iterator[AskEvent]:
        trace = run.trace
        session = self.validator.session(chunks)
        validate_s = 0.0

        def feed(units: list[Unit]) -> Iterator[AskEvent]:
            nonlocal validate_s
            for unit in units:
                started = time.perf_counter()
                with metered(trace.meter):  # the claim verifier's LLM calls
                    accepted = session.feed(unit)
                validate_s += time.perf_counter() - started
                if accepted is not None:
                    trace.stage_ms.setdefault("first_sentence", round((time.perf_counter() - trace.started) * 1000, 1))
                    yield AskEvent("sentence", sentence=accepted)

        generate_started = time.perf_counter()
        generate_started_ns = time.time_ns()
        fed = 0
        stream = None
        routed = {}
        if self.routing and hasattr(self.generator, "routed"):
            decision = choose_route(
                run.question, bool(history), chunks, run.confidence, trace.payload["retrieval_floor"], self.thresholds.min_retrieval_margin
            )
            trace.payload.update(route=decision.route, route_reasons=list(decision.reasons))
            routed["providers"] = self.generator.routed(decision.route)
        try:
            if hasattr(self.generator, "stream"):
                stream = self.generator.stream(run.question, chunks, history, **routed)
                text = ""
                for delta in stream:
                    if isinstance(delta, Restart):  # what was shown is void: validate the next provider's answer afresh
                        trace.payload.setdefault("restarts", []).append(delta.__dict__)
                        yield AskEvent("restart", restart=delta)
                        text, fed, session = "", 0, self.validator.session(chunks)
                        continue
                    text += delta
                    settled = split_units(text) if stream.whole_units else settled_units(text)
                    yield from feed(settled[fed:])
                    fed = len(settled)
                generation = stream.generation
            else:
                generation = self.generator.generate(run.question, chunks, history)
        except GenerationFault as fault:
            trace.stage_ms["generate"] = round((time.perf_counter() - generate_started - validate_s) * 1000, 1)
            trace.payload["provider_attempts"] = getattr(stream, "attempts", [])
            _count_lost_answers(trace.meter, trace.payload["provider_attempts"])
            yield run.backend_failed(fault)
            return
        trace.stage_ms["generate"] = round((time.perf_counter() - generate_started - validate_s) * 1000, 1)
        trace.spans.append(("generate", generate_started_ns, time.time_ns()))
        trace.payload.update(
            prompt_version=generation.prompt_version,
            usage=generation.usage,
            backend=generation.backend,
            model=generation.model,
            provider=generation.provider or generation.backend,
            provider_attempts=generation.attempts,
        )
        _count_lost_answers(trace.meter, generation.attempts)
        if generation.usage.get("prompt_tokens") or generation.usage.get("completion_tokens"):
            trace.meter.add(trace.payload["provider"], generation.model, generation.usage, "answer")
        if generation.raw is not None:
            trace.payload["structured_output"] = generation.raw

        yield from feed(split_units(generation.text)[fed:])
        started = time.perf_counter()
        started_ns = time.time_ns()
        with metered(trace.meter):
            validation = session.finish(generation.text)
        trace.stage_ms["validate"] = round((validate_s + time.perf_counter() - started) * 1000, 1)
        trace.spans.append(("validate", started_ns, time.time_ns()))
        if validation.refusal is not None:
            yield run.refuse(validation.refusal, validation.refusal_detail, generation.text, validation.decisions_as_dicts())
            return
        yield run.answer(validation, chunks, generation.text)
