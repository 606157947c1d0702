"""What the extractive backend quotes, on real pages of the Python 3.11 docs read by the HTML reader
and chunked as ingest chunks them (real bi-encoder): every thing the question asks gets its
sentence, the code sample that goes with the quoted prose comes along, and no sentence is quoted
twice because two chunks overlap."""

from __future__ import annotations

import re

import pytest

from citedocs.models.encoders import bi_encoder
from citedocs.generate.extractive import ExtractiveGenerator
from citedocs.ingest.chunker import chunk_page
from citedocs.ingest.readers import SourceFile
from citedocs.ingest.readers.mdx import MDX
from citedocs.sentences import split_units
from citedocs.types import Chunk
from pydocs import python_docs_chunks


@pytest.fixture(scope="module")
def chunks() -> dict[str, Chunk]:
    return python_docs_chunks("tutorial/venv.html", "library/venv.html")


@pytest.fixture(scope="module")
def generator() -> ExtractiveGenerator:
    return ExtractiveGenerator(bi_encoder(), min_sentence_score=0.3)


def quoted(answer: str) -> list[str]:
    """The answer's prose sentences without their citation markers."""
    return [re.sub(r"\s*\[[^\[\]]+\]", "", unit.text).strip() for unit in split_units(answer) if not unit.is_code]


def test_each_thing_the_question_asks_gets_its_sentence(chunks, generator):
    # the chunks retrieved for this question (hybrid + rerank), best first
    retrieved = [
        chunks["library/venv#creating-virtual-environments/2"],
        chunks["tutorial/venv#creating-virtual-environments/2"],
        chunks["library/venv#creating-virtual-environments/1"],
    ]
    question = (
        "What command do I run to set up a virtual environment for my project, "
        "and is there a conventional name for that folder?"
    )
    answer = generator.generate(question, retrieved, []).text
    assert "-m venv" in answer  # the command, from the sample that goes with the quoted prose
    assert "`.venv`" in answer  # the name


def test_a_sentence_two_overlapping_chunks_share_is_quoted_once(astro_docs, generator):
    rel = "guides/environment-variables.mdx"
    page = MDX.read(SourceFile(rel, (astro_docs / rel).read_text(encoding="utf-8"), astro_docs, "https://docs.astro.build/en/"))
    first, second, third = (c for c in chunk_page(page) if c.anchor == "env-files")
    shared = [u.text for u in split_units(first.text) if not u.is_code and u.text in second.text]
    assert shared, "consecutive chunks of a section overlap"
    question = "How do I load a different .env file, e.g. .env.staging, when I run the dev server or build?"
    # the order retrieval ranks them in for this question
    sentences = quoted(generator.generate(question, [second, first, third], []).text)
    assert sentences and len(sentences) == len(set(sentences))
