"""citedocs: answers from your docs with a citation on every claim, or an honest refusal.

The code is layered; a module imports only from layers below its own (checked by import-linter,
contracts in pyproject.toml; docs/explanation/architecture.md draws it):

1. ``cli``: the command line.
2. ``api``: HTTP, the admin routes and console, the web chat and widget (from ``ui/static``).
3. ``sync``: corpus sources, sync jobs and workers, webhooks, uploads, the release gate.
4. ``eval``: evaluation (the release gate runs it).
5. ``mcp_server``: the MCP tools for coding agents (stdio, and /mcp through ``api``).
6. ``service``: what every adapter calls (ingest, search, ask, traces, insights, keys, audit).
7. ``ask`` (the question pipeline), ``ingest`` (docs in), ``auth`` (API keys), ``insights``.
8. ``retrieve`` and ``validate``.
9. ``generate``: the answer backends.
10. ``index`` (the stores) and ``models`` (the bundled models).
11. Shared modules: ``contract`` (the answer contract), ``markers`` (citation markers), ``types``,
   ``sentences``, ``capacity``, ``metrics``, ``logs``, ``telemetry``, ``privacy``, ``ui`` (charts);
   under them ``threads`` and ``text``, and ``config`` (the one settings registry) at the bottom.
"""

__version__ = "0.1.0"
