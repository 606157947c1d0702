"""The answer contract: what /ask accepts and returns, for every backend."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_QUESTION_CHARS = 2000
MAX_HISTORY_TURNS = 20
LANGUAGE_TAG = r"^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$"


class RefusalReason(str, Enum):
    low_retrieval_confidence = "low_retrieval_confidence"
    question_terms_not_in_docs = "question_terms_not_in_docs"
    terms_not_in_passages = "terms_not_in_passages"
    model_declined = "model_declined"
    nothing_verifiable = "nothing_verifiable"
    backend_error = "backend_error"
    no_relevant_passage = "no_relevant_passage"
    awaiting_review = "awaiting_review"  # the passage the question needs is withheld until the docs team approves it
    question_language_not_read = "question_language_not_read"  # no model of the corpus reads the question's language and the docs'


class HistoryTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: str = Field(max_length=20_000)


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"question": "How do I load .env.staging?"}]})
    question: str = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, description="What the user asks, in their own words."
    )
    corpus: str | None = Field(default=None, description="Corpus name; the server's default when omitted.")
    history: list[HistoryTurn] = Field(default_factory=list, max_length=MAX_HISTORY_TURNS)
    top_k: int = Field(default=6, ge=1, le=20, description="Chunks retrieved as evidence.")
    language: str | None = Field(
        default=None,
        pattern=LANGUAGE_TAG,
        max_length=35,
        description="The language citedocs speaks in (refusals, labels), a BCP 47 tag such as `ru` or `pt-BR`; it "
        "overrides `Accept-Language` and the question's detected language. One citedocs has no catalog for "
        "falls back to English. The quoted docs text stays in the docs' language.",
    )


class Citation(BaseModel):
    id: str
    url: str
    title: str
    section: str
    score: float
    snippet: str
    text: str = Field(description="The full chunk text the claims were checked against.")


class SuggestedQuestion(BaseModel):
    """A follow-up the corpus can answer: retrieving it scored above the refusal floor."""

    question: str
    url: str = Field(description="The page section that best answers it (where the check's retrieval led).")
    source: Literal["docs", "llm"] = Field(description="docs: a nearby section's place; llm: the model's phrasing.")


class AskResponse(BaseModel):
    answer: str
    citations: list[Citation]
    refused: bool
    refusal_reason: str | None
    trace_id: str
    corpus_version: str
    language: str = Field(
        default="en",
        description="The language of what citedocs itself says here (a refusal, the labels around the answer): the "
        "request's `language`, else `Accept-Language`, else the question's, English when citedocs has no "
        "catalog for it (en, de, es, fr, ja, pt, ru, zh).",
    )
    suggestions: list[SuggestedQuestion] = Field(
        default_factory=list,
        description="Up to three follow-up questions after a grounded answer (none after a refusal), each checked to "
        "retrieve above the corpus's refusal floor.",
    )
    notice: str | None = Field(
        default=None,
        description="Set when the answer was not written the usual way, and why: `llm_budget_exhausted: ...` "
        "(the tenant's daily LLM budget is spent; the extractive backend answered).",
    )


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["up", "down"]
    comment: str | None = Field(default=None, max_length=2000)


class NewKeyRequest(BaseModel):
    """An API key an admin creates for its own tenant (POST /admin/keys)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="", max_length=200)
    scope: Literal["full", "publishable", "admin"] = "full"
    origins: list[str] = Field(default_factory=list, max_length=50)


class DismissGapsRequest(BaseModel):
    """Questions an admin takes out of the docs gaps (POST /admin/insights/gaps/dismiss)."""

    model_config = ConfigDict(extra="forbid")
    trace_ids: list[str] = Field(min_length=1, max_length=500, description="the questions' trace ids (a gap group's trace_ids)")


class ErrorBody(BaseModel):
    error: str
    detail: str


class Passage(BaseModel):
    """One ranked chunk of a search, as agents and integrations see it (no per-stage internals)."""

    id: str
    url: str
    title: str
    section: str
    score: float = Field(description="Rank-fusion score the hits are ordered by (higher is better).")
    text: str


class SearchResponse(BaseModel):
    corpus: str
    corpus_version: str
    query: str
    confidence: float = Field(description="Best reranker similarity; low values mean nothing matched well.")
    hits: list[Passage]


class CorpusSummary(BaseModel):
    name: str
    version: str
    chunks: int
    updated_at: str
