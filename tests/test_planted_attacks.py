"""Planted content, adversarially: text a reader cannot see, or that hides from the checks, never
becomes a cited answer.

Fixed attack pages (tests/data/planted-attacks/, one corpus per format: HTML, Markdown, reST; among
them fetch-and-run written another way, secrets sent to the network, an untrusted package index, an
encoded payload, and a download run in another section) are
ingested for real (real readers, real embedding, SQLite) and asked the questions each attack
targets through ``/ask`` (extractive backend); then hypothesis mutates every attack of
tests/planted_attacks.py (zero-width characters inside words, look-alike letters, case, verb
synonyms, plural and titled addressees, Markdown/HTML/reST constructs, splits across lines,
hidden markup) and requires that no mutation reaches a chunk (many examples, detector and readers
only) or an answer through ``/ask`` (a few dozen, each ingested and asked for real).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from citedocs.api.app import create_app
from citedocs.ingest.planted import perceived
from citedocs.service import Services
from planted_attacks import ATTACKS, BASE_URL, FORMATS, Mutation, indexed_needles, mutate, needles_in

ATTACK_PAGES = Path(__file__).parent / "data" / "planted-attacks"
MANIFEST = json.loads((ATTACK_PAGES / "attacks.json").read_text(encoding="utf-8"))
ANSWERABLE = "How much free disk space does the Gizmo installer need?"  # the honest page answers it


@pytest.fixture
def services(tmp_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CITEDOCS_RATE_LIMIT_PER_MINUTE", "0")  # one client asks many questions on purpose
    services = Services.open(tmp_home / "citedocs.sqlite3", backend="extractive")
    yield services
    services.store.close()


def ask(client: TestClient, question: str, corpus: str) -> tuple[dict, str]:
    """The /ask response, and everything it shows the user: the answer and every cited chunk."""
    response = client.post("/ask", json={"question": question, "corpus": corpus})
    assert response.status_code == 200, response.text
    body = response.json()
    return body, body["answer"] + "\n".join(c["text"] + c["snippet"] + c["title"] for c in body["citations"])


def test_no_fixed_attack_page_reaches_an_answer_and_the_honest_text_still_does(services, tmp_path):
    client = TestClient(create_app(services))
    for fmt, (reader, _) in FORMATS.items():
        docs = shutil.copytree(ATTACK_PAGES / fmt, tmp_path / fmt)
        report = services.ingest(docs, f"attacks-{fmt}", BASE_URL, format=reader)
        assert not report.skipped, report.skipped
        answered, shown = ask(client, ANSWERABLE, f"attacks-{fmt}")
        assert not answered["refused"] and "200 MB" in answered["answer"], (fmt, answered)
        for attack in (a for a in MANIFEST if a["page"].startswith(fmt + "/")):
            for question in attack["questions"]:
                _, shown = ask(client, question, f"attacks-{fmt}")
                found = [n for n in attack["needles"] if n in perceived(shown)]
                assert not found, (attack["page"], question, found, shown)


def test_what_the_fixed_attacks_hide_or_plant_is_reported_per_page(services, tmp_path):
    html = services.ingest(shutil.copytree(ATTACK_PAGES / "html", tmp_path / "html"), "attacks-html", BASE_URL, format="html")
    hidden = {h.path: h.dropped for h in html.hidden}
    assert hidden == {
        "display-none.html": {"display:none": 1},
        "discontinued-hidden-attribute.html": {"hidden attribute": 1},
        "installer-moved-aria-hidden-zero-size.html": {"font-size:0": 1},
        "mirror-page-style-rule.html": {"display:none": 1},
        "plugin-template-noscript-offscreen.html": {"<template>": 1, "<noscript>": 1, "off-screen": 1},
    }
    written = json.loads(html.admission_report.read_text())
    assert {h["path"] for h in written["hidden_content"]} == set(hidden)
    markdown = services.ingest(shutil.copytree(ATTACK_PAGES / "markdown", tmp_path / "md"), "attacks-md", BASE_URL, format="mdx")
    assert {h.path: h.dropped for h in markdown.hidden} == {"hidden-html-and-comment.md": {"hidden attribute": 1, "display:none": 1}}
    assert {(f.path, f.reason) for f in markdown.flagged} == {
        ("zero-width-ignore.md", "ignore_instructions"),  # the zero-width characters removed, the rule sees the words
        ("plural-addressee.md", "tell_users"),
        ("powershell-iex.md", "runs_code_from_unlisted_host: gizmo-get.example"),
        ("secrets-email.md", "asks_for_secrets"),
        ("download-and-run-in-two-sections.md", "runs_code_from_unlisted_host: gizmo-split.example"),
        ("url-in-variable-by-path.md", "runs_code_from_unlisted_host: gizmo-var.example"),
        ("exfiltration-index-and-encoded.md", "sends_secrets_to_unlisted_host: gizmo-diag.example"),
        ("exfiltration-index-and-encoded.md", "untrusted_package_index: pypi.gizmo-index.example"),
        ("exfiltration-index-and-encoded.md", "decodes_and_runs_code"),
    }


def _choose(data: st.DataObject):
    return lambda options: data.draw(st.sampled_from(list(options)))


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_no_mutation_of_an_attack_reaches_a_chunk(attack, data):
    mutation = mutate(attack, _choose(data))
    assert not indexed_needles(mutation), mutation.describe() + "\n" + mutation.page


@settings(max_examples=36, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_mutation_of_any_attack_reaches_an_answer_through_ask(services, tmp_path, data):
    """Each example: the mutated page ingested (one corpus per format, re-ingested in place), then
    every question its attack targets asked through /ask; no answer or citation shows a needle."""
    client = TestClient(create_app(services))
    mutation: Mutation = mutate(data.draw(st.sampled_from(ATTACKS)), _choose(data))
    docs = tmp_path / mutation.fmt
    docs.mkdir(exist_ok=True)
    (docs / mutation.file_name).write_text(mutation.page, encoding="utf-8")
    services.ingest(docs, f"mutated-{mutation.fmt}", BASE_URL, format=mutation.reader)
    for question in mutation.attack.questions:
        _, shown = ask(client, question, f"mutated-{mutation.fmt}")
        assert not needles_in(shown, mutation.attack), (mutation.describe(), question, shown)
