"""The docs cannot drift from the code: every example they show is a real file or a checked block.

The pages (docs/**/*.md and README.md) show config snippets, command lines, HTTP calls and programs.
Programs and snippets live under docs_src/ and are included into the pages (pymdownx.snippets), as
FastAPI keeps its docs examples; these tests parse every TOML snippet against the settings
registry, resolve every `citedocs ...` line against the typer app and every `curl` call against the
server's routes, and run every Python example against a real `citedocs serve`. The reference pages
(CLI, HTTP API, configuration) are generated from the code at build time (docs/gen_ref.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
from markdown_it import MarkdownIt

from citedocs import config
from citedocs.api.app import create_app
from citedocs.cli import app as cli_app
from citedocs.ingest.admission import load_policy

from conftest import ROOT, SMALL_CORPUS

DOCS = ROOT / "docs"
DOCS_SRC = ROOT / "docs_src"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')
SHELL = {"sh", "bash", "shell", "console"}
SEGMENT_END = {"|", "||", "&&", ";", ">", ">>", "<", "&"}
# variables the test suite and CI read (not user settings, but named where the docs explain CI)
TEST_ONLY_VARIABLES = {"CITEDOCS_TEST_REQUIRE_LLM", "CITEDOCS_TEST_REQUIRE_MPNET", "CITEDOCS_TEST_POSTGRES_URL", "CITEDOCS_TEST_INDEX_DIR"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    source: Path | None  # the docs_src file it includes, if it is an include

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}" + (f" ({self.source.relative_to(ROOT)})" if self.source else "")


def blocks() -> list[Block]:
    """Every fenced code block of every page, with its snippet include resolved."""
    found = []
    for page in PAGES:
        for token in MarkdownIt().parse(page.read_text(encoding="utf-8")):
            if token.type != "fence":
                continue
            lang = token.info.split()[0] if token.info.strip() else ""
            text, source = token.content, None
            include = INCLUDE.match(text.strip())
            if include:
                source = ROOT / include.group(1)
                assert source.is_file(), f"{page}:{token.map[0] + 1} includes {include.group(1)}, which does not exist"
                text = source.read_text(encoding="utf-8")
            found.append(Block(page, token.map[0] + 1, lang, text, source))
    return found


BLOCKS = blocks()


def of(*langs: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang in langs]


# ------------------------------------------------------------------------------- config snippets
def test_every_config_snippet_parses_and_names_real_settings_with_valid_values():
    snippets = [b for b in of("toml") if not (b.source and b.source.parent.name == "admission")]
    assert snippets, "the docs show no config snippet"
    for block in snippets:
        values = tomllib.loads(block.text)
        unknown = set(values) - set(config.SETTINGS)
        assert not unknown, f"{block}: {sorted(unknown)} are not settings (config.SETTINGS)"
        for name, value in values.items():
            config.SETTINGS[name].parse(value)  # raises on a value the setting refuses


def test_the_admission_policy_example_loads_with_its_approvals_file():
    policies = [b for b in of("toml") if b.source and b.source.name == "policy.toml"]
    assert policies, "the admission how-to shows no policy"
    policy = load_policy(DOCS_SRC / "admission" / "policy.toml")
    assert policy.require_approval and policy.approvals and policy.exclude == ("reference/errors/*",)
    approvals = load_policy(DOCS_SRC / "admission" / "withheld-approvals.toml")  # the security model's example
    assert approvals.approved_sentences and approvals.allowed_hosts and approvals.security_advice_pages


# ---------------------------------------------------------------------------------- command lines
def shell_commands() -> list[tuple[Block, list[str]]]:
    """Each command of each shell block, as tokens: continuation lines joined, comments and
    prompts dropped, cut at pipes, `&&`, `;` and redirections."""
    commands = []
    for block in of(*SHELL):
        text = re.sub(r"\\\n", " ", block.text)
        for line in text.splitlines():
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#"):
                continue
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split, lexer.commenters = True, "#"
            segment: list[str] = []
            for token in [*lexer, ";"]:
                if token in SEGMENT_END:
                    if segment:
                        commands.append((block, segment))
                    segment = []
                else:
                    segment.append(token)
    return commands


def program(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(the environment assignments, the command) of one command line."""
    env = []
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
        env, tokens = [*env, tokens[0]], tokens[1:]
    while tokens and tokens[0] in ("nice", "timeout", "-n") or (tokens and tokens[0].isdigit()):
        tokens = tokens[1:]
    return env, tokens


def resolve(args: list[str]):
    """The click command an argument list reaches, and the rest of the arguments."""
    command = typer.main.get_command(cli_app)
    while hasattr(command, "commands"):
        name = next((a for a in args if not a.startswith("-")), None)
        assert name in command.commands, f"no command {name!r}; the commands are {sorted(command.commands)}"
        args = args[args.index(name) + 1 :]
        command = command.commands[name]
    return command, args


def test_every_citedocs_command_line_in_the_docs_is_a_real_command_with_real_options():
    checked = 0
    for block, tokens in shell_commands():
        _, tokens = program(tokens)
        if not tokens or not (tokens[0] == "citedocs" or tokens[0].endswith("/bin/citedocs")):
            continue
        try:
            command, args = resolve(tokens[1:])
        except AssertionError as exc:
            pytest.fail(f"{block}: `{' '.join(tokens)}`: {exc}")
        options = {"--help"} | {o for p in command.params for o in [*p.opts, *p.secondary_opts] if o.startswith("-")}
        for arg in args:
            if arg.startswith("-") and arg != "-":
                assert arg.split("=")[0] in options, f"{block}: `{' '.join(tokens)}`: {arg} is not an option of {command.name} ({sorted(options)})"
        checked += 1
    assert checked >= 30, f"only {checked} citedocs command lines found in the docs"


def test_every_script_the_docs_run_exists_and_takes_the_options_shown():
    checked = 0
    for block, tokens in shell_commands():
        _, tokens = program(tokens)
        if len(tokens) < 2 or tokens[0] != "python" or not tokens[1].endswith(".py"):
            continue
        script = ROOT / tokens[1]
        assert script.is_file(), f"{block}: `{' '.join(tokens)}`: {tokens[1]} does not exist"
        source = script.read_text(encoding="utf-8")
        args = tokens[2:]
        if args[:1] == ["--run"] and '["--run"]' in source:  # section_fusion.py --run VARIANT <citedocs command>
            command, rest = resolve(args[2:])
            options = {o for p in command.params for o in p.opts}
            assert all(a in options for a in rest if a.startswith("--")), f"{block}: {' '.join(args[2:])}"
            args = []
        for arg in args:
            if arg.startswith("--"):
                assert f'"{arg.split("=")[0]}"' in source, f"{block}: {tokens[1]} takes no option {arg}"
        checked += 1
    assert checked >= 20, f"only {checked} script command lines found in the docs"


def test_every_make_target_the_docs_name_exists():
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {(str(b), t[1]) for b, tokens in shell_commands() for t in [program(tokens)[1]] if len(t) > 1 and t[0] == "make"}
    assert named, "the docs name no make target"
    for where, target in named:
        assert target in targets, f"{where}: `make {target}` is not a Makefile target ({sorted(targets)})"


def test_every_citedocs_variable_the_docs_name_is_a_setting_or_a_documented_env_only_variable():
    known = {s.env for s in config.SETTINGS.values()} | set(config.ENV_ONLY) | TEST_ONLY_VARIABLES
    for page in [*PAGES, *DOCS_SRC.rglob("*.*")]:
        for name in set(re.findall(r"\bCITEDOCS_[A-Z0-9_]*[A-Z0-9]", page.read_text(encoding="utf-8"))):
            assert name in known, f"{page.relative_to(ROOT)} names {name}, which citedocs does not read"


def test_every_http_call_in_the_docs_is_a_route_of_the_server():
    app = create_app()
    served = {path: {m.upper() for m in ops} for path, ops in app.openapi()["paths"].items()}  # /v1/* included
    for route in app.routes:  # routes outside the schema: /metrics, /widget.js, /mcp, /static/...
        if hasattr(route, "path"):
            methods = getattr(route, "methods", None) or {"GET", "POST", "DELETE"}
            served.setdefault(route.path + ("/.+" if hasattr(route, "routes") else ""), set()).update(methods)
    routes = {re.sub(r"\{[^}]+\}", "[^/]+", path): methods for path, methods in served.items()}
    calls = 0
    for block, tokens in shell_commands():
        _, tokens = program(tokens)
        if not tokens or tokens[0] != "curl":
            continue
        url = next(t for t in tokens if re.match(r"(https?://)?(localhost|127\.0\.0\.1):\d+/", t))
        path = "/" + url.split("://")[-1].split("/", 1)[1].split("?")[0]
        method = tokens[tokens.index("-X") + 1] if "-X" in tokens else ("POST" if "-d" in tokens else "GET")
        allowed = {m for pattern, methods in routes.items() if re.fullmatch(pattern, path) for m in methods}
        assert allowed, f"{block}: {path} is not a route of citedocs serve"
        assert method in allowed | {"OPTIONS"}, f"{block}: {method} {path} is not served ({sorted(allowed)})"
        calls += 1
    assert calls >= 5, f"only {calls} curl calls found in the docs"


# ----------------------------------------------------------------------------- other snippets
def test_the_widget_tag_uses_only_attributes_the_widget_reads():
    widget = (ROOT / "src" / "citedocs" / "ui" / "static" / "widget.js").read_text()
    for block in of("html"):
        for attribute in re.findall(r"\b(data-[a-z-]+)=", block.text):
            assert attribute in widget, f"{block}: widget.js does not read {attribute}"


def test_the_mcp_client_config_starts_the_real_mcp_command():
    configs = [b for b in of("json") if b.source and b.source.parent.name == "mcp"]
    assert configs
    for block in configs:
        server = json.loads(block.text)["mcpServers"]["citedocs"]
        assert server["command"].endswith("/bin/citedocs")
        command, _ = resolve(server["args"])
        assert command.name == "mcp"
        assert set(server["env"]) <= {s.env for s in config.SETTINGS.values()} | set(config.ENV_ONLY)


def test_every_python_block_is_an_example_file_the_tests_run():
    for block in of("python", "py"):
        assert block.source and block.source.parent == DOCS_SRC / "python", f"{block}: show Python from docs_src/python/ so it is run"


def test_every_example_file_is_shown_on_some_page():
    shown = {b.source for b in BLOCKS if b.source}
    for path in DOCS_SRC.rglob("*.*"):
        if path.name != "approved.toml":  # the policy's approvals file: loaded with it, not shown
            assert path in shown, f"{path.relative_to(ROOT)} is not included in any page"


# ------------------------------------------------------------------------- programs, for real
EXPECTED = {
    "ask.py": ["https://docs.astro.build/en/guides/deploy/heroku/", "True ", "final: False"],
    "openai_chat.py": [f"['{SMALL_CORPUS}']", "static.json", "False ['guides/deploy/heroku#"],
    "mcp_client.py": ["['search_docs', 'ask_docs']", "https://docs.astro.build/en/guides/deploy/heroku/", "True "],
    "sign_webhook.py": ["202 {", "'status': 'queued'"],  # a correct signature queues a sync job
}


@pytest.fixture(scope="module")
def webhook_secret(small_home: Path) -> str:
    """The small corpus's webhook secret, made the way the docs say (`citedocs sources webhook-secret`)."""
    made = subprocess.run(
        [sys.executable, "-m", "citedocs.cli", "sources", "webhook-secret", SMALL_CORPUS],
        env={**os.environ, "CITEDOCS_HOME": str(small_home), "CITEDOCS_DATABASE_URL": ""},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_python_examples_run_against_a_real_server(name, integration_server, webhook_secret):
    example = DOCS_SRC / "python" / name
    result = subprocess.run(
        [sys.executable, str(example), integration_server.base, SMALL_CORPUS],
        env={**os.environ, "WEBHOOK_SECRET": webhook_secret}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for expected in EXPECTED[name]:
        assert expected in result.stdout, f"{name} printed:\n{result.stdout}"


def test_every_example_file_has_an_expected_output():
    assert {p.name for p in (DOCS_SRC / "python").glob("*.py")} == set(EXPECTED)


# ------------------------------------------------------------------------------------- README
def test_the_readme_is_a_five_minute_read_whose_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert not re.search(r"#\d+\b|\bissue\b", readme, re.I), "the README names an issue"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"
