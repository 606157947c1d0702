"""The answer style of an LLM backend (setting llm_answer): which one runs, and the graded order the
quote style answers from. Model-free; the real model's quoted answers are in test_local_llm.py."""

from __future__ import annotations

import pytest

from citedocs import config
from citedocs.generate.grader import Grade, LlmGrader
from citedocs.generate.quote import resolve_answer_style
from citedocs.types import Chunk, ChunkId


def _chunk(name: str) -> Chunk:
    return Chunk(
        id=ChunkId(f"page#{name}/1"),
        doc_path="page.md",
        title="Page",
        heading_path=(name,),
        anchor=name,
        anchor_path=(name,),
        url=f"https://docs.example.com/page/#{name}",
        text=f"About {name}.",
        token_count=3,
    )


A, B, C, D = (_chunk(n) for n in "abcd")
GRADES = [Grade(A.id, 0.55, True), Grade(B.id, 0.30, False), Grade(C.id, 0.91, True), Grade(D.id, None, True)]


def test_the_quote_style_answers_from_the_best_graded_chunk_first():
    kept = LlmGrader(judge=None, min_grade=0.5, rank=True).kept([A, B, C, D], GRADES)
    assert kept == [C, A, D]  # dropped: B; a chunk the model gave no grade goes last


def test_the_write_style_keeps_the_retrievers_order():
    assert LlmGrader(judge=None, min_grade=0.5).kept([A, B, C, D], GRADES) == [A, C, D]


def test_auto_quotes_with_the_local_model_and_writes_with_an_endpoint():
    assert resolve_answer_style("auto", "local") == "quote"
    assert resolve_answer_style("auto", "openai") == "write"
    assert resolve_answer_style("write", "local") == "write"
    assert resolve_answer_style("quote", "openai") == "quote"


def test_an_unknown_answer_style_is_a_clear_error_naming_the_choices(monkeypatch):
    monkeypatch.setenv("CITEDOCS_LLM_ANSWER", "paraphrase")
    with pytest.raises(config.ConfigError, match="CITEDOCS_LLM_ANSWER.*quote, write"):
        config.setting("llm_answer")
