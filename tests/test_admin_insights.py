"""The insights and console routes over HTTP on a real `citedocs serve`: only an admin key opens
them, an admin sees only its own tenant's questions, traces and keys, and bad input gets a clear
answer, never a 500."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citedocs.api.middleware import CHAT_PAGE_POLICY
from citedocs.insights import InvalidRange, parse_since
from citedocs.service import Services

from conftest import ASTRO_BASE_URL, copy_astro_pages, running_server

ACME_QUESTION = "How do I deploy my Astro site to Heroku?"
ACME_GAP = "How do I configure Kubernetes autoscaling for my Astro pods?"
GLOBEX_QUESTION = "What should I do when Astro cannot find Sharp?"
SITE = "https://docs.example.com"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("admin-insights")
    services = Services.open(home / "citedocs.sqlite3")
    services.ingest(copy_astro_pages(home / "acme", ("guides/deploy/heroku.mdx",)), "acme-docs", ASTRO_BASE_URL, tenant="acme")
    services.ingest(copy_astro_pages(home / "globex", ("reference/errors/missing-sharp.mdx",)), "globex-docs", ASTRO_BASE_URL, tenant="globex")
    services.store.close()
    (home / "config.toml").write_text('backend = "extractive"\ncorpus = "acme-docs"\n')
    return home


@pytest.fixture(scope="module")
def keys(home) -> dict[str, str]:
    services = Services.open(home / "citedocs.sqlite3")
    try:
        return {
            "acme": services.create_key("acme", "acme ops", admin=True)[1],
            "globex": services.create_key("globex", "globex ops", admin=True)[1],
            "full": services.create_key("acme", "backend")[1],
            "publishable": services.create_key("acme", "widget", publishable=True, origins=[SITE])[1],
        }
    finally:
        services.store.close()


@pytest.fixture(scope="module")
def server(home, keys):
    with running_server(home, CITEDOCS_DATABASE_URL="", CITEDOCS_RATE_LIMIT_PER_MINUTE="0") as (base, _):
        traces = {}
        for question, corpus in ((ACME_QUESTION, "acme-docs"), (ACME_GAP, "acme-docs"), (GLOBEX_QUESTION, "globex-docs")):
            response = httpx.post(f"{base}/ask", json={"question": question, "corpus": corpus}, timeout=120)
            traces[question] = response.json()["trace_id"]
        httpx.post(f"{base}/traces/{traces[ACME_QUESTION]}/feedback", json={"verdict": "down", "comment": "outdated"}).raise_for_status()
        yield base, traces


def admin(keys, who: str = "acme") -> dict[str, str]:
    return {"Authorization": f"Bearer {keys[who]}"}


def admin_routes(base: str) -> list[tuple[str, str]]:
    """Every /admin route the server publishes (method, path with its parameters filled in)."""
    paths = httpx.get(f"{base}/openapi.json").json()["paths"]
    return [
        (method.upper(), path.replace("{name}", "acme-docs").replace("{job_id}", "1").replace("{trace_id}", "t").replace("{key_id}", "k"))
        for path, methods in paths.items()
        if path.startswith("/admin/")
        for method in methods
    ]


def test_every_admin_route_refuses_no_key_and_a_wrong_key(server):
    base, _ = server
    for method, path in admin_routes(base):
        missing = httpx.request(method, base + path, json={})
        assert (missing.status_code, missing.json()["error"]) == (401, "missing_api_key"), (method, path)
        wrong = httpx.request(method, base + path, headers={"Authorization": "Bearer cda_not-a-real-key"}, json={})
        assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_api_key"), (method, path)


@pytest.mark.parametrize("kind", ["full", "publishable"])
def test_every_admin_route_refuses_a_full_or_publishable_key_with_a_clear_answer(server, keys, kind):
    base, _ = server
    routes = admin_routes(base)
    assert len(routes) >= 12  # insights, traces, keys, audit, corpora, sync, upload, jobs
    for method, path in routes:
        response = httpx.request(method, base + path, headers={**admin(keys, kind), "Origin": SITE}, json={})
        assert (response.status_code, response.json()["error"]) == (403, "admin_key_required"), (method, path)
        assert "keys create --admin" in response.json()["detail"]


def test_an_admin_sees_its_own_tenants_questions_and_gaps_only(server, keys):
    base, traces = server
    acme = httpx.get(f"{base}/admin/insights", headers=admin(keys), timeout=60).json()
    assert acme["questions"] == 2 and acme["feedback"]["down"] == 1
    examples = [q for g in acme["gaps"]["groups"] for q in g["examples"]]
    assert ACME_GAP in examples and ACME_QUESTION in examples  # refused, and down-voted
    assert GLOBEX_QUESTION not in str(acme) and "globex-docs" not in str(acme)
    globex = httpx.get(f"{base}/admin/insights", headers=admin(keys, "globex"), timeout=60).json()
    assert globex["questions"] == 1 and ACME_QUESTION not in str(globex)


def test_another_tenants_corpus_reveals_nothing(server, keys):
    base, _ = server
    report = httpx.get(f"{base}/admin/insights", params={"corpus": "globex-docs"}, headers=admin(keys), timeout=60).json()
    assert report["questions"] == 0 and report["pages"] == {"most_cited": [], "never_cited": [], "never_cited_count": 0}
    assert GLOBEX_QUESTION not in str(report)


def test_an_empty_range_answers_with_a_message_not_an_error(server, keys):
    base, _ = server
    response = httpx.get(f"{base}/admin/insights", params={"since": "2020-01-01", "until": "2020-01-02"}, headers=admin(keys))
    assert response.status_code == 200
    assert response.json()["questions"] == 0 and "no questions were asked" in response.json()["message"]


@pytest.mark.parametrize(("params", "error"), [({"since": "yesterday-ish"}, "invalid_range"), ({"corpus": "../etc"}, "invalid_name")])
def test_bad_insights_parameters_get_a_422_that_says_what_to_write(server, keys, params, error):
    base, _ = server
    response = httpx.get(f"{base}/admin/insights", params=params, headers=admin(keys))
    assert response.status_code == 422 and response.json()["error"] == error
    assert "7d" in response.json()["detail"] or "letters, digits" in response.json()["detail"]


# what a range parameter may be sent as: anything, durations of any length, dates at the ends of time
RANGES = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.tuples(st.integers(min_value=0, max_value=5000), st.sampled_from("dhw")).map(lambda t: "9" * t[0] + t[1]),
    st.sampled_from(["9999999999d", "0001-01-01T00:00+01:00", "9999-12-31T23:59:59-14:00", "²d", "٣d", "7d\n", "2026-02-30"]),
)


@pytest.mark.parametrize("since", ["9999999999d", "9" * 5000 + "d", "0001-01-01T00:00+01:00"])
def test_a_range_past_what_a_date_holds_gets_a_422_not_a_500(server, keys, since):
    base, _ = server
    response = httpx.get(f"{base}/admin/insights", params={"since": since}, headers=admin(keys), timeout=60)
    assert response.status_code == 422 and response.json()["error"] == "invalid_range"
    assert "out of range" in response.json()["detail"] and "7d" in response.json()["detail"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(since=RANGES, until=st.none() | RANGES)
def test_no_insights_range_makes_the_route_fail(server, keys, since, until):
    base, _ = server
    params = {"since": since, "gaps": "false"} | ({"until": until} if until is not None else {})
    response = httpx.get(f"{base}/admin/insights", params=params, headers=admin(keys), timeout=60)
    assert response.status_code in (200, 422), response.text
    assert response.status_code == 200 or response.json()["error"] in ("invalid_range", "invalid_request"), response.text


@settings(max_examples=500, deadline=None)
@given(value=RANGES)
def test_parsing_any_range_gives_a_moment_or_says_what_to_write(value):
    try:
        moment = parse_since(value)
    except InvalidRange as exc:
        assert "7d" in str(exc)
    else:
        assert moment.utcoffset() is not None


def test_charts_are_svg_without_script_or_style(server, keys):
    base, _ = server
    charts = httpx.get(f"{base}/admin/insights/charts", headers=admin(keys), timeout=60).json()
    for svg in charts.values():
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg") and root.get("role") == "img" and root.get("aria-label")
        assert not [e for e in root.iter() if e.tag.endswith(("script", "style", "foreignObject")) or "style" in e.attrib]
    assert "2 in 1 day(s)" in ET.fromstring(charts["per_day"]).get("aria-label")


def test_traces_list_their_feedback_and_another_tenants_trace_is_unknown(server, keys):
    base, traces = server
    listed = httpx.get(f"{base}/admin/traces", headers=admin(keys)).json()["traces"]
    # newest first (times are kept to the second: two questions asked within one may come either way)
    assert sorted(t["question"] for t in listed) == sorted([ACME_GAP, ACME_QUESTION])
    assert [t["created_at"] for t in listed] == sorted((t["created_at"] for t in listed), reverse=True)
    by_question = {t["question"]: t for t in listed}
    assert by_question[ACME_QUESTION]["feedback"][0]["comment"] == "outdated" and by_question[ACME_GAP]["refused"] is True
    own = httpx.get(f"{base}/admin/traces/{traces[ACME_QUESTION]}", headers=admin(keys))
    assert own.status_code == 200 and own.json()["question"] == ACME_QUESTION
    other = httpx.get(f"{base}/admin/traces/{traces[GLOBEX_QUESTION]}", headers=admin(keys))
    assert other.status_code == 404 and other.json()["error"] == "unknown_trace"


def test_an_admin_creates_lists_and_revokes_its_tenants_keys_and_each_is_audited(server, keys):
    base, _ = server
    made = httpx.post(f"{base}/admin/keys", json={"name": "ci", "scope": "full"}, headers=admin(keys))
    assert made.status_code == 201 and made.json()["secret"].startswith("cd_")
    key_id = made.json()["key"]["key_id"]
    assert httpx.get(f"{base}/corpora", headers={"Authorization": f"Bearer {made.json()['secret']}"}).status_code == 200
    listed = httpx.get(f"{base}/admin/keys", headers=admin(keys)).json()["keys"]
    assert key_id in [k["key_id"] for k in listed] and {k["tenant"] for k in listed} == {"acme"}
    assert all("secret" not in k and "secret_sha256" not in k for k in listed)
    globex_keys = httpx.get(f"{base}/admin/keys", headers=admin(keys, "globex")).json()["keys"]
    assert key_id not in [k["key_id"] for k in globex_keys]
    stolen = httpx.post(f"{base}/admin/keys/{key_id}/revoke", headers=admin(keys, "globex"))
    assert stolen.status_code == 404 and stolen.json()["error"] == "unknown_key"
    revoked = httpx.post(f"{base}/admin/keys/{key_id}/revoke", headers=admin(keys))
    assert revoked.status_code == 200 and revoked.json()["key"]["revoked_at"]
    audit = httpx.get(f"{base}/admin/audit", headers=admin(keys)).json()["actions"]
    assert [(a["action"], a["target"], a["outcome"]) for a in audit[:2]] == [("key.revoke", key_id, "ok"), ("key.create", key_id, "ok")]
    globex_audit = httpx.get(f"{base}/admin/audit", headers=admin(keys, "globex")).json()["actions"]
    # the refused attempt, then the operator creating globex's own key (the fixture, through the service)
    assert [(a["action"], a["outcome"]) for a in globex_audit] == [("key.revoke", "unknown_key"), ("key.create", "ok")]
    assert globex_audit[1]["key_id"] == "cli"


def test_a_publishable_key_without_origins_is_refused_and_audited(server, keys):
    base, _ = server
    response = httpx.post(f"{base}/admin/keys", json={"name": "widget", "scope": "publishable"}, headers=admin(keys))
    assert response.status_code == 422 and "--origin" in response.json()["detail"]
    newest = httpx.get(f"{base}/admin/audit", headers=admin(keys)).json()["actions"][0]
    assert (newest["action"], newest["target"], newest["outcome"]) == ("key.create", "widget", "rejected")


def test_the_console_page_has_the_chat_pages_policy(server):
    base, _ = server
    page = httpx.get(f"{base}/admin")
    assert page.status_code == 200 and page.headers["content-security-policy"] == CHAT_PAGE_POLICY
    assert "<script type=\"module\" src=\"/static/admin.js\">" in page.text and "style=" not in page.text


def test_traces_filter_by_outcome_thumbs_down_corpus_and_date(server, keys):
    base, traces = server

    def listed(**params) -> list[str]:
        response = httpx.get(f"{base}/admin/traces", params=params, headers=admin(keys))
        assert response.status_code == 200, response.text
        return [t["question"] for t in response.json()["traces"]]

    assert listed(outcome="refused") == [ACME_GAP]
    assert listed(outcome="answered") == [ACME_QUESTION]
    assert listed(outcome="thumbs_down") == [ACME_QUESTION]
    assert sorted(listed(corpus="acme-docs", since="1d")) == sorted([ACME_GAP, ACME_QUESTION])
    assert listed(until="2020-01-01") == [] and listed(corpus="globex-docs") == []  # another tenant's: nothing
    bad = httpx.get(f"{base}/admin/traces", params={"since": "last tuesday"}, headers=admin(keys))
    assert (bad.status_code, bad.json()["error"]) == (422, "invalid_range") and "7d" in bad.json()["detail"]
    assert httpx.get(f"{base}/admin/traces", params={"outcome": "great"}, headers=admin(keys)).status_code == 422


def test_a_trace_comes_with_its_sources_as_the_docs_have_them_now(server, keys):
    base, traces = server
    answered = httpx.get(f"{base}/admin/traces/{traces[ACME_QUESTION]}", headers=admin(keys)).json()
    assert answered["sources"] and [s["id"] for s in answered["sources"]] == answered["cited_ids"]
    assert all(s["url"].startswith(ASTRO_BASE_URL.rstrip("/")) and s["title"] and s["current"] for s in answered["sources"])
    refused = httpx.get(f"{base}/admin/traces/{traces[ACME_GAP]}", headers=admin(keys)).json()
    assert "sources" not in refused and 1 <= len(refused["nearest"]) <= 3


def test_docs_gaps_export_as_json_csv_and_a_markdown_issue_body(server, keys):
    base, _ = server
    url = f"{base}/admin/insights/gaps"
    as_json = httpx.get(url, headers=admin(keys)).json()
    assert set(as_json) == {"range", "gaps", "weak_answers"}
    assert any(ACME_GAP in g["examples"] for g in as_json["gaps"]["groups"])
    assert GLOBEX_QUESTION not in str(as_json)
    as_csv = httpx.get(url, params={"format": "csv"}, headers=admin(keys))
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert as_csv.text.splitlines()[0] == "section,item,value,detail" and ACME_GAP in as_csv.text
    markdown = httpx.get(url, params={"format": "markdown"}, headers=admin(keys))
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.startswith("## Docs gaps, ") and "### 1. " in markdown.text
    assert "How do I configure Kubernetes autoscaling for my Astro pods?" in markdown.text.replace("\\", "")
    assert httpx.get(url, params={"format": "pdf"}, headers=admin(keys)).status_code == 422


def test_an_admin_dismisses_its_own_gap_questions_only_and_each_attempt_is_audited(server, keys):
    base, traces = server
    url = f"{base}/admin/insights/gaps/dismiss"
    other = httpx.post(url, json={"trace_ids": [traces[GLOBEX_QUESTION]]}, headers=admin(keys))
    assert (other.status_code, other.json()["error"]) == (404, "unknown_trace")
    empty = httpx.post(url, json={"trace_ids": []}, headers=admin(keys))
    assert empty.status_code == 422
    done = httpx.post(url, json={"trace_ids": [traces[ACME_GAP]]}, headers=admin(keys))
    assert done.status_code == 200 and done.json() == {"dismissed": 1}
    gaps = httpx.get(f"{base}/admin/insights/gaps", headers=admin(keys)).json()["gaps"]
    assert gaps["dismissed"] == 1 and all(ACME_GAP not in g["examples"] for g in gaps["groups"])
    audit = httpx.get(f"{base}/admin/audit", headers=admin(keys)).json()["actions"]
    assert [(a["action"], a["outcome"]) for a in audit[:2]] == [("gap.dismiss", "ok"), ("gap.dismiss", "unknown_trace")]
    assert all(a["action"] != "gap.dismiss" for a in httpx.get(f"{base}/admin/audit", headers=admin(keys, "globex")).json()["actions"])
