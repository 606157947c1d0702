"""Follow-up questions after a grounded answer: at most three, each one the corpus can answer
(retrieving it scores above the refusal floor, on a passage the answer did not already cite), built
from the docs around the cited section without an LLM; none after a refusal."""

from __future__ import annotations

import pytest

from citedocs.contract import AskRequest
from citedocs.service import Services

from conftest import copy_of_small_home
from test_provider_fallback import QUESTION, chain_services, provider, standin  # noqa: F401 (a fixture)

OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"


@pytest.fixture
def services(small_home, tmp_path, monkeypatch):
    home = copy_of_small_home(small_home, tmp_path / "home")
    monkeypatch.setenv("CITEDOCS_HOME", str(home))
    monkeypatch.setenv("CITEDOCS_DATABASE_URL", "")
    services = Services.open(home / "citedocs.sqlite3", backend="extractive")
    yield services
    services.store.close()


def test_a_grounded_answer_suggests_follow_ups_the_corpus_can_answer(services):
    response = services.ask(AskRequest(question=QUESTION))
    assert response.refused is False
    assert 1 <= len(response.suggestions) <= 3
    cited = {c.id for c in response.citations}
    pipeline = services.pipeline
    corpus = services.corpus(services.default_corpus())
    floor = pipeline.null_levels.level(corpus.name, corpus.version)
    for suggestion in response.suggestions:
        assert suggestion.source == "docs" and " › " in suggestion.question  # "page title › heading"
        result = services.search(suggestion.question, corpus.name, 3)
        assert result.confidence - floor >= services.thresholds.min_retrieval_margin  # above the refusal floor
        new = [h.chunk for h in result.hits if h.chunk.id not in cited]
        assert new and new[0].url == suggestion.url  # it leads somewhere the answer did not already cite
        follow_up = services.ask(AskRequest(question=suggestion.question))
        assert not (follow_up.refusal_reason or "").startswith("low_retrieval_confidence"), suggestion.question
    trace = services.trace(response.trace_id)
    assert trace["suggestions"] and "suggest" in trace["latency_ms"]


def test_a_refusal_suggests_nothing(services):
    response = services.ask(AskRequest(question=OUT_OF_SCOPE))
    assert response.refused is True and response.suggestions == []


def test_suggestions_can_be_turned_off(services, monkeypatch):
    monkeypatch.setenv("CITEDOCS_SUGGESTED_QUESTIONS", "off")
    fresh = Services(store=services.store, backend="extractive")
    assert fresh.ask(AskRequest(question=QUESTION)).suggestions == []


def test_an_llm_phrases_follow_ups_as_questions_and_each_is_still_checked(chain_services, tmp_path):
    with standin(tmp_path, "writer") as (url, _, asked):
        services = chain_services([provider("writer", url)], suggested_questions="llm")
        response = services.ask(AskRequest(question=QUESTION))
        prompts = [r for r in asked() if not r["stream"]]
    assert response.refused is False and prompts  # the model was asked to phrase them
    assert response.suggestions and all(s.question.endswith("?") or " › " in s.question for s in response.suggestions)
    assert any(s.source == "llm" for s in response.suggestions)
    trace = services.trace(response.trace_id)
    assert trace["llm_usage"]["by_model"][0]["calls"] == 2  # the answer and the phrasing, both accounted
