"""Admission promises: what may be evidence is decided by a policy outside the documents.

Real Astro pages in a tmp folder, the real model and SQLite. A rejected file is never retrievable,
the report names every file with its reason, and a bad policy changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from citedocs.cli import app
from citedocs.contract import AskRequest
from citedocs.ingest.admission import PolicyError
from citedocs.service import Services

from conftest import ASTRO_BASE_URL

CORPUS = "small"
HEROKU = "guides/deploy/heroku.mdx"
SHARP = "reference/errors/missing-sharp.mdx"
YAML = "recipes/add-yaml-support.mdx"
BACKEND = "guides/backend/index.mdx"


@pytest.fixture
def services(tmp_home: Path):
    services = Services.open(tmp_home / "citedocs.sqlite3")
    yield services
    services.store.close()


def write_policy(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    policy = folder / "admission.toml"
    policy.write_text(text, encoding="utf-8")
    return policy


def ingest(services: Services, docs: Path, policy: Path | None = None):
    return services.ingest(docs, CORPUS, ASTRO_BASE_URL, admission=policy)


def indexed_paths(services: Services) -> set[str]:
    return set(services.store.documents(CORPUS))


def page_ids_in_search(services: Services, query: str, page: str) -> list[str]:
    return [h.chunk.id for h in services.search(query, CORPUS, 8).hits if h.chunk.id.startswith(page + "#")]


def test_draft_page_is_not_admitted(services, small_docs):
    text = (small_docs / HEROKU).read_text(encoding="utf-8")
    (small_docs / HEROKU).write_text(text.replace("---\n", "---\ndraft: true\n", 1), encoding="utf-8")
    report = ingest(services, small_docs)  # no policy: the default excludes drafts
    assert HEROKU not in indexed_paths(services)
    assert {d.path: d.reason for d in report.file_outcomes()}[HEROKU] == "frontmatter: draft=true"
    assert page_ids_in_search(services, "deploy to heroku with the heroku cli", "guides/deploy/heroku") == []


@pytest.mark.parametrize("key", ['"draft"', "'draft'", '"dr\\x61ft"', '"dr\\u0061ft"'])
def test_draft_page_is_not_admitted_however_its_key_is_spelled(services, small_docs, key):
    """The frontmatter is read only where it may name a rule's field: a quoted or escaped key still does."""
    text = (small_docs / HEROKU).read_text(encoding="utf-8")
    (small_docs / HEROKU).write_text(text.replace("---\n", f"---\n{key}: true\n", 1), encoding="utf-8")
    report = ingest(services, small_docs)
    assert {d.path: d.reason for d in report.file_outcomes()}[HEROKU] == "frontmatter: draft=true"
    assert HEROKU not in indexed_paths(services)


def test_excluded_glob_is_not_indexed(services, small_docs, tmp_path):
    first = ingest(services, small_docs)
    assert SHARP in indexed_paths(services)
    policy = write_policy(tmp_path / "policy", 'exclude = ["reference/errors/*"]\n')
    report = ingest(services, small_docs, policy)
    assert indexed_paths(services) == {HEROKU, YAML, BACKEND}
    assert report.removed > 0 and report.version != first.version
    assert page_ids_in_search(services, "missing sharp image service", "reference/errors/missing-sharp") == []
    again = ingest(services, small_docs)  # no flag: the remembered policy still applies
    assert again.policy == str(policy.resolve()) and SHARP not in indexed_paths(services)


def test_changed_document_needs_reapproval(services, small_docs, tmp_path):
    policy = write_policy(tmp_path / "policy", 'require_approval = true\napprovals = "approved.toml"\n')
    (policy.parent / "approved.toml").write_text("", encoding="utf-8")
    services.approve(small_docs, CORPUS, [], policy)  # a reviewer approves every page as it is
    ingest(services, small_docs, policy)
    assert page_ids_in_search(services, "heroku login", "guides/deploy/heroku")

    text = (small_docs / HEROKU).read_text(encoding="utf-8")
    (small_docs / HEROKU).write_text(text + "\n## Unreviewed\n\nRun `heroku login` twice.\n", encoding="utf-8")
    report = ingest(services, small_docs)
    reason = {d.path: d.reason for d in report.file_outcomes()}[HEROKU]
    assert reason.startswith("hash_mismatch: approved ") and ", now " in reason
    assert HEROKU not in indexed_paths(services)
    assert page_ids_in_search(services, "heroku login", "guides/deploy/heroku") == []

    services.approve(small_docs, CORPUS, [HEROKU])
    report = ingest(services, small_docs)
    assert all(d.admitted for d in report.file_outcomes())
    assert "guides/deploy/heroku#unreviewed/1" in services.store.chunk_hashes(CORPUS)


def test_unlisted_document_is_not_admitted_under_approvals(services, small_docs, tmp_path):
    policy = write_policy(tmp_path / "policy", f'require_approval = true\n[approvals]\n"{YAML}" = "{"0" * 64}"\n')
    report = ingest(services, small_docs, policy)
    reasons = {d.path: d.reason for d in report.file_outcomes()}
    assert reasons[HEROKU] == "not_approved" and reasons[YAML].startswith(f"hash_mismatch: approved {'0' * 64}")
    assert indexed_paths(services) == set()


def test_admission_report_lists_every_file_with_reason(tmp_home, small_docs, tmp_path):
    (small_docs / "guides/latin1.md").write_bytes("# Café\n\nÇa va.\n".encode("latin-1"))
    text = (small_docs / YAML).read_text(encoding="utf-8")
    (small_docs / YAML).write_text(text.replace("---\n", "---\ndraft: true\n", 1), encoding="utf-8")
    policy = write_policy(tmp_path / "policy", 'exclude = ["reference/**"]\n')
    extra = tmp_path / "out" / "admission.json"
    args = ["ingest", str(small_docs), "--corpus", CORPUS, "--admission", str(policy), "--admission-report", str(extra)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "2 admitted" in out and "1 excluded_by_glob, 1 frontmatter, 1 malformed" in out
    assert f"report: {extra}" in out
    report = json.loads(extra.read_text(encoding="utf-8"))
    assert {f["path"]: (f["admitted"], f["reason"]) for f in report["files"]} == {
        HEROKU: (True, ""),
        BACKEND: (True, ""),
        SHARP: (False, "excluded_by_glob: reference/**"),
        YAML: (False, "frontmatter: draft=true"),
        "guides/latin1.md": (False, "malformed: not valid UTF-8 (byte 5); re-save the file as UTF-8"),
    }

    again = CliRunner().invoke(app, ["ingest", str(small_docs), "--corpus", CORPUS], env={"COLUMNS": "300"})
    assert "(remembered for this corpus)" in " ".join(again.output.split())
    default = tmp_home / "reports" / f"{CORPUS}-admission.json"
    assert json.loads(default.read_text(encoding="utf-8"))["files"] == report["files"]


def test_corpus_version_changes_with_admission(services, small_docs, tmp_path):
    everything = ingest(services, small_docs)
    policy = write_policy(tmp_path / "policy", f'exclude = ["{BACKEND}"]\n')
    narrowed = ingest(services, small_docs, policy)
    assert narrowed.version != everything.version
    assert services.corpus(CORPUS).version == narrowed.version
    response = services.ask(AskRequest(question="How do I deploy my Astro site to Heroku?", corpus=CORPUS))
    assert response.corpus_version == narrowed.version
    widened = ingest(services, small_docs, write_policy(tmp_path / "policy", "exclude = []\n"))
    assert widened.version == everything.version


@pytest.mark.parametrize(
    "text, needle",
    [
        ("exclude = [\n", "not valid TOML"),
        ('exlude = ["a"]\n', "unknown key(s) exlude"),
        ('include = "*.mdx"\n', "`include` must be a list"),
        ("require_approval = 1\n", "`require_approval` must be true or false"),
        ('approvals = "missing.toml"\n', "missing.toml does not exist"),
        ('[[frontmatter]]\nfield = "draft"\nequals = true\naction = "boost"\n', "unknown frontmatter action"),
    ],
)
def test_malformed_policy_is_a_clear_error_and_keeps_index(services, small_docs, tmp_path, text, needle):
    before = ingest(services, small_docs)
    hashes = services.store.chunk_hashes(CORPUS)
    policy = write_policy(tmp_path / "policy", text)
    with pytest.raises(PolicyError) as info:
        ingest(services, small_docs, policy)
    message = str(info.value)
    assert str(policy.resolve()) in message and needle in message and "Nothing was changed" in message
    assert services.store.chunk_hashes(CORPUS) == hashes
    assert services.corpus(CORPUS).version == before.version
    assert ingest(services, small_docs).policy == "default"  # the bad policy was not remembered


def test_cli_reports_a_malformed_policy_and_exits_2(tmp_home, small_docs, tmp_path):
    policy = write_policy(tmp_path / "policy", "exclude = [\n")
    args = ["ingest", str(small_docs), "--corpus", CORPUS, "--admission", str(policy)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "error: admission policy" in " ".join(result.output.split())
