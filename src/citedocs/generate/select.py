"""Choosing the generation backend from configuration."""

from __future__ import annotations

from .. import config
from ..encoders import BiEncoder
from ..validate.thresholds import Thresholds
from .base import Generator
from .extractive import ExtractiveGenerator
from .openai_compat import EndpointConfig, OpenAICompatibleGenerator

BACKENDS = ("extractive", "openai", "local")


class BackendConfigError(ValueError):
    pass


def make_generator(kind: str | None, encoder: BiEncoder, thresholds: Thresholds) -> Generator:
    """``CITEDOCS_BACKEND`` picks; without it an endpoint in ``CITEDOCS_LLM_BASE_URL`` wins, else extractive."""
    endpoint = EndpointConfig.from_env()
    kind = kind or config.setting("backend") or ("openai" if endpoint else "extractive")
    if kind == "extractive":
        return ExtractiveGenerator(encoder, thresholds.extractive_min_sentence_score)
    if kind == "openai":
        if endpoint is None:
            raise BackendConfigError(
                "backend 'openai' needs CITEDOCS_LLM_BASE_URL (e.g. http://localhost:8000/v1) and CITEDOCS_LLM_MODEL"
            )
        return OpenAICompatibleGenerator(endpoint)
    if kind == "local":
        from .local import LocalBackendError, start_local_generator

        try:
            return start_local_generator()
        except LocalBackendError as exc:
            raise BackendConfigError(str(exc)) from exc
    raise BackendConfigError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
