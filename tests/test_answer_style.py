"""Which answer style an LLM backend runs (setting llm_answer). Model-free; the real model's quoted
answers are in test_local_llm.py, a grading fault in the quote style in test_api.py."""

from __future__ import annotations

import pytest

from citedocs import config
from citedocs.generate.quote import resolve_answer_style


def test_auto_quotes_with_the_local_model_and_writes_with_an_endpoint():
    assert resolve_answer_style("auto", "local") == "quote"
    assert resolve_answer_style("auto", "openai") == "write"
    assert resolve_answer_style("write", "local") == "write"
    assert resolve_answer_style("quote", "openai") == "quote"


def test_an_unknown_answer_style_is_a_clear_error_naming_the_choices(monkeypatch):
    monkeypatch.setenv("CITEDOCS_LLM_ANSWER", "paraphrase")
    with pytest.raises(config.ConfigError, match="CITEDOCS_LLM_ANSWER.*quote, write"):
        config.setting("llm_answer")
