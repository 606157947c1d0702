"""citedocs answers questions about itself: `make demo-self` builds this repo's docs site with the
widget on every page, serves it, ingests it as the corpus `citedocs` and serves the API (`citedocs
up`). Driven for real: the demo script as a subprocess, the built site in headless Chromium, a
question about configuring citedocs asked in the widget, the cited answer's link followed into the
docs site. Plus the eval cases about citedocs: every page and anchor they expect is in the built
site, every keyword in the section it names."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from browser import headless_chromium, wait  # skips this module without Chromium (fails under CI)
from conftest import ROOT
from docs_site import serving_docs
from fake_llm import free_port
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

pytestmark = pytest.mark.slow
CASES = ROOT / "evals" / "citedocs-dev.jsonl"
QUESTION = "How do I let the widget on my docs site call the citedocs API from another origin?"
CHAT_LINE = re.compile(r"^chat: (http://127\.0\.0\.1:\d+)/ ", re.M)
FINISHED = '.turn:not([data-state="streaming"])'


class Demo:
    def __init__(self, site: str, api: str, site_dir: Path, home: Path) -> None:
        self.site, self.api, self.site_dir, self.home = site, api, site_dir, home


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`python scripts/demo_self.py` on free ports, once its `citedocs up` prints the chat URL."""
    root = tmp_path_factory.mktemp("demo-self")
    home, site_dir, out = root / "home", root / "site", root / "demo.out"
    port, site_port = free_port(), free_port()
    env = {**os.environ, "CITEDOCS_HOME": str(home), "CITEDOCS_DATABASE_URL": "", "CITEDOCS_WORKERS": "1", "COLUMNS": "200"}
    env.pop("CITEDOCS_CORS_ORIGINS", None)
    with open(out, "w") as stdout, open(root / "demo.err", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "scripts/demo_self.py", "--port", str(port), "--site-port", str(site_port), "--site-dir", str(site_dir)],
            cwd=ROOT, env=env, stdout=stdout, stderr=stderr,
        )
    try:
        deadline = time.time() + 900
        while not (found := CHAT_LINE.search(out.read_text())):
            if process.poll() is not None or time.time() > deadline:
                pytest.fail(f"`make demo-self` printed no chat URL:\n{out.read_text()}\n{(root / 'demo.err').read_text()[-3000:]}")
            time.sleep(0.5)
        yield Demo(f"http://127.0.0.1:{site_port}/", found.group(1), site_dir, home)
    finally:
        process.terminate()
        process.wait(timeout=30)
    with pytest.raises(httpx.ConnectError):  # stopping the demo stopped its citedocs server too
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)


@pytest.fixture(scope="module")
def driver():
    with headless_chromium(1200, 900) as browser:
        yield browser


def test_the_widget_on_the_built_docs_site_answers_a_configuration_question_with_links_into_the_site(driver, demo: Demo):
    corpora = httpx.get(f"{demo.api}/corpora", timeout=30).json()
    assert corpora["default"] == "citedocs"
    driver.get(demo.site + "getting-started/install/")
    wait(driver, lambda d: d.execute_script("return document.getElementById('citedocs-widget')?.dataset.ready"), "the widget never loaded", timeout=120)
    root = driver.find_element(By.ID, "citedocs-widget").shadow_root
    root.find_element(By.CSS_SELECTOR, ".cd-launcher").click()
    root.find_element(By.CSS_SELECTOR, "#cd-question").send_keys(QUESTION + Keys.ENTER)
    wait(driver, lambda d: root.find_elements(By.CSS_SELECTOR, FINISHED), f"no answer to {QUESTION!r}", timeout=120)
    turn = root.find_elements(By.CSS_SELECTOR, ".turn")[0]
    assert turn.get_attribute("data-state") == "answered", turn.text
    assert "cors_origins" in turn.find_element(By.CSS_SELECTOR, ".answer").text
    assert turn.find_elements(By.CSS_SELECTOR, ".answer .pill")
    links = [a.get_attribute("href") for a in turn.find_elements(By.CSS_SELECTOR, ".source-card a.source-url")]
    assert links and all(link.startswith(demo.site) for link in links), links
    assert any(link.startswith(demo.site + "how-to/widget/") for link in links), links
    for link in links:  # each citation is a page of the served site, and its section is on that page
        page, _, anchor = link.partition("#")
        response = httpx.get(page, timeout=30)
        assert response.status_code == 200, link
        assert not anchor or f'id="{anchor}"' in response.text, link


def test_the_built_site_is_unharmed_when_no_citedocs_server_runs(driver, demo: Demo, tmp_path: Path):
    # the same built pages, their widget tag pointing at a port where nothing listens
    dead = f"http://127.0.0.1:{free_port()}"
    copy = Path(shutil.copytree(demo.site_dir, tmp_path / "site"))
    page = copy / "how-to" / "widget" / "index.html"
    assert f'src="{demo.api}/widget.js"' in page.read_text()
    page.write_text(page.read_text().replace(demo.api, dead))
    driver.get_log("browser")  # drop what earlier pages logged
    with serving_docs(free_port(), "", copy) as base:
        driver.get(base + "/how-to/widget/")
        wait(driver, lambda d: d.execute_script("return document.readyState") == "complete", "the page never loaded", timeout=120)
        time.sleep(1)
        assert driver.find_element(By.CSS_SELECTOR, "article h1").text.startswith("The widget on your site")
        assert not driver.find_elements(By.ID, "citedocs-widget")
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert all("/widget.js" in e for e in errors), errors  # the one failed load, nothing thrown


def test_every_eval_case_about_citedocs_names_a_page_and_section_of_the_built_site(demo: Demo):
    from citedocs.eval.cases import load_cases
    from citedocs.service import Services

    cases = load_cases(CASES)
    assert len(cases) >= 30
    assert {c.bucket for c in cases} >= {"answerable", "paraphrase", "out_of_scope"}
    services = Services.open(demo.home / "citedocs.sqlite3")
    try:
        chunks = [chunk for chunk, _ in services.store.export_chunks("citedocs")]
    finally:
        services.store.close()
    for case in cases:
        assert case.should_refuse == (not case.expected_sources)
        for path, anchor in case.expected():
            page = demo.site_dir / path
            assert page.is_file(), f"{case.id}: {path} is not a page of the built site"
            assert not anchor or f'id="{anchor}"' in page.read_text(), f"{case.id}: {path} has no #{anchor}"
            section = " ".join(c.text for c in chunks if c.doc_path == path and (not anchor or anchor in c.anchor_path))
            for keyword in case.expected_keywords:
                assert keyword.lower() in section.lower(), f"{case.id}: {keyword!r} is not in {path}#{anchor or ''}"

