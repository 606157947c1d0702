"""Query expansion (HyDE): a passage the LLM writes is searched beside the question, never instead of
it. The passages here are written by hand or by the fake LLM (fault injection);
``test_local_llm.py`` has the real model writing one."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from citedocs.api.app import create_app
from citedocs.generate.base import GenerationFault
from citedocs.retrieve.expand import HypotheticalPassage
from citedocs.retrieve.hybrid import RetrievalConfig
from fake_llm import running_fake_llm
from test_api import services_with_endpoint

from conftest import ASTRO_CORPUS

PARAPHRASE = "How can I try my site on my phone while I work on it?"
PASSAGE = "Run astro dev with the --host flag so the dev server listens on your network address and a phone on the same network can open it."
HOST_FLAG = "reference/cli-reference#--host-optional-host-address/1"


class _ScriptedClient:
    """FAULT INJECTION ONLY: a chat client that replies with a script or fails."""

    def __init__(self, reply: str | None) -> None:
        self.reply = reply
        self.messages: list[dict] = []

    def chat(self, messages: list[dict], max_tokens: int) -> tuple[str, dict]:
        self.messages = messages
        if self.reply is None:
            raise GenerationFault("timeout", "no reply in 60 s")
        return self.reply, {}


def test_the_passage_is_asked_for_in_the_corpus_terms_and_comes_back_as_one_line():
    client = _ScriptedClient("  Run `astro dev --host`.\n\nPhones on your network\tcan then open it. ")
    assert HypotheticalPassage(client).expand(PARAPHRASE, "astro") == "Run `astro dev --host`. Phones on your network can then open it."
    assert "astro documentation" in client.messages[-1]["content"] and PARAPHRASE in client.messages[-1]["content"]


@pytest.mark.parametrize("reply", [None, "  \n "])
def test_a_failed_or_empty_expansion_leaves_retrieval_to_the_question(reply):
    assert HypotheticalPassage(_ScriptedClient(reply)).expand(PARAPHRASE, "astro") is None


def test_a_passage_finds_what_the_question_words_miss(astro_services):
    retriever = astro_services.retriever
    plain = retriever.retrieve(ASTRO_CORPUS, PARAPHRASE, 8, RetrievalConfig())
    expanded = retriever.retrieve(ASTRO_CORPUS, PARAPHRASE, 8, RetrievalConfig(), PASSAGE)
    assert HOST_FLAG not in [h.chunk.id for h in plain.hits]
    assert HOST_FLAG in [h.chunk.id for h in expanded.hits]


def test_the_reranker_and_the_confidence_read_only_the_question(astro_services):
    """A passage the model gets wrong can add candidates but cannot vouch for them: every hit's
    rerank score is its similarity to the question, and so is the confidence the margin reads."""
    retriever = astro_services.retriever
    wrong = "Set output: 'edge' in astro.config.mjs to render every page in edge functions."
    expanded = retriever.retrieve(ASTRO_CORPUS, PARAPHRASE, 8, RetrievalConfig(), wrong)
    question = retriever.encode_query(PARAPHRASE)
    chunks = [h.chunk for h in expanded.hits]
    for hit, score in zip(expanded.hits, retriever.reranker.score(question, chunks, ASTRO_CORPUS)):
        assert hit.stages.rerank_score == pytest.approx(score, abs=1e-6)
    assert expanded.confidence >= max(h.stages.rerank_score for h in expanded.hits) - 1e-9


def test_without_a_passage_retrieval_is_what_it_was(astro_services):
    retriever = astro_services.retriever
    plain = retriever.retrieve(ASTRO_CORPUS, PARAPHRASE, 8, RetrievalConfig())
    assert [h.chunk.id for h in retriever.retrieve(ASTRO_CORPUS, PARAPHRASE, 8, RetrievalConfig(), None).hits] == [
        h.chunk.id for h in plain.hits
    ]


def test_with_expansion_on_the_passage_is_written_first_and_traced(astro_services, monkeypatch):
    monkeypatch.setenv("CITEDOCS_QUERY_EXPANSION", "hyde")
    monkeypatch.setenv("CITEDOCS_LLM_GRADE", "off")
    monkeypatch.setenv("CITEDOCS_LLM_VERIFY", "off")
    with running_fake_llm() as (fake, url):
        fake.reply = PASSAGE  # the reply to every request: the expansion's is what matters here
        services = services_with_endpoint(astro_services, url)
        client = TestClient(create_app(services))
        body = client.post("/ask", json={"question": PARAPHRASE}).json()
        trace = client.get(f"/traces/{body['trace_id']}").json()
    assert trace["expansion"] == PASSAGE and trace["expansion_prompt"] == "hyde_v1"
    assert "expand" in trace["latency_ms"] and "retrieve.expansion" in trace["latency_ms"]
    assert "documentation that answers this question" in fake.requests[0]["messages"][-1]["content"]
