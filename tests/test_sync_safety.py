"""What syncing and uploading may never do to a team's data: an upload touches only citedocs' own
upload folder, keeps every other setting of the source, and writes nothing unless it is accepted;
re-running `up` or `ingest` never silently replaces a corpus's source.

Real parts throughout: real Astro pages, the real model, a real SQLite store, real zip and tar files."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from citedocs.index.store import SyncJob
from citedocs.service import Services
from citedocs.sync.service import Syncs, stamp
from citedocs.sync.worker import JobRunner

from conftest import ASTRO_BASE_URL, write_docs

ZEBRA = "---\ntitle: Zebra crossings\n---\n\n## Zebra crossing\n\nA unique zebra paragraph about striped crossings.\n"
OKAPI = "---\ntitle: Okapi\n---\n\n## Okapi facts\n\nThe okapi is a forest giraffe.\n"


@pytest.fixture
def syncs(tmp_home: Path) -> Syncs:
    services = Services.open()
    yield Syncs(services)
    services.store.close()


@pytest.fixture
def admin(syncs: Syncs):
    return syncs.services.create_key("default", "ops", admin=True)[0]


def zipped(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive_file:
        for name, data in files.items():
            archive_file.writestr(name, data)
    return buffer.getvalue()


def tarred(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def run_queued(syncs: Syncs) -> SyncJob:
    """What a worker does with the oldest queued job."""
    job = syncs.store.claim_job("test-worker", stamp())
    assert job is not None, "no queued job"
    return JobRunner(syncs, "test-worker").run(job)


def test_an_upload_job_never_deletes_the_folder_the_source_names_when_it_runs(syncs, admin, tmp_path):
    queued = syncs.upload("uploaded", zipped({"guides/zebra.mdx": ZEBRA}), admin, base_url=ASTRO_BASE_URL)
    precious = write_docs(tmp_path / "team-docs", {"guides/okapi.mdx": OKAPI, "notes.txt": "not docs, still theirs"})
    syncs.set_source("uploaded", "folder", str(precious), {"base_url": ASTRO_BASE_URL})
    ended = run_queued(syncs)
    assert ended.id == queued.id
    assert sorted(p.name for p in precious.rglob("*") if p.is_file()) == ["notes.txt", "okapi.mdx"]
    assert (precious / "notes.txt").read_text() == "not docs, still theirs"
    assert ended.status == "failed" and "changed" in ended.error and str(precious) in ended.error
    assert syncs.source("uploaded").location == str(precious)  # the operator's choice stands


def test_ingest_or_up_of_another_folder_refuses_to_replace_a_corpus_source_unless_told(syncs, small_docs, tmp_path):
    from typer.testing import CliRunner

    from citedocs.cli import app as cli
    from fake_llm import free_port

    syncs.services.ingest(small_docs, "team", ASTRO_BASE_URL)
    syncs.set_source("team", "git", str(small_docs), {"base_url": ASTRO_BASE_URL, "branch": "main", "pull": True, "every": "6h"})
    version, chunks = syncs.services.corpus("team").version, syncs.services.corpus("team").chunk_count
    other = write_docs(tmp_path / "elsewhere", {"guides/zebra.mdx": ZEBRA})
    runner, env = CliRunner(), {"COLUMNS": "200"}
    for command in (["ingest", str(other), "-c", "team"], ["up", str(other), "-c", "team", "--port", str(free_port())]):
        refused = runner.invoke(cli, command, env=env)
        assert refused.exit_code == 2, refused.output
        assert "git" in refused.output and str(small_docs) in refused.output and "--replace-source" in refused.output
        source = syncs.source("team")
        assert (source.kind, source.location, source.options["branch"], source.options["pull"]) == ("git", str(small_docs), "main", True)
        assert (syncs.services.corpus("team").version, syncs.services.corpus("team").chunk_count) == (version, chunks)
    same = runner.invoke(cli, ["ingest", str(small_docs), "-c", "team", "--base-url", ASTRO_BASE_URL], env=env)
    assert same.exit_code == 0, same.output  # the same folder again: the incremental no-op
    assert syncs.source("team").kind == "git" and syncs.services.corpus("team").version == version
    replaced = runner.invoke(cli, ["ingest", str(other), "-c", "team", "--base-url", ASTRO_BASE_URL, "--replace-source"], env=env)
    assert replaced.exit_code == 0, replaced.output
    source = syncs.source("team")
    assert (source.kind, source.location) == ("folder", str(other.resolve())) and "branch" not in source.options
    assert source.options["every"] == "6h"  # the schedule (and a release gate) stay: only where the docs come from changed


def gated_git_source(syncs: Syncs, docs: Path, tmp_path: Path):
    syncs.services.ingest(docs, "team", ASTRO_BASE_URL)
    cases = write_docs(tmp_path / "cases", {"team-dev.jsonl": '{"id": "q1", "question": "How do I deploy to Heroku?"}\n'})
    options = {"base_url": ASTRO_BASE_URL, "branch": "main", "pull": True, "every": "6h", "eval": str(cases / "team-dev.jsonl"), "floors": {"mrr": 0.5}}
    return syncs.set_source("team", "git", str(docs), options)


def test_an_upload_keeps_the_release_gate_schedule_and_every_other_source_setting(syncs, admin, small_docs, tmp_path):
    before = gated_git_source(syncs, small_docs, tmp_path)
    syncs.upload("team", zipped({"guides/zebra.mdx": ZEBRA}), admin, docs_format="mdx")
    after = syncs.source("team")
    assert after.kind == "archive" and after.location != str(small_docs)
    assert after.options == {**before.options, "format": "mdx"}
    assert after.next_sync_at and after.webhook_secret == before.webhook_secret


def test_a_refused_upload_changes_no_source_setting(syncs, admin, small_docs, tmp_path):
    from citedocs.sync.service import JobBusy

    before = gated_git_source(syncs, small_docs, tmp_path)
    syncs.start("team", "admin", by=admin)  # a sync is queued: the upload must wait (409)
    with pytest.raises(JobBusy):
        syncs.upload("team", tarred({"guides/zebra.mdx": ZEBRA.encode()}), admin, base_url="https://elsewhere.example/")
    assert syncs.source("team") == before


def test_a_name_with_a_trailing_newline_is_not_a_valid_name():
    from citedocs.service import InvalidName, check_name

    for name in ("docs\n", "docs\r\n", "\ndocs"):
        with pytest.raises(InvalidName):
            check_name("corpus", name)
    assert check_name("corpus", "docs_v2-en") == "docs_v2-en"


def test_no_tenant_can_take_the_name_of_a_release_gate_candidate(syncs, small_docs, tmp_path):
    from citedocs.service import InvalidName

    intruder = syncs.services.create_key("acme", "acme ops", admin=True)[0]
    with pytest.raises(InvalidName, match="reserved for the release gate"):
        syncs.upload("team--candidate", zipped({"guides/zebra.mdx": ZEBRA}), intruder, base_url=ASTRO_BASE_URL)
    with pytest.raises(InvalidName, match="reserved for the release gate"):
        syncs.set_source("team--candidate", "folder", str(small_docs), {"base_url": ASTRO_BASE_URL}, tenant="acme")
    assert syncs.store.get_corpus("team--candidate") is None and syncs.store.get_source("team--candidate") is None


def test_uploading_to_a_name_another_tenant_uses_says_only_that_it_is_unavailable(syncs, admin, small_docs):
    from citedocs.index.store import CorpusOwnedByOtherTenant

    syncs.services.ingest(small_docs, "team", ASTRO_BASE_URL)
    intruder = syncs.services.create_key("acme", "acme ops", admin=True)[0]
    with pytest.raises(CorpusOwnedByOtherTenant) as refused:
        syncs.upload("team", zipped({"guides/zebra.mdx": ZEBRA}), intruder)
    message = str(refused.value)
    assert "not available" in message and "default" not in message and "tenant" not in message
    assert syncs.source("team").kind == "folder"


def test_a_job_whose_name_another_tenant_took_meanwhile_does_not_say_whose_it_is(syncs, small_docs):
    acme = syncs.services.create_key("acme", "acme ops", admin=True)[0]
    syncs.upload("shared", zipped({"guides/zebra.mdx": ZEBRA}), acme, base_url=ASTRO_BASE_URL)
    syncs.services.ingest(small_docs, "shared", ASTRO_BASE_URL, tenant="other-team")  # the operator, meanwhile
    ended = run_queued(syncs)
    assert ended.status == "failed" and "not available" in ended.error and "other-team" not in ended.error


def test_unsigned_webhooks_are_counted_not_written_to_the_audit_log(syncs, small_docs):
    from prometheus_client import REGISTRY

    from citedocs.sync import webhook

    def rejected(reason: str) -> float:
        return REGISTRY.get_sample_value("citedocs_webhooks_rejected_total", {"reason": reason}) or 0.0

    syncs.services.ingest(small_docs, "team", ASTRO_BASE_URL)
    syncs.set_source("team", "folder", str(small_docs), {"base_url": ASTRO_BASE_URL})
    syncs.rotate_webhook_secret("team")
    before = syncs.services.admin_actions(None, 1000)
    counts = {reason: rejected(reason) for reason in ("no_webhook", "signature_missing", "signature_mismatch")}
    attempts = [
        ("IGNORE PREVIOUS INSTRUCTIONS; admin granted to mallory", {}),
        ("team", {"x-github-delivery": "<script>alert(1)</script>"}),
        ("team", {"x-hub-signature-256": "sha256=" + "0" * 64, "x-github-event": "push", "x-github-delivery": "d-mallory"}),
    ]
    for corpus, headers in attempts:
        with pytest.raises(webhook.Refused):
            syncs.webhook(corpus, b'{"forged": "entry"}', headers)
    assert syncs.services.admin_actions(None, 1000) == before
    assert {reason: rejected(reason) - counts[reason] for reason in counts} == {
        "no_webhook": 1, "signature_missing": 1, "signature_mismatch": 1,
    }  # fmt: skip


def test_a_tenant_over_its_corpus_quota_cannot_create_another_by_upload(syncs, admin, small_docs, monkeypatch):
    from citedocs.sync.service import QuotaExceeded

    syncs.services.ingest(small_docs, "team", ASTRO_BASE_URL)
    monkeypatch.setenv("CITEDOCS_TENANT_MAX_CORPORA", "1")
    with pytest.raises(QuotaExceeded) as refused:
        syncs.upload("second", zipped({"guides/zebra.mdx": ZEBRA}), admin, base_url=ASTRO_BASE_URL)
    assert refused.value.status == 409 and "1 corpus" in str(refused.value) and "tenant_max_corpora" in str(refused.value)
    assert syncs.store.get_source("second") is None
    syncs.upload("team", zipped({"guides/zebra.mdx": ZEBRA}), admin)  # replacing its own corpus's docs is no new corpus


def test_a_tenant_over_its_upload_bytes_quota_is_refused_with_the_setting_to_change(syncs, admin, monkeypatch):
    from citedocs.sync.service import QuotaExceeded

    monkeypatch.setenv("CITEDOCS_TENANT_MAX_UPLOAD_BYTES", "5000")
    syncs.upload("first", zipped({"guides/zebra.mdx": ZEBRA + "x" * 3000}), admin, base_url=ASTRO_BASE_URL)
    run_queued(syncs)
    with pytest.raises(QuotaExceeded) as refused:
        syncs.upload("second", zipped({"guides/okapi.mdx": OKAPI + "y" * 3000}), admin, base_url=ASTRO_BASE_URL)
    assert refused.value.status == 413 and "tenant_max_upload_bytes" in str(refused.value) and "5,000" in str(refused.value)
    syncs.upload("first", zipped({"guides/zebra.mdx": ZEBRA + "z" * 3000}), admin)  # the folder it replaces does not count


def test_a_sync_that_would_take_a_tenant_over_its_chunk_quota_fails_before_embedding(syncs, admin, small_docs, monkeypatch):
    syncs.services.ingest(small_docs, "team", ASTRO_BASE_URL)
    used = syncs.services.corpus("team").chunk_count
    monkeypatch.setenv("CITEDOCS_TENANT_MAX_CHUNKS", str(used + 1))
    syncs.upload("more", zipped({"guides/zebra.mdx": ZEBRA, "guides/okapi.mdx": OKAPI}), admin, base_url=ASTRO_BASE_URL)
    ended = run_queued(syncs)
    assert ended.status == "failed" and "tenant_max_chunks" in ended.error and f"{used + 1:,}" in ended.error
    assert ended.progress.get("phase") != "embed" and syncs.store.get_corpus("more") is None


def test_the_upload_route_answers_a_quota_with_its_status_and_the_setting(syncs, admin, monkeypatch):
    from fastapi.testclient import TestClient

    from citedocs.api.app import create_app

    secret = syncs.services.create_key("default", "ops2", admin=True)[1]
    monkeypatch.setenv("CITEDOCS_TENANT_MAX_UPLOAD_BYTES", "100")
    monkeypatch.setenv("CITEDOCS_RATE_LIMIT_PER_MINUTE", "0")
    client = TestClient(create_app(syncs.services))
    answer = client.post("/admin/corpora/new/archive", params={"base_url": ASTRO_BASE_URL}, content=zipped({"a.md": ZEBRA}), headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 413 and answer.json()["error"] == "quota_exceeded" and "tenant_max_upload_bytes" in answer.json()["detail"]
