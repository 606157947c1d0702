"""Admin keys: the third key scope. Only an admin key opens the /admin routes, whatever the auth
setting; it reaches only its own tenant; every admin action lands in the audit log, on both stores."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from citedocs.cli import app as cli
from citedocs.service import InvalidKeyOrigins, Services, UnknownKey

from conftest import BACKENDS, copy_of_small_home, open_services, running_server

SITE = "https://docs.example.com"


@pytest.fixture(scope="module")
def home(small_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_of_small_home(small_home, tmp_path_factory.mktemp("admin-home"))


@pytest.fixture(scope="module")
def keys(home: Path) -> dict[str, str]:
    services = Services.open(home / "citedocs.sqlite3")
    try:
        made = {
            "admin": services.create_key("default", "ops", admin=True),
            "other_admin": services.create_key("acme", "acme ops", admin=True),
            "full": services.create_key("default", "backend"),
            "publishable": services.create_key("default", "widget", publishable=True, origins=[SITE]),
        }
        for name, (key, _) in made.items():
            if key.admin:
                services.audit(key, "corpus.sync", f"{key.tenant}-docs", detail=f"made by the {name} fixture")
        return {name: secret for name, (_, secret) in made.items()}
    finally:
        services.store.close()


@pytest.fixture(scope="module")
def server(home: Path, keys) -> str:
    # auth off: the question routes are open, the admin routes still are not
    with running_server(home, CITEDOCS_DATABASE_URL="", CITEDOCS_AUTH="off") as (base, _):
        yield base


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_admin_routes_refuse_a_request_without_a_key_even_with_auth_off(server):
    response = httpx.get(f"{server}/admin/audit")
    assert response.status_code == 401 and response.json()["error"] == "missing_api_key"


@pytest.mark.parametrize("kind", ["full", "publishable"])
def test_admin_routes_refuse_full_and_publishable_keys(server, keys, kind):
    response = httpx.get(f"{server}/admin/audit", headers={**bearer(keys[kind]), "Origin": SITE})
    assert response.status_code == 403
    body = response.json()
    assert body["error"] == "admin_key_required" and "keys create --admin" in body["detail"]


def test_an_admin_key_reads_only_its_own_tenants_audit_log(server, keys):
    own = httpx.get(f"{server}/admin/audit", headers=bearer(keys["admin"])).json()["actions"]
    other = httpx.get(f"{server}/admin/audit", headers=bearer(keys["other_admin"])).json()["actions"]
    # newest first: the fixture's sync entry, then the operator's CLI creating this tenant's keys
    assert [(a["action"], a["key_id"]) for a in own] == [("corpus.sync", own[0]["key_id"])] + [("key.create", "cli")] * 3
    assert own[0]["target"] == "default-docs" and {a["tenant"] for a in own} == {"default"}
    assert [a["target"] for a in other][0] == "acme-docs" and {a["tenant"] for a in other} == {"acme"}
    assert len(other) == 2


def test_an_admin_key_also_asks_like_a_full_key(server, keys):
    response = httpx.get(f"{server}/corpora", headers=bearer(keys["admin"]))
    assert response.status_code == 200


def test_a_key_cannot_be_both_admin_and_publishable(tmp_path):
    services = Services.open(tmp_path / "citedocs.sqlite3")
    with pytest.raises(InvalidKeyOrigins, match="never sit in a public page"):
        services.create_key("acme", admin=True, publishable=True, origins=[SITE])
    assert services.keys() == []
    assert [(a.action, a.outcome) for a in services.admin_actions("acme")] == [("key.create", "rejected")]
    services.store.close()


@pytest.mark.parametrize("store_backend", BACKENDS)
def test_the_audit_log_keeps_each_admin_action_newest_first(request, store_backend, tmp_path):
    services = open_services(request, store_backend, tmp_path, "audit")
    try:
        key, secret = services.create_key("acme", "ops", admin=True)
        assert secret.startswith("cda_") and key.admin and key.scope == "admin"
        services.audit(key, "corpus.upload", "acme-docs", "rejected", "entry escapes the root: ../etc/passwd")
        with pytest.raises(UnknownKey):
            services.revoke_key("key_123", "acme", by=key)
        newest = services.admin_actions()
        assert [(a.action, a.key_id, a.outcome) for a in newest] == [
            ("key.revoke", key.key_id, "unknown_key"),
            ("corpus.upload", key.key_id, "rejected"),
            ("key.create", "cli", "ok"),
        ]
        assert services.admin_actions("default") == []
    finally:
        services.store.close()


def test_keys_cli_creates_an_admin_key_and_audits_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))
    monkeypatch.delenv("CITEDOCS_DATABASE_URL", raising=False)
    runner = CliRunner()
    created = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--admin"], env={"COLUMNS": "200"})
    assert created.exit_code == 0, created.output
    assert "cda_" in created.stdout and "admin key" in created.output
    listed = runner.invoke(cli, ["keys", "list"], env={"COLUMNS": "200"})
    assert "admin" in listed.output
    services = Services.open(tmp_path / "citedocs.sqlite3")
    assert [a.action for a in services.admin_actions("acme")] == ["key.create"]
    services.store.close()
