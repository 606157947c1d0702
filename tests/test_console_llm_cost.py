"""The console's LLM cost screen, in headless Chromium against a real `citedocs serve`: the tokens and
the cost of the answers an LLM wrote, per day, corpus, tenant, provider and route, as the traces
recorded them (the provider's own ``usage``, priced by ``llm_prices``), behind the admin key.

The answers are written beforehand by a stand-in provider process (tests/openai_standin.py, fault
injection's stand-in: it reports its own ``usage``); the server that shows them runs no LLM.
"""

from __future__ import annotations

import json

import httpx
import pytest

from citedocs.contract import AskRequest
from citedocs.service import Services

from conftest import copy_of_small_home, running_server
from test_provider_fallback import QUESTION, provider, standin

pytestmark = pytest.mark.slow

from browser import headless_chromium  # noqa: E402  (skips this module without Chromium)
from selenium.webdriver.common.by import By  # noqa: E402

from test_admin_console import open_console, shot, wait  # noqa: E402

PRICES = {"priced-model": {"prompt": 2.0, "completion": 8.0}}  # USD per million tokens
QUESTIONS = (QUESTION, "How do I import YAML files into my Astro components?")


@pytest.fixture(scope="module")
def cost_server(small_home, tmp_path_factory):
    """A server over traces of two LLM answers and one extractive answer; yields its URL, an admin key
    and the usage the provider reported for each LLM answer."""
    home = copy_of_small_home(small_home, tmp_path_factory.mktemp("cost-home"))
    with pytest.MonkeyPatch.context() as mp, standin(home, "priced") as (url, _, asked):
        mp.setenv("CITEDOCS_HOME", str(home))
        mp.setenv("CITEDOCS_DATABASE_URL", "")
        for name, value in {"BACKEND": "providers", "LLM_GRADE": "off", "LLM_VERIFY": "off", "LLM_ANSWER": "write"}.items():
            mp.setenv(f"CITEDOCS_{name}", value)
        mp.setenv("CITEDOCS_LLM_PROVIDERS", json.dumps([provider("priced", url, model="priced-model")]))
        mp.setenv("CITEDOCS_LLM_PRICES", json.dumps(PRICES))
        services = Services.open(home / "citedocs.sqlite3")
        for question in QUESTIONS:
            assert not services.ask(AskRequest(question=question)).refused
        admin = services.create_key("default", "console", admin=True)[1]
        full = services.create_key("default", "backend")[1]
        services.store.close()
        reported = [r["usage"] for r in asked()]
    with running_server(home, CITEDOCS_DATABASE_URL="") as (base, _):
        httpx.post(f"{base}/ask", json={"question": QUESTION}, timeout=120).raise_for_status()  # extractive: no LLM, no cost
        yield base, {"admin": admin, "full": full}, reported


@pytest.fixture(scope="module")
def driver():
    with headless_chromium(1280, 1400) as browser:
        yield browser


def test_the_console_shows_llm_tokens_and_cost_per_day_corpus_tenant_provider_and_route(driver, cost_server):
    base, keys, reported = cost_server
    prompt, completion = sum(u["prompt_tokens"] for u in reported), sum(u["completion_tokens"] for u in reported)
    cost = (prompt * 2.0 + completion * 8.0) / 1_000_000
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "tab-cost").click()
    panel = driver.find_element(By.ID, "cost")
    wait(driver, lambda d: "By route" in panel.text, "the LLM cost never loaded")
    totals = {dt.text: dd.text for dt, dd in zip(panel.find_elements(By.CSS_SELECTOR, ".totals dt"), panel.find_elements(By.CSS_SELECTOR, ".totals dd"))}
    assert totals == {
        "Answers that used an LLM": "2",  # the extractive answer is not counted
        "Prompt tokens": f"{prompt:,}",
        "Completion tokens": f"{completion:,}",
        "Cost": f"US${cost:.6f}",
    }
    tables = {t.find_element(By.TAG_NAME, "caption").get_attribute("textContent"): t for t in panel.find_elements(By.TAG_NAME, "table")}
    rows = lambda caption: [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in tables[caption].find_elements(By.CSS_SELECTOR, "tbody tr")]  # noqa: E731
    whole = ["2", f"{prompt:,}", f"{completion:,}", f"US${cost:.6f}"]
    assert rows("LLM cost by corpus") == [["small-docs", *whole]]
    assert rows("LLM cost by tenant") == [["default", *whole]]
    assert rows("LLM cost by provider / model") == [["priced / priced-model", *whole]]  # two calls, one each answer
    assert rows("LLM cost by route") == [["default", *whole]]  # routing is off: one route
    [day] = rows("LLM cost by day")
    assert day[1:] == whole and len(day[0]) == 10
    shot(driver, "llm-cost")


def test_the_llm_cost_screen_is_behind_the_admin_key(driver, cost_server):
    base, keys, _ = cost_server
    driver.get(base + "/admin")
    driver.execute_script("sessionStorage.clear()")
    open_console(driver, base)
    assert not driver.find_element(By.ID, "tab-cost").is_displayed()  # nothing shows before a key is given
    refused = httpx.get(f"{base}/admin/insights", params={"gaps": "false"}, headers={"Authorization": f"Bearer {keys['full']}"})
    assert refused.status_code == 403 and "llm_usage" not in refused.text
