"""The OpenAI-compatible facade, driven by the official `openai` Python client against a real
`citedocs serve`: what a chat front end (Open WebUI, LibreChat) sees when it uses citedocs as a model."""

from __future__ import annotations

import re

import openai
import pytest

from conftest import SMALL_CORPUS

ANSWERABLE = "How do I deploy my Astro site to Heroku?"
FOLLOW_UP = "Which file do I create in the root of my project for it?"
OUT_OF_SCOPE = "How should I tune PostgreSQL autovacuum for a write-heavy table?"
NUMBERED = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def client(integration_server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{integration_server.base}/v1", api_key="unused-with-auth-off", timeout=300)


def check_cited_reply(content: str, extra: dict) -> None:
    """Numbered markers in the text, a Markdown sources list with one link per number, the
    structured citations alongside, in the same order, and the suggested follow-ups listed last."""
    text, _, sources = content.partition("\n\n**Sources**\n")
    assert sources, content
    sources, _, follow_ups = sources.partition("\n\n**You could also ask**\n")
    assert [line.removeprefix("- ") for line in follow_ups.splitlines()] == [s["question"] for s in extra["suggestions"]]
    assert "#" not in "".join(re.findall(r"\[[^\]]*\]", text))  # no raw chunk-id markers left
    numbers = sorted({int(n) for n in NUMBERED.findall(text)})
    citations = extra["citations"]
    assert numbers == list(range(1, len(citations) + 1))
    lines = sources.splitlines()
    assert len(lines) == len(citations)
    for n, (line, citation) in enumerate(zip(lines, citations), start=1):
        assert line.startswith(f"{n}. [") and line.endswith(f"](<{citation['url']}>)")
    assert extra["refused"] is False and extra["trace_id"] and extra["corpus_version"]


def test_corpora_are_listed_as_models(client):
    models = [m.id for m in client.models.list()]
    assert models == [SMALL_CORPUS]


def test_chat_completion_is_the_validated_answer_with_numbered_sources(client):
    completion = client.chat.completions.create(model=SMALL_CORPUS, messages=[{"role": "user", "content": ANSWERABLE}])
    message = completion.choices[0].message
    assert message.role == "assistant" and completion.choices[0].finish_reason == "stop"
    check_cited_reply(message.content, completion.model_extra["citedocs"])
    assert completion.model_extra["citedocs"]["citations"][0]["url"].startswith("https://docs.astro.build/en/guides/deploy/heroku/")


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": ANSWERABLE}],
        [  # its answer holds a code block, which must stay a Markdown fence on its own lines
            {"role": "user", "content": ANSWERABLE},
            {"role": "assistant", "content": "You can deploy an Astro site to Heroku using this guide [1]."},
            {"role": "user", "content": FOLLOW_UP},
        ],
    ],
    ids=["prose", "with-code-block"],
)
def test_streamed_reply_is_the_same_answer_and_ends_with_the_structured_citations(client, messages):
    plain = client.chat.completions.create(model=SMALL_CORPUS, messages=messages)
    stream = client.chat.completions.create(model=SMALL_CORPUS, messages=messages, stream=True)
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len([c for c in chunks if c.choices[0].delta.content]) >= 2  # sentences arrive as they are validated
    assert content == plain.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "stop"
    check_cited_reply(content, chunks[-1].model_extra["citedocs"])
    assert "```" not in content or "\n\n```" in content


def test_earlier_turns_are_the_follow_up_history(client):
    first = client.chat.completions.create(model=SMALL_CORPUS, messages=[{"role": "user", "content": ANSWERABLE}])
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},  # front ends send one; it is ignored
        {"role": "user", "content": ANSWERABLE},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": [{"type": "text", "text": FOLLOW_UP}]},  # content parts, as some UIs send
    ]
    completion = client.chat.completions.create(model=SMALL_CORPUS, messages=messages, temperature=0.2)
    assert "static.json" in completion.choices[0].message.content
    check_cited_reply(completion.choices[0].message.content, completion.model_extra["citedocs"])


@pytest.mark.parametrize("stream", [False, True])
def test_refusal_is_the_refusal_text_without_sources(client, stream):
    if stream:
        chunks = list(client.chat.completions.create(model=SMALL_CORPUS, messages=[{"role": "user", "content": OUT_OF_SCOPE}], stream=True))
        content, extra = "".join(c.choices[0].delta.content or "" for c in chunks), chunks[-1].model_extra["citedocs"]
    else:
        completion = client.chat.completions.create(model=SMALL_CORPUS, messages=[{"role": "user", "content": OUT_OF_SCOPE}])
        content, extra = completion.choices[0].message.content, completion.model_extra["citedocs"]
    assert content.startswith("I can't answer this from the") and "**Sources**" not in content
    assert extra["refused"] is True and extra["citations"] == [] and extra["refusal_reason"]


def test_unknown_model_and_missing_question_are_clear_errors(client):
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": ANSWERABLE}])
    body = unknown.value.response.json()  # the API's own {error, detail}, as on every route
    assert body["error"] == "unknown_corpus" and SMALL_CORPUS in body["detail"]
    with pytest.raises(openai.UnprocessableEntityError) as no_question:
        client.chat.completions.create(model=SMALL_CORPUS, messages=[{"role": "assistant", "content": "Hello!"}])
    assert "last message must be the user's question" in no_question.value.response.json()["detail"]
