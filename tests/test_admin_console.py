"""The admin console end to end: headless Chromium against a real `citedocs serve`. A question asked
in the chat shows up in the console's insights; marked down, it shows up among the docs gaps. The
console asks for the admin key once, keeps it for the tab, refuses the wrong kinds of key, and is
usable from the keyboard; an archive uploaded there becomes a corpus once its sync job
finishes. Screenshots for the docs are taken on the way (docs/screenshots/admin-*.png).
"""

from __future__ import annotations

import time
import zipfile

import httpx
import pytest

from citedocs.service import Services

from conftest import copy_of_small_home, running_server

pytestmark = pytest.mark.slow

from browser import headless_chromium  # noqa: E402  (skips this module without Chromium)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from test_ui import DONE, SCREENSHOTS  # noqa: E402

ANSWERED = "How do I deploy my Astro site to Heroku?"
GAP = "How do I configure Kubernetes autoscaling for my Astro pods?"
OKAPI_PAGE = """---
title: Okapi
---

## Okapi facts

The okapi is a forest giraffe of central Africa. An okapi has a dark back and striped legs.
"""
OTHER_GAPS = (  # asked over HTTP beforehand, so the charts and gaps have something to show
    "Can I run Astro on Kubernetes with Helm charts?",
    "How do I take Stripe payments in Astro?",
    "How do I refund a Stripe charge from an Astro endpoint?",
    "How do I install a Vite plugin in Astro?",
)


@pytest.fixture(scope="module")
def console_server(small_home, tmp_path_factory):
    home = copy_of_small_home(small_home, tmp_path_factory.mktemp("console-home"))
    services = Services.open(home / "citedocs.sqlite3")
    keys = {
        "admin": services.create_key("default", "console", admin=True)[1],
        "full": services.create_key("default", "backend")[1],
    }
    services.store.close()
    with running_server(home, CITEDOCS_DATABASE_URL="") as (base, _):
        for question in OTHER_GAPS:
            httpx.post(f"{base}/ask", json={"question": question}, timeout=120).raise_for_status()
        yield base, keys


@pytest.fixture(scope="module")
def driver():
    with headless_chromium(1200, 1400) as browser:
        yield browser


def wait(driver, condition, message, timeout=60):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        pytest.fail(f"{message}\n--- page ---\n{driver.find_element(By.TAG_NAME, 'body').text[:3000]}")


def shot(driver, name: str) -> None:
    driver.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    time.sleep(0.3)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"admin-{name}.png"))


def sign_in(driver, key: str) -> None:
    field = driver.find_element(By.ID, "admin-key")
    wait(driver, lambda d: field.is_displayed(), "the key form never showed")
    field.send_keys(key)
    field.send_keys(Keys.ENTER)


def open_console(driver, base: str, key: str | None = None) -> None:
    """Load the console; sign in with ``key`` if it asks for one (the tab forgot it, or never had it)."""
    driver.get(base + "/admin")
    wait(driver, lambda d: d.execute_script("return !!window.citedocsAdmin"), "the console did not start")
    if key and driver.find_element(By.ID, "sign-in").is_displayed():
        sign_in(driver, key)
        wait(driver, lambda d: d.find_element(By.ID, "console").is_displayed(), "the admin key was not accepted")
        assert not driver.find_element(By.ID, "sign-in").is_displayed()


def test_the_console_refuses_a_missing_wrong_or_non_admin_key(driver, console_server):
    base, keys = console_server
    open_console(driver, base)
    assert driver.switch_to.active_element.get_attribute("id") == "admin-key"
    assert driver.find_element(By.CSS_SELECTOR, "label[for=admin-key]").text == "Admin key"
    shot(driver, "sign-in")
    driver.find_element(By.CSS_SELECTOR, "#sign-in button[type=submit]").click()  # empty: the browser's own check
    assert not driver.find_element(By.ID, "console").is_displayed()
    for key, expected in (("cda_wrong", "invalid api key"), (keys["full"], "admin key required")):
        sign_in(driver, key)
        error = driver.find_element(By.ID, "sign-in-error")
        wait(driver, lambda d: expected in error.text, f"no {expected!r} message")
        assert error.get_attribute("role") == "alert" and not driver.find_element(By.ID, "console").is_displayed()
        assert driver.execute_script("return sessionStorage.getItem('citedocs.adminKey')") is None


def test_a_question_asked_in_the_chat_and_marked_down_shows_in_insights_and_gaps(driver, console_server):
    base, keys = console_server
    driver.get(base + "/")
    wait(driver, lambda d: d.execute_script("return !!window.citedocs"), "the chat did not start")
    for count, question in enumerate((ANSWERED, GAP), start=1):
        box = driver.find_element(By.ID, "question")
        box.send_keys(question)
        box.send_keys(Keys.ENTER)
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, DONE)) >= count, f"no answer to {question!r}")
    answered = driver.find_elements(By.CSS_SELECTOR, ".turn")[0]
    answered.find_element(By.CSS_SELECTOR, "button.thumb-down").click()
    answered.find_element(By.CSS_SELECTOR, ".feedback-comment").send_keys("does not say which buildpack")
    answered.find_element(By.CSS_SELECTOR, ".feedback-form button[type=submit]").click()
    status = answered.find_element(By.CSS_SELECTOR, ".feedback-status")
    wait(driver, lambda d: "recorded" in status.text, "no feedback confirmation", timeout=15)

    open_console(driver, base, keys["admin"])
    insights = driver.find_element(By.ID, "insights")
    wait(driver, lambda d: "Docs gaps" in insights.text, "insights never loaded")
    totals = {dt.text: dd.text for dt, dd in zip(insights.find_elements(By.CSS_SELECTOR, ".totals dt"), insights.find_elements(By.CSS_SELECTOR, ".totals dd"))}
    assert totals["Questions"] == str(len(OTHER_GAPS) + 2) and totals["Thumbs down"] == "1"
    gaps = insights.find_element(By.CSS_SELECTOR, ".gaps").text
    assert ANSWERED in gaps and GAP in gaps and "thumbs down (1)" in gaps
    assert "The docs never mention: Kubernetes" in gaps
    assert "does not say which buildpack" in insights.text  # the comment, with its question
    assert len(insights.find_elements(By.CSS_SELECTOR, ".charts svg[role=img]")) == 2
    shot(driver, "insights")


def test_the_console_is_usable_from_the_keyboard_and_keeps_the_key_for_the_tab(driver, console_server):
    base, keys = console_server
    open_console(driver, base)  # a reload: the key is still in this tab's sessionStorage
    wait(driver, lambda d: d.find_element(By.ID, "console").is_displayed(), "the console forgot the key on reload")
    tab = driver.find_element(By.ID, "tab-insights")
    tab.send_keys(Keys.ARROW_RIGHT)
    assert driver.switch_to.active_element.get_attribute("id") == "tab-traces"
    assert driver.find_element(By.ID, "tab-traces").get_attribute("aria-selected") == "true"
    panel = driver.find_element(By.ID, "panel-traces")
    wait(driver, lambda d: GAP in panel.text, "the traces panel never listed the question")
    assert "not helpful: does not say which buildpack" in panel.text
    row = next(r for r in panel.find_elements(By.CSS_SELECTOR, "tbody tr") if ANSWERED in r.text)
    row.find_element(By.CSS_SELECTOR, "button[data-trace]").send_keys(Keys.ENTER)
    detail = driver.find_element(By.ID, "trace-detail")
    wait(driver, lambda d: detail.is_displayed() and '"cited_hashes"' in detail.text, "no trace details")
    shot(driver, "traces")

    driver.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)  # back to the traces panel's controls
    driver.find_element(By.ID, "tab-traces").send_keys(Keys.END)
    assert driver.switch_to.active_element.get_attribute("id") == "tab-audit"
    driver.find_element(By.ID, "tab-audit").send_keys(Keys.HOME)
    assert driver.switch_to.active_element.get_attribute("id") == "tab-insights"


def test_keys_are_created_and_revoked_from_the_console_and_audited(driver, console_server):
    base, keys = console_server
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "tab-keys").click()
    keys_panel = driver.find_element(By.ID, "panel-keys")
    wait(driver, lambda d: "console" in keys_panel.text, "the keys never loaded")
    driver.find_element(By.ID, "key-name").send_keys("docs team CI")
    driver.find_element(By.CSS_SELECTOR, "#key-form button[type=submit]").click()
    secret = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#new-secret .secret-value"), "no new secret")[0]
    assert secret.text.startswith("cd_")
    assert httpx.get(f"{base}/corpora", headers={"Authorization": f"Bearer {secret.text}"}).status_code == 200
    shot(driver, "keys")
    row = next(r for r in keys_panel.find_elements(By.CSS_SELECTOR, "tbody tr") if "docs team CI" in r.text)
    row.find_element(By.CSS_SELECTOR, "button.danger").click()
    wait(driver, lambda d: "Revoked" in d.find_element(By.ID, "keys-status").text, "no revocation")
    driver.find_element(By.ID, "tab-audit").click()
    audit = driver.find_element(By.ID, "panel-audit")
    wait(driver, lambda d: "key.revoke" in audit.text and "key.create" in audit.text, "the audit log lacks the key actions")


def test_an_archive_uploaded_in_the_console_becomes_a_corpus_once_its_job_finishes(driver, console_server, tmp_path):
    base, keys = console_server
    archive = tmp_path / "okapi-docs.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("guides/okapi.mdx", OKAPI_PAGE)
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "tab-corpora").click()
    wait(driver, lambda d: d.find_element(By.ID, "upload-form").is_displayed(), "no upload form")
    assert "small-docs" in driver.find_element(By.ID, "corpora").text
    driver.find_element(By.ID, "upload-corpus").send_keys("okapi-docs")
    driver.find_element(By.ID, "upload-base-url").send_keys("https://docs.example.com/")
    driver.find_element(By.ID, "upload-file").send_keys(str(archive))
    driver.find_element(By.CSS_SELECTOR, "#upload-form button[type=submit]").click()
    corpora_status = driver.find_element(By.ID, "corpora-status")
    wait(driver, lambda d: "Upload of okapi-docs.zip to okapi-docs: job" in corpora_status.text, "the upload was not accepted")

    driver.find_element(By.ID, "tab-jobs").click()
    jobs = driver.find_element(By.ID, "jobs")
    wait(driver, lambda d: "okapi-docs" in jobs.text and "succeeded" in jobs.text, "the upload's job never finished", timeout=240)
    row = next(r for r in jobs.find_elements(By.CSS_SELECTOR, "tbody tr") if "okapi-docs" in r.text)
    assert "upload" in row.text and row.find_element(By.TAG_NAME, "progress").get_attribute("value") == "1"
    row.find_element(By.TAG_NAME, "summary").click()
    assert '"switched": true' in row.find_element(By.CSS_SELECTOR, "details pre").text  # the report: live now
    shot(driver, "jobs")

    driver.find_element(By.ID, "tab-corpora").click()
    corpora = driver.find_element(By.ID, "corpora")
    wait(driver, lambda d: "okapi-docs" in corpora.text and "archive" in corpora.text, "the new corpus is not listed")
    shot(driver, "corpora")
    answer = httpx.post(f"{base}/ask", json={"question": "What is an okapi?", "corpus": "okapi-docs"}, timeout=120).json()
    assert not answer["refused"] and answer["citations"][0]["id"].startswith("guides/okapi#")


def test_forgetting_the_key_returns_to_the_key_form(driver, console_server):
    base, keys = console_server
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "sign-out").click()
    assert driver.find_element(By.ID, "sign-in").is_displayed()
    assert driver.execute_script("return sessionStorage.getItem('citedocs.adminKey')") is None
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "/favicon" not in e["message"]]
    # the 401/403/404 answers the tests provoke show up as failed resources; anything else is a bug
    assert all("status of 4" in e["message"] for e in severe), severe
