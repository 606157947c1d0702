"""`citedocs up PATH_OR_URL`: from a docs folder to a chat in one command, as a new user runs it.

Real processes throughout: `citedocs up` runs as a subprocess on a free loopback port over a small
MkDocs project (real Material for MkDocs pages), and the answers come over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from citedocs.service import corpus_name_for

from conftest import ROOT
from fake_llm import free_port

MATERIAL_DOCS = ROOT / "evals" / "corpora" / "mkdocs-material-docs" / "docs"
PAGES = ("publishing-your-site.md", "creating-your-site.md")
SITE_URL = "https://docs.example.com/"
CHAT_LINE = re.compile(r"^chat: (http://127\.0\.0\.1:\d+)/ ", re.M)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's MkDocs project: mkdocs.yml (with its site_url) and a docs/ folder of real pages."""
    root = tmp_path / "my-project"
    (root / "docs").mkdir(parents=True)
    for page in PAGES:
        shutil.copyfile(MATERIAL_DOCS / page, root / "docs" / page)
    (root / "mkdocs.yml").write_text(f"site_name: My project\nsite_url: {SITE_URL}\n")
    return root


def env_for(home: Path) -> dict[str, str]:
    # one worker: the machine running the tests is small, and one process answers exactly as several do
    return {**os.environ, "CITEDOCS_HOME": str(home), "CITEDOCS_DATABASE_URL": "", "CITEDOCS_WORKERS": "1", "COLUMNS": "200"}


@contextmanager
def citedocs_up(source: Path, home: Path, *args: str, timeout_s: float = 300, **env: str) -> Iterator[tuple[str, Path]]:
    """`citedocs up SOURCE [ARGS]` running until the chat URL line appears; yields that URL and the
    file holding its stdout, and stops the process after."""
    out = home.parent / f"up-{time.monotonic_ns()}.out"
    with open(out, "w") as stdout, open(out.with_suffix(".err"), "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "citedocs.cli", "up", str(source), "--port", str(free_port()), *args],
            env={**env_for(home), **env}, stdout=stdout, stderr=stderr, cwd=source.parent,
        )
    try:
        deadline = time.time() + timeout_s
        while not (found := CHAT_LINE.search(out.read_text())):
            if process.poll() is not None or time.time() > deadline:
                pytest.fail(f"no chat URL from `citedocs up`:\n{out.read_text()}\n{out.with_suffix('.err').read_text()[-3000:]}")
            time.sleep(0.3)
        yield found.group(1), out
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_up_goes_from_a_docs_folder_to_a_cited_answer_and_a_second_run_reuses_the_index(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    with citedocs_up(project, home) as (base, out):
        first, first_log = out.read_text(), out.with_suffix(".err").read_text()
        corpora = httpx.get(f"{base}/corpora", timeout=30).json()
        # no corpus named anywhere: the question goes to the docs just ingested
        answer = httpx.post(f"{base}/ask", json={"question": "How do I publish my site to GitHub Pages?"}, timeout=120).json()
        chat_page = httpx.get(f"{base}/", timeout=30)
    assert "format mkdocs" in first_log and "embedding chunks" in first_log and " 0 added" not in first
    assert corpora["default"] == "my-project" and [c["name"] for c in corpora["corpora"]] == ["my-project"]
    assert not answer["refused"], answer
    assert answer["citations"] and all(c["url"].startswith(SITE_URL) for c in answer["citations"])
    assert any(c["url"].startswith(f"{SITE_URL}publishing-your-site/") for c in answer["citations"])
    assert chat_page.status_code == 200 and "citedocs" in chat_page.text

    # --open hands the chat URL to the user's browser (webbrowser honours $BROWSER: here a script that records it)
    opened, browser = tmp_path / "opened.txt", tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    with citedocs_up(project, home, "--open", BROWSER=str(browser)) as (base, out):
        again = httpx.post(f"{base}/ask", json={"question": "How do I publish my site to GitHub Pages?"}, timeout=120).json()
        second = out.read_text()
        deadline = time.time() + 30  # the browser is started right after the URL line
        while not opened.exists() and time.time() < deadline:
            time.sleep(0.2)
    assert "nothing to re-embed: corpus my-project was indexed already" in second
    assert re.search(r"chunks: 0 added, 0 changed, 0 removed, \d+ unchanged", second)
    assert again["answer"] == answer["answer"]
    assert opened.read_text().split() == [f"{base}/"]


def run_up(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "up", *args], env=env_for(home), cwd=cwd, capture_output=True, text=True, timeout=180
    )


def test_a_port_in_use_is_a_clear_error_before_anything_is_ingested(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_up(str(project), "--port", str(port), home=home, cwd=tmp_path)
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr and "--port" in result.stderr
    assert "chunks:" not in result.stdout and not (home / "citedocs.sqlite3").exists()


def test_a_missing_folder_or_an_unknown_format_is_a_clear_error(project: Path, tmp_path: Path):
    home = tmp_path / "home"
    missing = run_up(str(tmp_path / "no-such-docs"), "--port", str(free_port()), home=home, cwd=tmp_path)
    assert missing.returncode == 2 and "folder not found" in missing.stderr and "no-such-docs" in missing.stderr
    unknown = run_up(str(project), "--format", "asciidoc", "--port", str(free_port()), home=home, cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown docs format 'asciidoc'" in unknown.stderr and "mkdocs" in unknown.stderr
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("not docs")
    no_docs = run_up(str(tmp_path / "notes"), "--port", str(free_port()), home=home, cwd=tmp_path)
    assert no_docs.returncode == 2 and "no Markdown/MDX files" in no_docs.stderr and "--format" in no_docs.stderr
    site_flags = run_up("https://docs.example.com/", "--format", "mkdocs", "--port", str(free_port()), home=home, cwd=tmp_path)
    assert site_flags.returncode == 2 and "--base-url and --format are for a folder" in site_flags.stderr


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("my-project", "my-project"),
        ("my-project/docs", "my-project"),
        ("Acme Handbook/content/en", "Acme-Handbook"),
        ("https://www.example.com/guide/", "example-com"),
        ("https://docs.astro.build/en/getting-started/", "docs-astro-build"),
    ],
)
def test_the_corpus_is_named_after_the_project_or_the_site(source: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert corpus_name_for(source) == name


def test_up_sums_up_the_readers_notes_in_one_line_and_says_the_server_runs_once_it_answers(project: Path, tmp_path: Path):
    for n in range(3):  # pages whose snippets name URLs, which are never fetched: one note each
        (project / "docs" / f"remote-{n}.md").write_text(
            f"# Remote part {n}\n\nThis page embeds a remote part.\n\n--8<-- \"https://example.com/part[{n}].md\"\n"
        )
    home = tmp_path / "home"
    with citedocs_up(project, home) as (base, out):
        deadline = time.time() + 30  # the log line and the chat line come from the same readiness check
        while "citedocs on http://" not in out.with_suffix(".err").read_text() and time.time() < deadline:
            time.sleep(0.2)
        log = out.with_suffix(".err").read_text()
    notes = [line for line in log.splitlines() if line.startswith("note ")]
    assert len(notes) == 1 and notes[0].startswith("note 3 notes on content not indexed") and "in 3 file(s)" in notes[0]
    report = json.loads((home / "reports" / "my-project-admission.json").read_text())
    assert sorted(n.split(":")[0] for n in report["notes"]) == ["remote-0.md", "remote-1.md", "remote-2.md"]
    assert all("part[" in n for n in report["notes"])
    messages = [json.loads(line)["msg"] for line in log.splitlines() if line.startswith("{")]
    started = next(i for i, m in enumerate(messages) if m.startswith("Uvicorn running on"))
    running = next(i for i, m in enumerate(messages) if m.startswith("citedocs on http://"))
    assert running > started, messages
