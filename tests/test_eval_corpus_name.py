"""Each dev set names its corpus by its file name, so `citedocs eval FILE` needs no --corpus."""

from pathlib import Path

import pytest

from citedocs.eval.cases import corpus_named_by


@pytest.mark.parametrize(
    ("name", "corpus"),
    [
        ("astro-dev.jsonl", "astro"),
        ("mkdocs-material-dev.jsonl", "mkdocs-material"),
        ("python-html-dev.jsonl", "python-html"),
        ("astro-extra.jsonl", "astro"),
        ("my-cases.jsonl", "my-cases"),
    ],
)
def test_case_file_name_names_the_corpus(name, corpus):
    assert corpus_named_by(Path("evals") / name) == corpus
