"""The real local model writing answers over Russian docs (the translated VitePress pages), behind a
real `citedocs serve --backend local --llm-answer write`: a Russian question is answered in Russian,
every sentence validated and cited to a retrieved chunk; an off-topic one is refused in Russian.

Short on purpose (four small pages, two questions, three chunks in the prompt, the LLM grader off).
The claim verifier stays on, as the product runs it: the support check's meaning test cannot read
Russian, so a Russian paraphrase stands only when the model's own entailment check supports it.
Skips when the model is not installed (`make install-llm`); CITEDOCS_TEST_REQUIRE_LLM=1 (CI) turns
the skip into a failure.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest

from conftest import running_server
from test_local_llm import require_local_model

pytestmark = pytest.mark.slow

CORPUS = "vitepress-ru"
RU_DOCS = Path(__file__).resolve().parent.parent / "evals" / "corpora" / "vitepress-i18n-docs" / "docs" / "ru"
PAGES = (
    "guide/sitemap-generation.md",
    "reference/default-theme-footer.md",
    "reference/default-theme-edit-link.md",
    "reference/default-theme-last-updated.md",
)
ANSWERABLE = "Как включить генерацию файла sitemap.xml в VitePress?"
OFF_TOPIC = "Сколько варить яйцо всмятку?"  # how long to boil a soft egg
CYRILLIC = re.compile(r"[\u0400-\u04FF]")
TIMEOUT = httpx.Timeout(900.0)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_local_model()
    from citedocs.service import Services

    home = tmp_path_factory.mktemp("llm-ru-home")
    docs = home / "docs"
    for rel in PAGES:
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(RU_DOCS / rel, docs / rel)
    services = Services.open(home / "citedocs.sqlite3")
    services.ingest(docs, CORPUS, "https://vitepress.dev/ru/")
    services.store.close()
    env = {
        "CITEDOCS_BACKEND": "local",
        "CITEDOCS_CORPUS": CORPUS,
        "CITEDOCS_DATABASE_URL": "",
        "CITEDOCS_LLM_TIMEOUT": "600",
        "CITEDOCS_LLM_ANSWER": "write",
        "CITEDOCS_LLM_GRADE": "off",
    }
    with running_server(home, ready_timeout_s=600, **env) as (base, _):
        yield base


def test_a_russian_question_over_russian_docs_is_answered_in_russian_and_validated(server):
    # three chunks, not six: half the prompt the 1.5B model reads on a CPU
    body = httpx.post(f"{server}/ask", json={"question": ANSWERABLE, "top_k": 3}, timeout=TIMEOUT).json()
    trace = httpx.get(f"{server}/traces/{body['trace_id']}", timeout=10).json()
    assert body["language"] == "ru"
    assert body["refused"] is False, (body["answer"], trace.get("raw_output"), trace.get("validator_decisions"))
    retrieved = {r["id"] for r in trace["retrieved"]}
    assert body["citations"] and {c["id"] for c in body["citations"]} <= retrieved
    assert all(c["url"].startswith("https://vitepress.dev/ru/") for c in body["citations"])
    assert len(CYRILLIC.findall(body["answer"])) > 20, body["answer"]  # written in Russian, not translated away
    kept = [d for d in trace["validator_decisions"] if d["action"] != "dropped"]
    assert kept and all(d["final_ids"] for d in kept)  # every shown sentence passed the validator, cited


def test_an_off_topic_russian_question_is_refused_in_russian(server):
    body = httpx.post(f"{server}/ask", json={"question": OFF_TOPIC}, timeout=TIMEOUT).json()
    assert body["refused"] is True and body["language"] == "ru" and body["citations"] == []
    assert body["answer"].startswith(f"Я не могу ответить на это по документации {CORPUS}: "), body["answer"]
