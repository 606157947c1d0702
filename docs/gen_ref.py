"""Generate the reference pages at build time (mkdocs-gen-files), so they cannot drift from the code.

* reference/cli.md: every command of the typer app (``citedocs.cli.app``), read through click.
* reference/http-api.md: every route of ``create_app().openapi()`` and the schemas it names.
* reference/configuration.md: every setting of ``citedocs.config.SETTINGS``.

Run by ``mkdocs build`` (plugin ``gen-files`` in mkdocs.yml); ``python docs/gen_ref.py`` prints the
page named by its argument instead (``python docs/gen_ref.py reference/cli.md``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import typer.main

from citedocs import config
from citedocs.api.app import create_app
from citedocs.cli import app as cli_app

def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------------------------------- CLI
# Typer ships its own copy of click (typer._click), so commands and parameters are read by their
# click attributes (``commands``, ``param_type_name``, ``opts``) rather than by click's classes.
def _commands(group, prefix: str) -> Iterator[tuple[str, object]]:
    for name in sorted(group.commands):
        command = group.commands[name]
        path = f"{prefix} {name}"
        if hasattr(command, "commands"):
            yield from _commands(command, path)
        else:
            yield path, command


def cli_page() -> str:
    root = typer.main.get_command(cli_app)
    lines = [
        "# CLI reference",
        "",
        "Generated from the typer app (`citedocs.cli`) when the docs are built; `citedocs COMMAND --help` "
        "prints the same. Settings that are not options (the backend's endpoint, auth, limits) are in the "
        "[configuration reference](configuration.md).",
        "",
    ]
    for path, command in _commands(root, "citedocs"):
        ctx = command.make_context(path, [], resilient_parsing=True)
        lines += [f"## `{path}`", "", (command.help or "").strip().split("\n\n")[0], "", "```text", command.get_usage(ctx), "```", ""]
        rows = []
        for param in command.params:
            record = param.get_help_record(ctx)  # what --help prints: names, type, then help, env var and default
            if record and param.name != "help":
                rows.append(f"| `{record[0]}` | {_cell(record[1])} |")
        if rows:
            lines += ["| parameter | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- HTTP API
def _type(schema: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    return schema.get("type", "any")


def http_page() -> str:
    spec = create_app().openapi()
    lines = [
        "# HTTP API reference",
        "",
        f"Generated from the OpenAPI {spec['openapi']} document of `citedocs serve` (`create_app().openapi()`) "
        "when the docs are built. A running server serves the same document at `/openapi.json` and an "
        "interactive page at `/docs`. Every error is a JSON body `{\"error\", \"detail\"}`; "
        "the [answer contract](answer-contract.md) explains the answer fields.",
        "",
        "| method | path | what it does |",
        "|---|---|---|",
    ]
    details = []
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            anchor = f"{method}-{path}".lower().replace("/", "-").replace("{", "").replace("}", "").replace("_", "-").strip("-")
            summary = op.get("summary", "")
            lines.append(f"| `{method.upper()}` | [`{path}`](#{anchor}) | {_cell(summary)} |")
            details += [f"## `{method.upper()} {path}` {{ #{anchor} }}", ""]
            if op.get("description"):
                details += [op["description"].strip(), ""]
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                details += [f"Request body (`{media}`): {_type(content.get('schema', {}))}", ""]
            params = op.get("parameters", [])
            if params:
                details += ["| parameter | in | type | required |", "|---|---|---|---|"]
                details += [f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | {'yes' if p.get('required') else 'no'} |" for p in params]
                details.append("")
            details += ["| status | meaning | body |", "|---|---|---|"]
            for status, response in sorted(op.get("responses", {}).items()):
                media = ", ".join(
                    f"`{m}` {_type(c['schema'])}" if "schema" in c else f"`{m}`" for m, c in response.get("content", {}).items()
                )
                details.append(f"| {status} | {_cell(response.get('description', ''))} | {media} |")
            details.append("")
    lines += ["", *details, "## Schemas", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [_cell(schema["description"]), ""]
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            lines += ["| field | type | required | meaning |", "|---|---|---|---|"]
            for field, prop in properties.items():
                lines.append(
                    f"| `{field}` | {_type(prop)} | {'yes' if field in required else 'no'} | {_cell(prop.get('description', ''))} |"
                )
            lines.append("")
        elif "enum" in schema:
            lines += [f"One of {_type(schema)}.", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- configuration
def config_page() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from the settings registry (`citedocs.config.SETTINGS`) when the docs are built.",
        "",
        "A setting comes from its environment variable if set, else from the TOML config file, else its "
        "default. The file is `CITEDOCS_CONFIG`, or `<CITEDOCS_HOME>/config.toml` when it exists; its keys "
        "are the names below, at the top level:",
        "",
        "```toml",
        '--8<-- "docs_src/config/auth.toml"',
        "```",
        "",
        "An unknown key or a bad value is an error naming the file (or variable), the setting and what it "
        "accepts.",
        "",
        "| file key | environment variable | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, spec in config.SETTINGS.items():
        default = "" if spec.default in (None, ()) else f"`{spec.default}`".replace(str(Path.home()), "~")
        lines.append(f"| `{name}` | `{spec.env}` | {default} | {_cell(spec.help)} |")
    lines += ["", "Read from the environment only:", "", "| variable | meaning |", "|---|---|"]
    lines += [f"| `{env}` | {_cell(meaning)} |" for env, meaning in config.ENV_ONLY.items()]
    return "\n".join(lines) + "\n"


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/http-api.md": http_page,
    "reference/configuration.md": config_page,
}


def main() -> None:
    import mkdocs_gen_files

    for path, render in PAGES.items():
        with mkdocs_gen_files.open(path, "w") as page:
            page.write(render())
        mkdocs_gen_files.set_edit_path(path, Path("docs/gen_ref.py"))


if __name__ == "__main__":  # python docs/gen_ref.py reference/cli.md
    print(PAGES[sys.argv[1]]())
else:
    main()
