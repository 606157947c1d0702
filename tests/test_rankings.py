"""Speed changes keep rankings identical: a fresh run matches the stored rankings of a sample of dev
questions in every retrieval mode (see tests/rankings.py for how the file is made and rewritten)."""

from __future__ import annotations

import json

from conftest import ASTRO_CORPUS
from rankings import RANKINGS_FILE, rankings


def test_rankings_of_the_dev_sample_match_the_stored_ones(astro_services):
    stored = json.loads(RANKINGS_FILE.read_text(encoding="utf-8"))
    current = rankings(astro_services, ASTRO_CORPUS)
    assert set(current) == set(stored)
    for mode in stored:
        for question, expected in stored[mode].items():
            assert current[mode][question] == expected, f"{mode} ranking changed for {question!r}"
