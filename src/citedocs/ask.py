"""The /ask pipeline: rewrite → retrieve → gate → generate → validate → contract + trace."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .contract import AskRequest, AskResponse, Citation, RefusalReason
from .generate.base import GenerationFault, Generator
from .index.store import CorpusInfo, Store
from .retrieve.hybrid import HybridRetriever, RetrievalConfig
from .retrieve.rewrite import standalone_query_fallback
from .sentences import Unit, settled_units, split_units
from .validate.question import code_parts, contains_sequence, unsupported_question_terms
from .validate.thresholds import Thresholds
from .validate.validator import AcceptedSentence, CitationValidator

REFUSAL_PREFIX = "I can't answer this from the {corpus} docs: "


@dataclass
class AskEvent:
    kind: str  # "sentence" | "final"
    sentence: AcceptedSentence | None = None
    response: AskResponse | None = None


@dataclass
class _Trace:
    payload: dict = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    stage_ms: dict[str, float] = field(default_factory=dict)

    def timed(self, stage: str, fn, *args):
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.stage_ms[stage] = round((time.perf_counter() - started) * 1000, 1)


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


class AskPipeline:
    def __init__(
        self,
        store: Store,
        retriever: HybridRetriever,
        generator: Generator,
        validator: CitationValidator,
        thresholds: Thresholds,
        on_trace: Callable[[dict], None] | None = None,
    ) -> None:
        self.on_trace = on_trace  # called with every stored trace (metrics)
        self.store = store
        self.retriever = retriever
        self.generator = generator
        self.validator = validator
        self.thresholds = thresholds

    def ask(self, request: AskRequest, corpus: CorpusInfo) -> AskResponse:
        for event in self.ask_events(request, corpus):
            if event.kind == "final":
                return event.response
        raise AssertionError("ask_events ended without a final event")

    def ask_events(self, request: AskRequest, corpus: CorpusInfo) -> Iterator[AskEvent]:
        trace = _Trace()
        trace_id = uuid.uuid4().hex
        question = request.question.strip()
        trace.payload.update(
            trace_id=trace_id,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            question=question,
            history=[t.model_dump() for t in request.history],
            corpus=corpus.name,
            corpus_version=corpus.version,
            backend=self.generator.name,
            model=self.generator.model,
            thresholds=self.thresholds.as_dict(),
        )

        query = question
        if request.history:
            rewritten = trace.timed("rewrite", self.generator.rewrite_query, question, request.history)
            query = rewritten or standalone_query_fallback(question, request.history)
            trace.payload["rewrite_method"] = "llm" if rewritten else "fallback"
        trace.payload["rewritten_query"] = query

        result = trace.timed(
            "retrieve", self.retriever.retrieve, corpus.name, query, request.top_k, RetrievalConfig()
        )
        hits = result.hits
        trace.stage_ms.update({f"retrieve.{k}": round(v, 1) for k, v in result.stage_ms.items()})
        trace.payload["retrieval_confidence"] = result.confidence
        trace.payload["retrieved"] = [
            {"id": h.chunk.id, "score": h.score, "stages": h.stages.__dict__} for h in hits
        ]
        chunks = [h.chunk for h in hits]
        # users see how closely a source matches the question (MaxSim), not its fused rank score
        scores = {h.chunk.id: h.stages.rerank_score if h.stages.rerank_score is not None else h.score for h in hits}

        def finish(response: AskResponse, raw: str | None = None, decisions: list | None = None) -> AskEvent:
            trace.stage_ms["total"] = round((time.perf_counter() - trace.started) * 1000, 1)
            trace.payload.update(
                raw_output=raw,
                validator_decisions=decisions or [],
                answer=response.answer,
                refused=response.refused,
                refusal_reason=response.refusal_reason,
                cited_ids=[c.id for c in response.citations],
                latency_ms=trace.stage_ms,
            )
            self.store.save_trace(trace_id, corpus, trace.payload["created_at"], trace.payload)
            if self.on_trace:
                self.on_trace(trace.payload)
            return AskEvent("final", response=response)

        def refuse(reason: RefusalReason, detail: str, raw: str | None = None, decisions=None) -> AskEvent:
            title = corpus.name.capitalize()
            response = AskResponse(
                answer=REFUSAL_PREFIX.format(corpus=title) + detail,
                citations=[],
                refused=True,
                refusal_reason=f"{reason.value}: {detail}",
                trace_id=trace_id,
                corpus_version=corpus.version,
            )
            return finish(response, raw, decisions)

        top = result.confidence if hits else 0.0
        if top < self.thresholds.min_retrieval_score:
            yield refuse(
                RefusalReason.low_retrieval_confidence,
                f"no passage matches the question closely enough (best score {top:.2f}, "
                f"threshold {self.thresholds.min_retrieval_score:.2f}).",
            )
            return
        missing = trace.timed(
            "question_gate", unsupported_question_terms, question, chunks, StoreProbe(self.store, corpus.name)
        )
        if missing:
            yield refuse(
                RefusalReason.question_terms_not_in_docs,
                f"the docs don't mention {', '.join(missing)}.",
            )
            return

        session = self.validator.session(chunks)
        validate_s = 0.0

        def feed(units: list[Unit]) -> Iterator[AskEvent]:
            nonlocal validate_s
            for unit in units:
                started = time.perf_counter()
                accepted = session.feed(unit)
                validate_s += time.perf_counter() - started
                if accepted is not None:
                    trace.stage_ms.setdefault("first_sentence", round((time.perf_counter() - trace.started) * 1000, 1))
                    yield AskEvent("sentence", sentence=accepted)

        generate_started = time.perf_counter()
        fed = 0
        try:
            if hasattr(self.generator, "stream"):
                stream = self.generator.stream(question, chunks, request.history)
                text = ""
                for delta in stream:
                    text += delta
                    settled = settled_units(text)
                    yield from feed(settled[fed:])
                    fed = len(settled)
                generation = stream.generation
            else:
                generation = self.generator.generate(question, chunks, request.history)
        except GenerationFault as fault:
            trace.stage_ms["generate"] = round((time.perf_counter() - generate_started - validate_s) * 1000, 1)
            trace.payload["backend_fault"] = {"kind": fault.kind, "detail": fault.detail}
            yield refuse(RefusalReason.backend_error, f"the answer backend failed ({fault.kind}: {fault.detail}).")
            return
        trace.stage_ms["generate"] = round((time.perf_counter() - generate_started - validate_s) * 1000, 1)
        trace.payload.update(prompt_version=generation.prompt_version, usage=generation.usage)

        yield from feed(split_units(generation.text)[fed:])
        started = time.perf_counter()
        validation = session.finish(generation.text)
        trace.stage_ms["validate"] = round((validate_s + time.perf_counter() - started) * 1000, 1)
        decisions = validation.decisions_as_dicts()
        if validation.refusal is not None:
            detail = validation.refusal_detail.rstrip(".") + "."
            yield refuse(validation.refusal, detail, generation.text, decisions)
            return

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
                score=round(scores[cid], 4),
                snippet=" ".join(by_id[cid].text.split())[:240],
                text=by_id[cid].text,
            )
            for cid in cited
        ]
        response = AskResponse(
            answer=validation.answer,
            citations=citations,
            refused=False,
            refusal_reason=None,
            trace_id=trace_id,
            corpus_version=corpus.version,
        )
        yield finish(response, generation.text, decisions)
