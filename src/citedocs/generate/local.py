"""The local backend: Qwen2.5-Coder-1.5B-Instruct in llama.cpp's own HTTP server, started and stopped
by citedocs (``llm_server.ManagedServer``), answered through the same OpenAI-compatible client as
any other endpoint. Its structured-output flavour is known (llama.cpp ``json_schema``), so nothing
is probed. Install the runtime and the model with ``make install-llm``.
"""

from __future__ import annotations

import importlib.util

from .. import config
from .llm_server import LlmServerError, ManagedServer, ServerConfig
from ..models.llm_file import MODEL_LABEL, MODEL_NAME, ModelFileError
from .openai_compat import EndpointConfig, OpenAICompatibleGenerator

INSTALL_LINE = "run `make install-llm` (the xllamacpp runtime and the model)"


class LocalBackendError(ValueError):
    """The local backend cannot be set up (runtime or model missing, bad setting); ``select`` re-raises
    it as ``BackendConfigError``."""


class LocalGenerator(OpenAICompatibleGenerator):
    name = "local"

    def __init__(self, server: ManagedServer, timeout_s: float) -> None:
        self.server = server
        endpoint = EndpointConfig(
            base_url=server.base_url, model=MODEL_NAME, api_key=server.api_key, timeout_s=timeout_s, structured="llamacpp",
            name="local",
        )
        super().__init__(endpoint)
        self.model = MODEL_LABEL

    def probe(self) -> str | None:
        return self.server.problem() or super().probe()

    def close(self) -> None:
        self.server.stop()


def start_local_generator() -> LocalGenerator:
    """Verify the model, start its server, and return the generator that talks to it."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalBackendError(f"backend 'local' needs the xllamacpp runtime: {INSTALL_LINE}")
    try:
        server = ManagedServer(ServerConfig.from_env())
        server.start()  # verifies the model's sha256 first
        return LocalGenerator(server, config.setting("llm_timeout"))
    except (ModelFileError, LlmServerError, config.ConfigError) as exc:
        raise LocalBackendError(f"backend 'local': {exc}") from exc
