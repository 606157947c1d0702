"""citedocs: answers from your docs with a citation on every claim, or an honest refusal.

The code is layered; a module imports only from layers below its own (checked by import-linter,
contracts in pyproject.toml; docs/explanation/architecture.md draws it):

1. ``cli``: the command line.
2. ``api`` (HTTP, the web chat and widget from ``ui/static``) and ``eval`` (evaluation).
3. ``mcp_server``: the MCP tools for coding agents (stdio, and /mcp through ``api``).
4. ``service``: what every adapter calls (ingest, search, ask, traces, keys).
5. ``ask`` (the question pipeline), ``ingest`` (docs in), ``auth`` (API keys).
6. ``retrieve`` and ``validate``.
7. ``generate``: the answer backends.
8. ``index`` (the stores) and ``models`` (the bundled models).
9. Shared modules: ``contract`` (the answer contract), ``markers`` (citation markers), ``types``,
   ``sentences``, ``capacity``, ``metrics``, ``logs``; under them ``threads`` and ``text``, and
   ``config`` (the one settings registry) at the bottom.
"""

__version__ = "0.1.0"
