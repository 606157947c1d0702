"""The HTTP adapter: FastAPI routes over ``citedocs.service`` (``app``), the OpenAI-compatible
facade (``openai_facade``), MCP over streamable HTTP (``mcp_http``), CORS for the widget (``cors``),
load shedding and limits (``middleware``), and the OpenAPI document (``openapi``). It also serves
the chat page and the widget from ``citedocs/ui/static``.

Layer: an adapter, under only ``cli``. May import ``service``, ``mcp_server`` and anything below;
the pipeline is reached through ``service`` (it imports ``models`` only to name a missing model).
Nothing below imports it.
"""
