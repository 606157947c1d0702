"""The docs root is a boundary and nothing is silently lost: links out of the root are never read
(and are reported), odd file names give citable chunk ids, a page with text but no chunks is
reported, a huge line is split, and an oversized file is refused with a clear message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app as cli
from citedocs.ingest.chunker import chunk_document
from citedocs.service import Services
from citedocs.markers import CHUNK_ID

from conftest import ASTRO_BASE_URL, write_docs

SECRET = "root:x:0:0:SECRET-LINE-FROM-OUTSIDE"
PAGE = "---\ntitle: {title}\n---\n# {title}\n\nDeploy the site with the `astro build` command, then upload the dist folder.\n"


@pytest.fixture
def services(tmp_home: Path):
    services = Services.open(tmp_home / "citedocs.sqlite3", backend="extractive")
    yield services
    services.store.close()


def all_chunk_text(services: Services, corpus: str) -> str:
    return "\n".join(h.chunk.text for h in services.search("deploy site secret root passwd", corpus, 50).hits)


def test_symlink_outside_docs_root_is_never_read(services, tmp_path):
    outside = write_docs(tmp_path / "outside", {"passwd.md": f"# Passwd\n\n{SECRET}\n", "keys/id.md": f"# Key\n\n{SECRET}\n"})
    docs = write_docs(tmp_path / "docs", {"guide.md": PAGE.format(title="Guide")})
    os.symlink(outside / "passwd.md", docs / "passwd.md")
    os.symlink(outside / "keys", docs / "keys")
    os.symlink(docs / "guide.md", docs / "alias.md")  # inside the root: allowed
    report = services.ingest(docs, "bounded", ASTRO_BASE_URL)
    reasons = {d.path: d.reason for d in report.file_outcomes() if not d.admitted}
    assert reasons == {
        "passwd.md": f"outside_root: passwd.md -> {(outside / 'passwd.md').resolve()}",
        "keys": f"outside_root: keys -> {(outside / 'keys').resolve()}",
    }
    written = json.loads(report.admission_report.read_text())
    assert {f["reason"] for f in written["files"] if not f["admitted"]} == set(reasons.values())
    assert SECRET not in all_chunk_text(services, "bounded")
    assert set(services.store.documents("bounded")) == {"guide.md", "alias.md"}


@pytest.mark.parametrize(
    "name", ["my notes.md", "line\nbreak.md", "brackets [v2] (draft).md", "café/résumé ünïcode.md", "100%, done; ok#1.md"]
)
def test_odd_file_names_get_url_safe_citable_stable_chunk_ids(name):
    first = chunk_document(name, PAGE.format(title="Odd"), ASTRO_BASE_URL)
    again = chunk_document(name, PAGE.format(title="Odd"), ASTRO_BASE_URL)
    assert first.chunks and [c.id for c in first.chunks] == [c.id for c in again.chunks]
    for chunk in first.chunks:
        assert CHUNK_ID.match(chunk.id), chunk.id  # the validator can match it in a [marker]
        assert chunk.id.isascii() and not any(ch.isspace() for ch in chunk.id + chunk.url)


def test_odd_file_name_is_answered_with_a_citation(services, tmp_path):
    docs = write_docs(tmp_path / "docs", {"deploy notes [v2].md": PAGE.format(title="Deploying")})
    services.ingest(docs, "odd", ASTRO_BASE_URL)
    from citedocs.contract import AskRequest

    answer = services.ask(AskRequest(question="How do I deploy the site with astro build?", corpus="odd"))
    assert not answer.refused, answer.answer
    assert [c.id.split("#")[0] for c in answer.citations] == ["deploy%20notes%20%5Bv2%5D"]


@pytest.mark.parametrize("nested", ["- " * 10_000 + "item text", "> " * 10_000 + "quoted text"])
def test_page_with_text_but_no_chunks_is_reported(services, tmp_path, nested):
    docs = write_docs(tmp_path / "docs", {"guide.md": PAGE.format(title="Guide"), "deep.md": nested + "\n"})
    report = services.ingest(docs, "deep", ASTRO_BASE_URL)
    skipped = {s.path: s.reason for s in report.skipped}
    assert "no text could be extracted" in skipped["deep.md"]
    assert {d.path: d.reason for d in report.file_outcomes()}["deep.md"].startswith("malformed: no text")


@pytest.mark.parametrize("line", ["word " * 200_000, "x" * 1_000_000])
def test_a_one_million_character_line_is_split_into_chunk_sized_pieces(line):
    chunks = chunk_document("huge.md", f"# Huge\n\n{line}\n", ASTRO_BASE_URL).chunks
    assert len(chunks) > 100
    assert max(len(c.text) for c in chunks) < 4000
    assert sum(len(c.text) for c in chunks) >= len(line.strip()) - len(chunks)  # nothing dropped


def test_file_over_the_size_limit_is_refused_with_a_clear_message(tmp_home, tmp_path):
    docs = write_docs(tmp_path / "docs", {"guide.md": PAGE.format(title="Guide"), "big.md": "# Big\n\n" + "text " * 3000})
    result = CliRunner().invoke(
        cli, ["ingest", str(docs), "--corpus", "sized", "--max-file-size", "10000"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "not read big.md: too_large: 15,007 bytes, over the 10,000-byte limit" in result.output
    assert "--max-file-size" in result.output
    report = json.loads((tmp_home / "reports" / "sized-admission.json").read_text())
    assert [f["path"] for f in report["files"] if f["admitted"]] == ["guide.md"]
