"""The sync routes of a real `citedocs serve` (its in-process worker runs the jobs): admin routes bounded
to the admin key's tenant, the signed webhook (unsigned, wrongly signed, stale, replayed, oversized and
flooding requests change nothing and say why), uploads checked whole before anything is unpacked, and
every admin action in the audit log."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import time
import uuid
import zipfile
from pathlib import Path

import httpx
import pytest

from citedocs.service import Services
from citedocs.sync import archive
from citedocs.sync.service import Syncs
from citedocs.sync.webhook import sign

from conftest import ASTRO_BASE_URL, SMALL_CORPUS, copy_of_small_home, running_server, write_docs

ZEBRA = "---\ntitle: Zebra crossings\n---\n\n## Zebra crossing\n\nA unique zebra paragraph about striped crossings.\n"
RATE = 12  # webhook requests per minute the server allows (per client IP, and per corpus)


@pytest.fixture(scope="module")
def site(small_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A home with the small corpus read from its own copy of the docs, an admin key per tenant, a webhook secret."""
    home = copy_of_small_home(small_home, tmp_path_factory.mktemp("sync-http-home"))
    docs = home / "docs"
    shutil.copytree(small_home / "docs", docs)
    services = Services.open(home / "citedocs.sqlite3")
    syncs = Syncs(services)
    syncs.set_source(SMALL_CORPUS, "folder", str(docs), {"base_url": ASTRO_BASE_URL})
    secret = syncs.rotate_webhook_secret(SMALL_CORPUS)
    admin = services.create_key("default", "ops", admin=True)[1]
    other = services.create_key("acme", "acme ops", admin=True)[1]
    full = services.create_key("default", "app")[1]
    services.store.close()
    return {"home": home, "docs": docs, "secret": secret, "admin": admin, "other": other, "full": full}


@pytest.fixture(scope="module")
def server(site) -> str:
    env = {"CITEDOCS_DATABASE_URL": "", "CITEDOCS_AUTH": "off", "CITEDOCS_WEBHOOK_RATE_PER_MINUTE": str(RATE), "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0"}
    with running_server(site["home"], **env) as (base, _):
        yield base


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def wait_for(server: str, key: str, job_id: str, timeout_s: float = 120) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        job = httpx.get(f"{server}/admin/jobs/{job_id}", headers=bearer(key)).json()["job"]
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    pytest.fail(f"job {job_id} did not end: {job}")


def hook(server: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{server}/hooks/corpora/{SMALL_CORPUS}", content=body, headers=headers)


def signed(secret: str, body: bytes, delivery: str | None = None, timestamp: str | None = None) -> dict[str, str]:
    timestamp, delivery = timestamp or str(int(time.time())), delivery or str(uuid.uuid4())
    return {"X-Citedocs-Signature": sign(secret, body, timestamp, delivery), "X-Citedocs-Timestamp": timestamp, "X-Citedocs-Delivery": delivery}


def audit(server: str, key: str) -> list[dict]:
    return httpx.get(f"{server}/admin/audit", headers=bearer(key)).json()["actions"]


def test_an_admin_sync_returns_a_job_the_server_runs_and_reports(server, site):
    started = httpx.post(f"{server}/admin/corpora/{SMALL_CORPUS}/sync", headers=bearer(site["admin"]))
    assert started.status_code == 202 and started.json()["created"] is True
    job = wait_for(server, site["admin"], started.json()["job"]["id"])
    assert job["status"] == "succeeded" and job["trigger"] == "admin" and job["attempts"] == 1
    assert job["report"]["chunks"]["unchanged"] > 0 and job["report"]["changed_chunk_ids"] == []
    assert job["worker"].startswith("serve:")
    ended, entry = audit(server, site["admin"])[:2]  # newest first: how the job ended, then who started it
    assert (entry["action"], entry["target"], entry["outcome"], entry["detail"]) == ("corpus.sync", SMALL_CORPUS, "ok", job["id"])
    assert (ended["action"], ended["target"], ended["outcome"]) == ("job.ended", SMALL_CORPUS, "succeeded")
    assert ended["detail"].startswith(f"job {job['id']} (admin): chunks 0 added") and ended["key_id"].startswith("worker:serve:")


def test_admin_corpora_lists_each_corpus_with_source_version_and_syncs(server, site):
    rows = httpx.get(f"{server}/admin/corpora", headers=bearer(site["admin"])).json()["corpora"]
    row = next(r for r in rows if r["name"] == SMALL_CORPUS)
    assert row["source"]["kind"] == "folder" and row["source"]["location"] == str(site["docs"])
    assert row["source"]["webhook"] is True and "secret" not in json.dumps(row)
    assert row["version"] and row["chunks"] > 0 and row["next_sync_at"] is None
    assert row["last_sync"]["status"] in ("queued", "running", "succeeded")


def test_an_admin_key_reaches_only_its_own_tenants_corpora_and_jobs(server, site):
    mine = httpx.get(f"{server}/admin/jobs", headers=bearer(site["admin"])).json()["jobs"]
    assert mine, "the default tenant's admin sees its jobs"
    other = bearer(site["other"])
    assert httpx.get(f"{server}/admin/jobs", headers=other).json()["jobs"] == []
    assert httpx.get(f"{server}/admin/jobs/{mine[0]['id']}", headers=other).status_code == 404
    assert httpx.get(f"{server}/admin/corpora", headers=other).json()["corpora"] == []
    refused = httpx.post(f"{server}/admin/corpora/{SMALL_CORPUS}/sync", headers=other)
    assert refused.status_code == 404 and refused.json()["error"] == "unknown_corpus"
    assert httpx.post(f"{server}/admin/corpora/{SMALL_CORPUS}/sync", headers=bearer(site["full"])).status_code == 403


def test_unsigned_webhook_changes_nothing_says_why_and_is_counted_not_audited(server, site):
    before = httpx.get(f"{server}/admin/jobs", headers=bearer(site["admin"])).json()["jobs"]
    logged = audit(server, site["admin"])
    response = hook(server, b'{"ref": "refs/heads/main"}', {"X-GitHub-Delivery": "d-unsigned"})
    assert response.status_code == 401 and response.json()["error"] == "signature_missing"
    assert "X-Hub-Signature-256".lower() in response.json()["detail"]
    assert httpx.get(f"{server}/admin/jobs", headers=bearer(site["admin"])).json()["jobs"] == before
    assert audit(server, site["admin"]) == logged  # anyone can send one: not the audit log's to hold
    assert 'citedocs_webhooks_rejected_total{reason="signature_missing"} 1.0' in httpx.get(f"{server}/metrics").text


def test_wrongly_signed_webhook_changes_nothing(server, site):
    body = b'{"ref": "refs/heads/main"}'
    unknown = httpx.post(f"{server}/hooks/corpora/nope", content=body, headers=signed(site["secret"], body))
    assert unknown.status_code == 404 and unknown.json()["error"] == "no_webhook"
    response = hook(server, body, signed("whsec_not-the-secret", body))
    assert response.status_code == 401 and response.json()["error"] == "signature_mismatch"
    tampered = hook(server, body + b" ", signed(site["secret"], body))
    assert tampered.status_code == 401 and tampered.json()["error"] == "signature_mismatch"


def test_a_stale_timestamped_webhook_is_refused(server, site):
    body = b"{}"
    old = str(int(time.time()) - 3600)
    response = hook(server, body, signed(site["secret"], body, "d-old", old))
    assert response.status_code == 401 and response.json()["error"] == "stale_timestamp"


def test_an_oversized_webhook_is_refused_before_it_is_read(server, site):
    body = b"x" * 70_000
    response = hook(server, body, signed(site["secret"], body))
    assert response.status_code == 413 and "webhook" in response.json()["detail"]


def test_a_signed_webhook_makes_an_edited_page_searchable_and_a_replay_is_refused(server, site):
    write_docs(site["docs"], {"guides/zebra.mdx": ZEBRA})
    body = json.dumps({"ref": "refs/heads/main"}).encode()
    headers = signed(site["secret"], body, "d-1")
    sent = time.perf_counter()
    response = hook(server, body, headers)
    assert response.status_code in (200, 202), response.text
    job = wait_for(server, site["admin"], response.json()["job"]["id"])
    searchable_s = time.perf_counter() - sent
    if job["trigger"] != "webhook":  # the admin test's sync was still running: it returned that job; send again
        headers = signed(site["secret"], body, "d-2")
        job = wait_for(server, site["admin"], hook(server, body, headers).json()["job"]["id"])
    assert job["status"] == "succeeded" and "guides/zebra#zebra-crossing/1" in job["report"]["changed_chunk_ids"]
    services = Services.open(site["home"] / "citedocs.sqlite3")
    try:
        assert services.search("zebra crossing", SMALL_CORPUS, 3).hits[0].chunk.id == "guides/zebra#zebra-crossing/1"
    finally:
        services.store.close()
    assert searchable_s < 15, f"webhook to searchable took {searchable_s:.1f}s"
    replay = hook(server, body, headers)
    assert replay.status_code == 409 and replay.json()["error"] == "replayed_delivery"
    outcomes = [a["outcome"] for a in audit(server, site["admin"]) if a["action"] == "webhook"]
    assert "ok" in outcomes and "replayed_delivery" in outcomes


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive_file:
        for name, data in files.items():
            archive_file.writestr(name, data)
    return buffer.getvalue()


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_an_uploaded_archive_becomes_a_new_corpus(server, site):
    docs = {"guides/zebra.mdx": ZEBRA.encode(), "guides/other.mdx": b"---\ntitle: Okapi\n---\n\n## Okapi facts\n\nThe okapi is a forest giraffe.\n"}
    response = httpx.post(
        f"{server}/admin/corpora/uploaded/archive", params={"base_url": "https://docs.example.com/"},
        content=_zip(docs), headers=bearer(site["admin"]),
    )
    assert response.status_code == 202, response.text
    job = wait_for(server, site["admin"], response.json()["job"]["id"])
    assert job["status"] == "succeeded" and job["trigger"] == "upload", job
    assert "unpacked a zip upload: 2 files" in job["report"]["source"]["note"]
    row = next(r for r in httpx.get(f"{server}/admin/corpora", headers=bearer(site["admin"])).json()["corpora"] if r["name"] == "uploaded")
    assert row["source"]["kind"] == "archive" and row["chunks"] == 2
    services = Services.open(site["home"] / "citedocs.sqlite3")
    try:
        assert services.store.job_archive(job["id"]) is None  # the archive is not kept once its job has ended
    finally:
        services.store.close()
    # a second upload replaces the docs: the page it lacks is gone, the live version switched once complete
    again = httpx.post(f"{server}/admin/corpora/uploaded/archive", content=_tar([(_member("guides/zebra.mdx"), ZEBRA.encode())]), headers=bearer(site["admin"]))
    second = wait_for(server, site["admin"], again.json()["job"]["id"])
    assert second["status"] == "succeeded" and second["report"]["removed_chunk_ids"] == ["guides/other#okapi-facts/1"]


@pytest.mark.parametrize(
    "data, problem",
    [
        (_zip({"../outside.md": b"# escape\n"}), "'..' escapes the root"),
        (_zip({"/etc/cron.d/x.md": b"# absolute\n"}), "absolute path"),
        (_tar([(_member("docs/link.md", tarfile.SYMTYPE, "/etc/passwd"), None)]), "a symlink"),
        (_tar([(_member("docs/hard.md", tarfile.LNKTYPE, "docs/a.md"), None)]), "a hard link"),
        (_tar([(_member("docs/dev", tarfile.CHRTYPE), None)]), "device file"),
        (b"PK\x03\x04 this is not really a zip", "corrupt"),
        (b"plain text, not an archive", "not a .zip or .tar.gz"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "device", "corrupt", "not-an-archive"],
)
def test_an_unsafe_or_corrupt_archive_is_rejected_with_a_report_and_changes_nothing(server, site, data, problem):
    before = httpx.get(f"{server}/admin/jobs", headers=bearer(site["admin"])).json()["jobs"]
    response = httpx.post(f"{server}/admin/corpora/{SMALL_CORPUS}/archive", content=data, headers=bearer(site["admin"]))
    assert response.status_code == 422 and response.json()["error"] == "archive_rejected"
    body = response.json()
    assert problem in body["detail"] + " ".join(body.get("problems", []))
    assert httpx.get(f"{server}/admin/jobs", headers=bearer(site["admin"])).json()["jobs"] == before
    rows = httpx.get(f"{server}/admin/corpora", headers=bearer(site["admin"])).json()["corpora"]
    assert next(r for r in rows if r["name"] == SMALL_CORPUS)["source"]["kind"] == "folder"
    entry = audit(server, site["admin"])[0]
    assert (entry["action"], entry["outcome"]) == ("corpus.upload", "rejected")


def test_zip_bombs_and_archives_over_the_limits_are_rejected():
    limits = archive.Limits(max_entries=5, max_unpacked_bytes=50_000_000, max_ratio=100)
    bomb = _zip({"docs/bomb.md": b"0" * 20_000_000})
    with pytest.raises(archive.ArchiveRejected, match="zip bomb"):
        archive.inspect(bomb, limits)
    many = _zip({f"docs/{n}.md": b"# page\n" for n in range(6)})
    with pytest.raises(archive.ArchiveRejected, match="over the 5-entry limit"):
        archive.inspect(many, limits)
    with pytest.raises(archive.ArchiveRejected, match="max_unpacked_bytes"):
        archive.inspect(_zip({"docs/big.md": bytes(range(256)) * 4000}), archive.Limits(10, 100_000, 1000))


def test_a_webhook_flood_is_rate_limited_and_changes_nothing(server, site):
    body = b"{}"
    statuses = [hook(server, body, signed("whsec_not-the-secret", body)).status_code for _ in range(RATE + 3)]
    assert 429 in statuses and set(statuses) <= {401, 429}
    flooded = hook(server, body, signed(site["secret"], body))
    assert flooded.status_code == 429 and "Retry-After" in flooded.headers


def test_the_previous_version_answers_while_an_upload_is_synced(small_home, tmp_path):
    """A server whose worker pauses mid-embed (fault injection, labelled): meanwhile /ask still
    answers from the previous version; the new one goes live once complete."""
    home = copy_of_small_home(small_home, tmp_path / "home")
    services = Services.open(home / "citedocs.sqlite3")
    admin = services.create_key("default", "ops", admin=True)[1]
    old_version = services.corpus(SMALL_CORPUS).version
    services.store.close()
    pages = {rel: (small_home / "docs" / rel).read_bytes() for rel in ("guides/deploy/heroku.mdx", "reference/errors/missing-sharp.mdx")}
    env = {"CITEDOCS_DATABASE_URL": "", "CITEDOCS_RATE_LIMIT_PER_MINUTE": "0", "CITEDOCS_FAULT_PAUSE_IN_EMBED": "8"}
    with running_server(home, **env) as (base, _):
        sent = httpx.post(
            f"{base}/admin/corpora/{SMALL_CORPUS}/archive", content=_zip({**pages, "guides/zebra.mdx": ZEBRA.encode()}), headers=bearer(admin)
        )
        job_id = sent.json()["job"]["id"]
        deadline = time.time() + 120
        while httpx.get(f"{base}/admin/jobs/{job_id}", headers=bearer(admin)).json()["job"]["progress"].get("phase") != "embed":
            assert time.time() < deadline, "the upload's sync never reached its embed phase"
            time.sleep(0.2)
        answer = httpx.post(f"{base}/ask", json={"question": "How do I deploy my Astro site to Heroku?"}, timeout=60)
        assert answer.status_code == 200 and answer.json()["corpus_version"] == old_version
        job = wait_for(base, admin, job_id)
        assert job["status"] == "succeeded" and job["report"]["version_before"] == old_version
        after = httpx.post(f"{base}/ask", json={"question": "How do I deploy my Astro site to Heroku?"}, timeout=60)
        assert after.json()["corpus_version"] == job["report"]["version"] != old_version


def test_serve_on_postgresql_runs_admin_syncs_through_its_queue(request, tmp_path, small_docs):
    from conftest import fresh_database

    from citedocs.index.postgres import PostgresStore

    url = fresh_database(request.getfixturevalue("postgres_server"), "serve_sync")
    services = Services(store=PostgresStore(url))
    services.ingest(small_docs, "pg-docs", ASTRO_BASE_URL)
    Syncs(services).remember_ingested("pg-docs", "folder", str(small_docs), "default", {"base_url": ASTRO_BASE_URL})
    admin = services.create_key("default", "ops", admin=True)[1]
    write_docs(small_docs, {"guides/zebra.mdx": ZEBRA})
    home = tmp_path / "home"
    home.mkdir()
    try:
        with running_server(home, CITEDOCS_DATABASE_URL=url, CITEDOCS_RATE_LIMIT_PER_MINUTE="0") as (base, _):
            started = httpx.post(f"{base}/admin/corpora/pg-docs/sync", headers=bearer(admin))
            assert started.status_code == 202
            job = wait_for(base, admin, started.json()["job"]["id"])
        assert job["status"] == "succeeded" and job["worker"].startswith("serve:")
        assert "guides/zebra#zebra-crossing/1" in job["report"]["changed_chunk_ids"]
    finally:
        services.store.close()
