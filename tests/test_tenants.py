"""Tenants and API keys: with auth on, a key sees, cites and reads traces of its own tenant only."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from citedocs.api.app import create_app
from citedocs.auth import secret_sha256
from citedocs.cli import app as cli
from citedocs.index.store import CorpusOwnedByOtherTenant
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, TENANT_CORPORA, copy_astro_pages, stored_rows

QUESTION = "How do I deploy my Astro site to Heroku?"


def make_client(services: Services, auth: str) -> TestClient:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CITEDOCS_AUTH", auth)
        env.setenv("CITEDOCS_RATE_LIMIT_PER_MINUTE", "0")
        return TestClient(create_app(services))


@pytest.fixture(scope="module")
def guarded(tenant_services) -> TestClient:
    return make_client(tenant_services, "required")


@pytest.fixture(scope="module")
def headers(tenant_services) -> dict[str, dict[str, str]]:
    """Authorization headers for a fresh key of each tenant."""
    return {
        tenant: {"Authorization": f"Bearer {tenant_services.create_key(tenant, 'tests')[1]}"}
        for tenant in TENANT_CORPORA
    }


def own_chunk_ids(services: Services, tenant: str) -> set[str]:
    return set(services.store.chunk_hashes(TENANT_CORPORA[tenant][0]))


def test_corpora_lists_only_the_callers_own(guarded, headers):
    for tenant, (corpus, _) in TENANT_CORPORA.items():
        body = guarded.get("/corpora", headers=headers[tenant]).json()
        assert [c["name"] for c in body["corpora"]] == [corpus]
        assert body["default"] == corpus


def test_same_question_never_retrieves_or_cites_the_other_tenants_chunks(guarded, headers, tenant_services):
    for tenant in TENANT_CORPORA:
        answer = guarded.post("/ask", json={"question": QUESTION}, headers=headers[tenant]).json()
        trace = guarded.get(f"/traces/{answer['trace_id']}", headers=headers[tenant]).json()
        retrieved = {hit["id"] for hit in trace["retrieved"]}
        cited = {c["id"] for c in answer["citations"]}
        assert retrieved and retrieved <= own_chunk_ids(tenant_services, tenant)
        assert cited <= own_chunk_ids(tenant_services, tenant)
    acme = guarded.post("/ask", json={"question": QUESTION}, headers=headers["acme"]).json()
    assert any(c["id"].startswith("guides/deploy/heroku#") for c in acme["citations"])  # its own docs answer it


@pytest.mark.parametrize("route", ["/ask", "/ask/stream"])
def test_another_tenants_corpus_is_indistinguishable_from_an_unknown_one(guarded, headers, route):
    foreign = guarded.post(route, json={"question": QUESTION, "corpus": "acme-docs"}, headers=headers["globex"])
    unknown = guarded.post(route, json={"question": QUESTION, "corpus": "no-such"}, headers=headers["globex"])
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json()["detail"].replace("acme-docs", "no-such") == unknown.json()["detail"]
    assert "acme" not in unknown.json()["detail"]  # the hint lists only the caller's corpora


def test_other_tenants_trace_is_not_found(guarded, headers):
    answer = guarded.post("/ask", json={"question": QUESTION}, headers=headers["acme"]).json()
    trace_id = answer["trace_id"]
    foreign = guarded.get(f"/traces/{trace_id}", headers=headers["globex"])
    guessed = guarded.get(f"/traces/{'0' * 32}", headers=headers["globex"])
    assert foreign.status_code == guessed.status_code == 404
    assert foreign.json()["error"] == guessed.json()["error"] == "unknown_trace"
    assert guarded.get(f"/traces/{trace_id}", headers=headers["acme"]).status_code == 200


def test_feedback_on_another_tenants_trace_is_refused_and_not_stored(guarded, headers):
    trace_id = guarded.post("/ask", json={"question": QUESTION}, headers=headers["acme"]).json()["trace_id"]
    attempt = guarded.post(
        f"/traces/{trace_id}/feedback", json={"verdict": "down", "comment": "from globex"}, headers=headers["globex"]
    )
    assert attempt.status_code == 404
    own = guarded.post(f"/traces/{trace_id}/feedback", json={"verdict": "up"}, headers=headers["acme"])
    assert own.status_code == 200
    feedback = guarded.get(f"/traces/{trace_id}", headers=headers["acme"]).json()["feedback"]
    assert [f["verdict"] for f in feedback] == ["up"]


@pytest.mark.parametrize(
    "authorization, status, error",
    [
        (None, 401, "missing_api_key"),
        ("Bearer cd_not-a-real-key", 401, "invalid_api_key"),
        ("Basic dXNlcjpwYXNz", 401, "invalid_api_key"),
    ],
)
def test_requests_without_a_valid_key_are_rejected(guarded, authorization, status, error):
    headers = {"Authorization": authorization} if authorization else {}
    for method, route, body in (("GET", "/corpora", None), ("POST", "/ask", {"question": QUESTION})):
        response = guarded.request(method, route, json=body, headers=headers)
        assert response.status_code == status
        assert response.json()["error"] == error and response.json()["detail"]
        assert response.headers["www-authenticate"] == "Bearer"


def test_revoked_key_is_rejected(guarded, tenant_services):
    key, secret = tenant_services.create_key("acme", "soon revoked")
    assert guarded.get("/corpora", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    tenant_services.revoke_key(key.key_id)
    response = guarded.get("/corpora", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 403
    assert response.json()["error"] == "revoked_api_key" and key.key_id in response.json()["detail"]


def test_health_readiness_metrics_and_ui_need_no_key(guarded):
    for route in ("/healthz", "/readyz", "/metrics", "/", "/static/app.js"):
        assert guarded.get(route).status_code == 200, route


def test_with_auth_off_one_caller_sees_every_corpus(tenant_services):
    body = make_client(tenant_services, "off").get("/corpora").json()
    assert {c["name"] for c in body["corpora"]} == {corpus for corpus, _ in TENANT_CORPORA.values()}


def test_ingesting_into_another_tenants_corpus_is_refused(tenant_services, tmp_path):
    docs = copy_astro_pages(tmp_path / "docs", TENANT_CORPORA["globex"][1])
    with pytest.raises(CorpusOwnedByOtherTenant, match="belongs to tenant 'acme'"):
        tenant_services.ingest(docs, "acme-docs", ASTRO_BASE_URL, tenant="globex")
    assert tenant_services.corpus("acme-docs").tenant == "acme"


def test_cli_ingest_records_the_tenant_and_refuses_another_tenants_corpus(tmp_home, tmp_path):
    docs = copy_astro_pages(tmp_path / "docs", TENANT_CORPORA["acme"][1])
    runner = CliRunner()
    first = runner.invoke(cli, ["ingest", str(docs), "--corpus", "shared", "--tenant", "acme"], env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "owned by tenant acme" in first.output
    second = runner.invoke(cli, ["ingest", str(docs), "--corpus", "shared", "--tenant", "globex"], env={"COLUMNS": "200"})
    assert second.exit_code == 2
    assert "belongs to tenant 'acme'" in second.output and "pick another corpus name" in second.output
    assert Services.open().corpus("shared").tenant == "acme"


def test_key_secret_is_stored_only_as_its_hash(tenant_services):
    key, secret = tenant_services.create_key("globex", "hash check")
    rows = stored_rows(tenant_services, "SELECT * FROM api_keys WHERE key_id = ?", (key.key_id,))
    assert secret not in repr(rows) and secret_sha256(secret) in repr(rows)


def test_cli_creates_lists_and_revokes_keys_without_ever_listing_the_secret(tmp_home):
    runner = CliRunner()
    created = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--name", "ci"], env={"COLUMNS": "200"})
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("cd_")
    listed = runner.invoke(cli, ["keys", "list", "--tenant", "acme"], env={"COLUMNS": "200"})
    assert "acme" in listed.output and "ci" in listed.output and secret not in listed.output
    key_id = Services.open().keys("acme")[0].key_id
    revoked = runner.invoke(cli, ["keys", "revoke", key_id], env={"COLUMNS": "200"})
    assert revoked.exit_code == 0 and f"revoked {key_id}" in revoked.output
    assert Services.open().keys("acme")[0].revoked_at


@pytest.mark.parametrize(
    "args, needle",
    [
        (["keys", "create", "--tenant", "no spaces"], "invalid tenant"),
        (["keys", "revoke", "key_missing"], "citedocs keys list"),
    ],
)
def test_cli_key_commands_explain_bad_input(tmp_home, args, needle):
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert needle in result.output


# A corpus's rankings (BM25 statistics included) must not depend on any other corpus in the store.
ISOLATED_PAGES = ("guides/deploy/heroku.mdx", "recipes/add-yaml-support.mdx", "reference/errors/missing-sharp.mdx")
NEIGHBOUR_PAGES = ("guides/deploy/render.mdx", "guides/deploy/buddy.mdx", "guides/deploy/surge.mdx")
ISOLATION_QUESTIONS = (QUESTION, "How do I import YAML data into a component?", "sharp is missing when I build my site")


def test_a_corpus_ranks_the_same_whatever_other_corpus_is_indexed(request, store_backend, tmp_path):
    from conftest import open_services
    from citedocs.retrieve.hybrid import RetrievalConfig

    services = open_services(request, store_backend, tmp_path, "isolation", backend="extractive")
    services.ingest(copy_astro_pages(tmp_path / "a", ISOLATED_PAGES), "team-a", ASTRO_BASE_URL, tenant="acme")

    def rankings() -> dict:
        modes = {"bm25": RetrievalConfig(mode="bm25", rerank=False), "hybrid+rerank": RetrievalConfig()}
        return {
            (mode, question): [(h.chunk.id, h.score) for h in services.search(question, "team-a", 8, config).hits]
            for mode, config in modes.items()
            for question in ISOLATION_QUESTIONS
        }

    alone = rankings()
    assert all(alone.values())
    # another tenant's corpus about the same subject: shared words, other document frequencies
    services.ingest(copy_astro_pages(tmp_path / "b", NEIGHBOUR_PAGES), "team-b", ASTRO_BASE_URL, tenant="globex")
    try:
        assert rankings() == alone  # same chunks, same order, same scores
    finally:
        services.store.close()


@pytest.mark.parametrize("store_backend", ["sqlite"], scope="session")
def test_an_index_with_one_shared_bm25_table_is_split_per_corpus_on_open_without_reembedding(tmp_path, store_backend):
    import sqlite3

    from citedocs.index.sqlite import fts_table

    path = tmp_path / "citedocs.sqlite3"
    services = Services.open(path, backend="extractive")
    for corpus, pages in (("team-a", ISOLATED_PAGES), ("team-b", NEIGHBOUR_PAGES)):
        services.ingest(copy_astro_pages(tmp_path / corpus, pages), corpus, ASTRO_BASE_URL)
    fresh = services.store.lexical_search("team-a", ["deploy", "heroku"], 8)
    services.store.close()
    with sqlite3.connect(path) as db:  # rewrite it as the earlier releases kept it: one table, a corpus column
        db.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(corpus UNINDEXED, title, headings, body,"
            " tokenize = \"porter unicode61 tokenchars '_'\")"
        )
        for corpus in ("team-a", "team-b"):
            db.execute(
                f"INSERT INTO chunks_fts (rowid, corpus, title, headings, body)"
                f" SELECT rowid, ?, title, headings, body FROM {fts_table(corpus)}",
                (corpus,),
            )
            db.execute(f"DROP TABLE {fts_table(corpus)}")

    reopened = Services.open(path, backend="extractive")
    try:
        assert reopened.store.lexical_search("team-a", ["deploy", "heroku"], 8) == fresh
        tables = {r[0] for r in stored_rows(reopened, "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "chunks_fts" not in tables and {fts_table("team-a"), fts_table("team-b")} <= tables
    finally:
        reopened.store.close()
