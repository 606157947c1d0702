"""Headless Chromium (Debian's `chromium` + `chromium-driver`) driven by Selenium, for the browser tests.

Importing this module skips the importing test module when the browser, its driver or selenium is
absent, except under CI=true, where their absence is an error. Selenium Manager never downloads
anything here: the driver and browser paths are given explicitly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

if os.environ.get("CI"):  # in CI a missing browser is a failure, not a skip
    import selenium.webdriver as webdriver
else:
    webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402

os.environ.setdefault("SE_OFFLINE", "true")  # belt and braces: Selenium Manager must never download
CHROMIUM = os.environ.get("CITEDOCS_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CITEDOCS_CHROMEDRIVER", "/usr/bin/chromedriver")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    if os.environ.get("CI"):
        raise RuntimeError(f"the browser tests need {CHROMIUM} and {CHROMEDRIVER}: apt-get install chromium chromium-driver")
    pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver)", allow_module_level=True)


@contextmanager
def headless_chromium(width: int = 1000, height: int = 1300) -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium with its own profile and the browser console log kept."""
    profile = tempfile.mkdtemp(prefix="citedocs-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    browser.set_script_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver: webdriver.Chrome, condition, message: str, timeout: float = 90):
    """What ``condition`` returns once it is truthy; the test fails with ``message`` after ``timeout`` seconds."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        pytest.fail(message)
