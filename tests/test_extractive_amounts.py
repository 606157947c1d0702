"""The extractive backend answers "how many / how long / how much" only with a passage that states an
amount (real bi-encoder, hand-built chunks from the Flask docs): quoting the topic without the figure
does not answer, so it declines instead of sounding like an answer."""

from __future__ import annotations

import pytest

from citedocs.models.encoders import bi_encoder
from citedocs.generate.base import Generation
from citedocs.generate.extractive import ExtractiveGenerator
from citedocs.generate.prompt import NO_ANSWER
from citedocs.types import Chunk, ChunkId


def chunk(anchor: str, heading: str, text: str) -> Chunk:
    return Chunk(
        id=ChunkId(f"debugging#{anchor}/1"),
        doc_path="debugging.rst",
        title="Debugging Application Errors",
        heading_path=(heading,),
        anchor=anchor,
        anchor_path=(anchor,),
        url=f"https://flask.palletsprojects.com/en/stable/debugging/#{anchor}",
        text=text,
        token_count=60,
    )


DEBUGGER = chunk(
    "the-built-in-debugger",
    "The Built-In Debugger",
    "The built-in Werkzeug development server provides a debugger which shows an interactive traceback "
    "in the browser when an unhandled error occurs during a request. It is protected by a pin, but "
    "still represents a major security risk.",
)
SERVER = chunk(
    "development-server",
    "Development Server",
    "The development server listens on port 5000 by default. Pass the port option to choose another one, "
    "and the host option to listen on every interface.",
)


@pytest.fixture(scope="module")
def generator() -> ExtractiveGenerator:
    return ExtractiveGenerator(bi_encoder(), min_sentence_score=0.3)


def answer(generator: ExtractiveGenerator, question: str, chunks: list[Chunk]) -> Generation:
    return generator.generate(question, chunks, [])


def test_a_how_many_question_without_a_stated_amount_is_declined(generator):
    question = "How long does the debugger PIN stay valid, and how many wrong PIN attempts are allowed?"
    result = answer(generator, question, [DEBUGGER])
    assert result.text.startswith(NO_ANSWER) and "states the amount" in result.text


def test_a_how_many_question_is_answered_with_the_passage_that_states_the_amount(generator):
    result = answer(generator, "Which port does the development server listen on, and how many ports can it use?", [SERVER])
    assert not result.text.startswith(NO_ANSWER) and "5000" in result.text


def test_a_question_that_only_mentions_a_count_is_not_an_amount_question(generator):
    # "How can I see how many ..." asks how, not how many: the topic sentences still answer it
    question = "How can I see how many errors the debugger caught, and where is the traceback shown?"
    result = answer(generator, question, [DEBUGGER])
    assert not result.text.startswith(NO_ANSWER) and "traceback" in result.text
