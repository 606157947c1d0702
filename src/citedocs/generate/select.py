"""Choosing the generation backend from configuration."""

from __future__ import annotations

from .. import config
from ..models.encoders import BiEncoder
from .base import Generator
from ..config import ProviderSpec
from .extractive import ExtractiveGenerator
from .unit_features import configured_unit_scorer
from .fallback import ProviderChain, build_chain, endpoint_for
from .openai_compat import EndpointConfig, OpenAICompatibleGenerator
from .quote import QuotingGenerator, resolve_answer_style

BACKENDS = ("extractive", "openai", "local", "providers")


class BackendConfigError(ValueError):
    pass


def resolve_backend(kind: str | None) -> str:
    """The backend a process will run: ``kind``, else ``CITEDOCS_BACKEND``, else ``openai`` when an
    endpoint is in ``CITEDOCS_LLM_BASE_URL``, else extractive. A name that is not a backend, or ``openai``
    without an endpoint, is an error (checked before any model loads)."""
    endpoint = EndpointConfig.from_env()
    chain = config.setting("llm_providers")
    kind = kind or config.setting("backend") or ("providers" if chain else "openai" if endpoint else "extractive")
    if kind not in BACKENDS:
        raise BackendConfigError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
    if kind == "providers" and not chain:
        raise BackendConfigError("backend 'providers' needs the llm_providers setting (CITEDOCS_LLM_PROVIDERS): the list of providers to try")
    if kind == "openai" and endpoint is None:
        raise BackendConfigError(
            "backend 'openai' needs CITEDOCS_LLM_BASE_URL (e.g. http://localhost:8000/v1) and CITEDOCS_LLM_MODEL"
        )
    return kind


def make_generator(kind: str | None, encoder: BiEncoder, min_sentence_score: float) -> Generator:
    """The generator of ``resolve_backend(kind)``; an LLM backend in the ``quote`` answer style
    (setting ``llm_answer``) answers with quotes of the chunks its LLM graded best. ``min_sentence_score``: the
    extractive backend's floor (``thresholds.toml``, extractive_min_sentence_score)."""
    kind = resolve_backend(kind)
    extractive = ExtractiveGenerator(encoder, min_sentence_score, scorer=configured_unit_scorer()[0])
    if kind == "extractive":
        return extractive
    # a chain answers in the style of its first provider (a bad setting fails before the model loads)
    first = config.setting("llm_providers")[0].kind if kind == "providers" else kind
    style = resolve_answer_style(config.setting("llm_answer"), first)
    llm = provider_chain(extractive) if kind == "providers" else llm_client(kind)
    return QuotingGenerator(llm, extractive) if style == "quote" else llm


def provider_chain(extractive: ExtractiveGenerator) -> ProviderChain:
    """The providers of ``llm_providers``, in order (fallback.py)."""

    def make(spec: ProviderSpec):
        if spec.kind == "extractive":
            return extractive
        if spec.kind == "local":
            return llm_client("local")
        return OpenAICompatibleGenerator(endpoint_for(spec))

    return build_chain(config.setting("llm_providers"), make)


def llm_client(kind: str) -> OpenAICompatibleGenerator:
    """The OpenAI-compatible client of an LLM backend (``local`` starts its model server)."""
    if kind == "openai":
        return OpenAICompatibleGenerator(EndpointConfig.from_env())
    if kind == "local":
        from .local import LocalBackendError, start_local_generator

        try:
            return start_local_generator()
        except LocalBackendError as exc:
            raise BackendConfigError(str(exc)) from exc
    raise AssertionError(f"resolve_backend returned {kind!r}")
