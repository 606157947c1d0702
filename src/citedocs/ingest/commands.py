"""What a command in the docs does, read by a parser rather than matched against patterns.

A reader who copies a command runs it; what matters is what it does, however it is spelled. Shell
code is parsed with tree-sitter's bash grammar (it recovers from the fragments docs are full of),
PowerShell with tree-sitter's PowerShell grammar, Python with Python's own ``ast``. From the syntax
tree, not the spelling, we find the steps that run code or send secrets:

- ``fetch_and_run``: fetched content reaches an interpreter (a pipeline into any shell or language
  runtime, named by path, through ``sudo``/``env``/``xargs``/``nohup``; ``bash <(curl ..)``;
  ``sh -c "$(curl ..)"``; ``eval "$(curl ..)"``; ``iex (iwr ..)``; ``exec(urlopen(..).read())``),
  including a URL held in a variable, and a download whose file a later step runs;
- ``decode_and_run``: an encoded payload decoded into an interpreter (``base64 -d | sh``,
  ``powershell -EncodedCommand``, ``exec(b64decode(..))``);
- ``sends_secrets``: environment dumps or credential files (``env``, ``~/.ssh``, ``.env``,
  ``~/.aws``...) sent to the network (``curl -d @file``, ``nc``, ``scp``, a pipeline into a socket);
- ``package_index``: a package index other than the registry's own (``pip --index-url``,
  ``npm --registry``...).

``hosts_in`` gives the hosts of the URLs in any text (the corpus's inventory lists them).
"""

from __future__ import annotations

import ast
import posixpath
import re
import warnings
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import urlsplit

from tree_sitter import Language, Node, Parser



@dataclass(frozen=True)
class Step:
    """One risky step: what it does, the hosts it involves, and the rows (0-based lines of the code
    given to ``analyze``) it is written on, assignments that fed it included."""

    kind: str
    hosts: tuple[str, ...]
    rows: frozenset[int]


@dataclass
class Analysis:
    steps: list[Step] = field(default_factory=list)
    downloads: list[tuple[str, tuple[str, ...], frozenset[int]]] = field(default_factory=list)  # (file, hosts, rows)
    runs: set[str] = field(default_factory=set)  # file names a step runs

    def extend(self, other: "Analysis", row_offset: int = 0) -> None:
        shift = lambda rows: frozenset(r + row_offset for r in rows)  # noqa: E731
        self.steps += [Step(s.kind, s.hosts, shift(s.rows)) for s in other.steps]
        self.downloads += [(f, h, shift(r)) for f, h, r in other.downloads]
        self.runs |= other.runs


# vocabulary ------------------------------------------------------------------------------------
_INTERPRETER = re.compile(
    r"(?:sh|bash|zsh|dash|ksh|mksh|ash|yash|fish|csh|tcsh|python[0-9.]*w?|py|pypy[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby|php[0-9.]*"
    r"|pwsh|powershell|cmd|lua|rscript|osascript|tclsh|iex|invoke-expression)(?:\.exe)?"
)
_CODE_OPTIONS = {"-c", "-e", "-r", "-m", "--eval", "--command", "-command", "/c", "/k", "-p", "--print"}
_ENCODED_OPTIONS = re.compile(r"-e(?:n(?:c(?:o(?:d(?:e(?:d(?:c(?:o(?:m(?:m(?:a(?:n(?:d)?)?)?)?)?)?)?)?)?)?)?)?)?$")
_WRAPPERS = {"sudo", "doas", "env", "xargs", "nohup", "time", "command", "exec", "nice", "ionice", "timeout", "stdbuf", "su", "runuser", "setsid", "chroot", "busybox"}
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D", "--user", "--group"}, "doas": {"-u", "-C"}, "env": {"-u", "-C"},
    "xargs": {"-n", "-I", "-P", "-L", "-d", "-E", "-s", "-a"}, "nice": {"-n"}, "ionice": {"-c", "-n", "-p"}, "timeout": {"-s", "-k"},
    "runuser": {"-u", "-g"}, "su": {"-s", "-g"},
}  # fmt: skip
_FETCHERS = {"curl", "wget", "fetch", "http", "https", "aria2c", "lwp-download", "lwp-request", "iwr", "irm", "invoke-webrequest", "invoke-restmethod", "wget2", "xh", "curlie"}
_SOCKETS = {"nc", "ncat", "netcat", "socat", "telnet", "scp", "sftp", "rsync", "ftp", "tftp", "ssh"}
_DUMPS = {"env", "printenv", "set", "export", "declare", "compgen", "history"}
_SECRET_PATH = re.compile(
    r"(?:^|[/\\~@=:])(?:\.ssh(?:[/\\]|$)|id_(?:rsa|dsa|ecdsa|ed25519)\b|\.env(?:\.[\w.-]+)?$|\.aws(?:[/\\]|$)|\.npmrc$|\.pypirc$|\.netrc$"
    r"|\.git-credentials$|\.docker[/\\]config\.json$|\.kube(?:[/\\]|$)|kubeconfig$|\.gnupg(?:[/\\]|$)|\.config[/\\]gcloud|\.azure(?:[/\\]|$)"
    r"|/etc/shadow$|\.bash_history$|\.zsh_history$|credentials(?:\.json)?$|\.password-store)",
    re.I,
)
_URL = re.compile(r"\bhttps?://[^\s'\"`<>()\[\]{}|\\^]+", re.I)
_BARE_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]", re.I)
_FILE_SUFFIX = re.compile(r"\.(?:sh|bash|zsh|ps1|psm1|py|js|mjs|cjs|ts|rb|pl|php|exe|bat|cmd|txt|json|ya?ml|toml|zip|gz|tgz|xz|bz2|tar|deb|rpm|msi|pkg|dmg|md|html?|cfg|conf|ini|lock|env|pem|crt|key)$", re.I)
# package managers: the options that name an index, and the public registries that are their own
_INDEX_OPTIONS = {"--index-url", "-i", "--extra-index-url", "--registry", "--index", "--default-index", "--source", "--find-links", "-f", "--trusted-host"}
_PACKAGE_TOOLS = {"pip", "pip3", "uv", "pipx", "poetry", "pdm", "npm", "pnpm", "yarn", "npx", "bun", "gem", "conda", "mamba", "hatch", "rye"}
_INDEX_CONFIG_KEYS = re.compile(r"(?:global\.|install\.)?(?:index-url|extra-index-url|registry|@[\w-]+:registry)$", re.I)
PUBLIC_REGISTRIES = (
    "pypi.org", "files.pythonhosted.org", "pypi.python.org", "registry.npmjs.org", "registry.yarnpkg.com", "rubygems.org",
    "conda.anaconda.org", "repo.anaconda.com",
)  # fmt: skip


def hosts_in(text: str) -> list[str]:
    """Hosts of the http(s) URLs in ``text``, lower-cased, as written (never folded)."""
    hosts = []
    for url in _URL.findall(text):
        host = url_host(url)
        if host:
            hosts.append(host)
    return hosts


def url_host(url: str) -> str | None:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.lower().rstrip(".") if host and "." in host else None


def _target_host(word: str) -> str | None:
    """The host a fetch argument names: a URL's, or a bare ``host.tld/path`` (not a file name)."""
    if "://" in word:
        return url_host(word) if word.lower().startswith(("http://", "https://", "ftp://")) else None
    if word.startswith("-"):
        return None
    head = re.split(r"[/:]", word, maxsplit=1)[0]
    if _BARE_HOST.fullmatch(head) and ("/" in word or not _FILE_SUFFIX.search(head)):
        return head.lower()
    return None


def _basename(word: str) -> str:
    return posixpath.basename(word.replace("\\", "/")).lower()


# shell -----------------------------------------------------------------------------------------
@cache
def _parser(grammar: str) -> Parser:
    if grammar == "bash":
        import tree_sitter_bash

        return Parser(Language(tree_sitter_bash.language()))
    import tree_sitter_powershell

    return Parser(Language(tree_sitter_powershell.language()))


@dataclass
class _Flow:
    """What a pipeline's output carries: content fetched from hosts, decoded, or secrets."""

    fetched: tuple[str, ...] = ()
    fetching: bool = False
    decoded: bool = False
    secret: bool = False
    rows: frozenset[int] = frozenset()


@dataclass
class _Word:
    text: str
    node: Node


class _Shell:
    """One walk over a bash syntax tree, in document order (variables are known where used)."""

    def __init__(self, source: bytes, result: Analysis) -> None:
        self.source = source
        self.result = result
        self.vars: dict[str, tuple[str, frozenset[int]]] = {}
        self.fed: set[int] = set()  # rows of assignments that fed the current command

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def word(self, node: Node) -> str:
        """A word's value: quotes removed, variables known so far substituted."""
        kind = node.type
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind in ("simple_expansion", "expansion"):
            name = next((self.text(c) for c in node.children if c.type == "variable_name"), "")
            if name in self.vars:
                value, rows = self.vars[name]
                self.fed |= rows
                return value
            return self.text(node)
        if kind in ("string", "concatenation", "translated_string"):
            return "".join(
                self.word(c) for c in node.children if c.type not in ('"',) and not (kind == "string" and c.type == "$")
            )
        if kind == "ansi_c_string":
            return self.text(node)[2:-1]
        return self.text(node)

    def walk(self, node: Node) -> None:
        kind = node.type
        if kind == "variable_assignment":
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None:
                self.fed = set()
                text = self.word(value) if value is not None else ""
                rows = frozenset({node.start_point[0], *self.fed})
                self.vars[self.text(name)] = (text, rows)
                if value is not None and value.type in ("command_substitution", "string") and self._substitution_flow(value).fetched:
                    self.vars[self.text(name)] = ("$(fetched)", rows)
            self._children(node)
            return
        if kind in ("pipeline", "command", "redirected_statement"):
            flow = self.pipeline(node)
            del flow
            return
        self._children(node)

    def _children(self, node: Node) -> None:
        for child in node.children:
            self.walk(child)

    def _stages(self, node: Node) -> list[tuple[Node, list[Node]]]:
        """A pipeline's commands, each with its redirects."""
        if node.type == "pipeline":
            return [stage for child in node.children if child.type not in ("|", "|&") for stage in self._stages(child)]
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = [c for c in node.children if c is not body and c.type.endswith("redirect")]
            inner = self._stages(body) if body is not None else []
            if inner:
                inner[-1] = (inner[-1][0], inner[-1][1] + redirects)
                return inner
            return [(node, redirects)]
        return [(node, [])]

    def pipeline(self, node: Node) -> _Flow:
        """Analyse a pipeline (a lone command is one) and what its output carries."""
        flow = _Flow()
        for stage, redirects in self._stages(node):
            if stage.type != "command":
                self._children(stage)  # a subshell, a compound statement, a function: their own commands
                flow = _Flow()
                continue
            flow = self.command(stage, redirects, flow)
        return flow

    def _substitution_flow(self, node: Node) -> _Flow:
        """What the output of the command or process substitutions inside ``node`` carries."""
        flow = _Flow()
        for sub in _descendants(node, ("command_substitution", "process_substitution")):
            for child in sub.children:
                if child.type in ("pipeline", "command", "redirected_statement", "list"):
                    inner = self.pipeline(child) if child.type != "list" else self._list_flow(child)
                    flow = _merge(flow, inner)
        return flow

    def _list_flow(self, node: Node) -> _Flow:
        flow = _Flow()
        for child in node.children:
            if child.type in ("pipeline", "command", "redirected_statement"):
                flow = _merge(flow, self.pipeline(child))
            elif child.type == "list":
                flow = _merge(flow, self._list_flow(child))
        return flow

    def command(self, node: Node, redirects: list[Node], incoming: _Flow) -> _Flow:
        self.fed = set()
        row = node.start_point[0]
        rows = frozenset({*range(node.start_point[0], node.end_point[0] + 1)})
        name_node = node.child_by_field_name("name")
        redirects = redirects + [c for c in node.children if c.type in ("herestring_redirect", "file_redirect")]
        words = [_Word(self.word(c), c) for c in node.children if c.type not in ("variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect", "comment")]
        for child in node.children:
            if child.type == "variable_assignment":  # FOO=bar cmd: the value is known to cmd
                self.walk(child)
        if name_node is None or not words:
            return _Flow()
        # substitutions whose output becomes code: as the command name, or as eval's, source's or
        # an interpreter's script or code argument
        argv = [w.text for w in words]
        via_xargs = False
        while argv and _basename(argv[0]) in _WRAPPERS and not (_basename(argv[0]) in _DUMPS and len(argv) == 1):
            wrapper = _basename(argv[0])
            via_xargs |= wrapper == "xargs"
            i = 1
            if wrapper in ("timeout",):
                while i < len(argv) and argv[i].startswith("-"):
                    i += 1
                i += 1
            while i < len(argv) and (argv[i].startswith("-") or (wrapper == "env" and "=" in argv[i])):
                i += 2 if argv[i] in _WRAPPER_VALUE_OPTIONS.get(wrapper, ()) else 1
            argv, words = argv[i:], words[i:]
        if not argv:
            return _Flow()
        name = _basename(argv[0])
        args = argv[1:]
        fed = frozenset(self.fed) | rows
        # 1. the command itself produced by a substitution: "$(curl ..)"
        if words[0].node.type in ("command_substitution", "string", "concatenation") and _descendants(words[0].node, ("command_substitution",)):
            self._runs_output(self._substitution_flow(words[0].node), fed)
        if name in _PACKAGE_TOOLS or (name.startswith("python") and "pip" in args[:2]):
            self._package_index(args, fed)
        # 2. eval / source / . / an interpreter
        if name in ("eval", "source", ".") or _INTERPRETER.fullmatch(name):
            self._interpreter(name, words[1:], args, redirects, incoming, fed, via_xargs)
            return _Flow()
        # 3. fetchers, decoders, secret readers, sockets, package managers
        for w in words[1:]:
            if _descendants(w.node, ("command_substitution", "process_substitution")):
                inner = self._substitution_flow(w.node)
                if inner.secret and (name in _FETCHERS or name in _SOCKETS):
                    self._step("sends_secrets", self._targets(name, args), fed | inner.rows)
        if "/" in argv[0] or "\\" in argv[0]:  # ./install.sh, /tmp/g.sh: runs that file
            self.result.runs.add(name)
        if name in _FETCHERS:
            return self._fetch(name, args, redirects, incoming, fed)
        if name in _SOCKETS:
            stdin_secret = incoming.secret or any(_SECRET_PATH.search(self._redirect_target(r)) for r in redirects if self._is_input(r))
            sent = [a for a in args if _SECRET_PATH.search(a)]
            if stdin_secret or (sent and name in ("scp", "rsync", "sftp")):
                self._step("sends_secrets", self._socket_hosts(name, args), fed | incoming.rows)
            return _Flow()
        out = _Flow(incoming.fetched, incoming.fetching, incoming.decoded, incoming.secret, incoming.rows)
        if name in ("base64", "base32", "basenc", "openssl", "uudecode", "xxd", "gpg") and any(
            a in ("-d", "--decode", "-D", "-r", "-revert", "--dearmor") or (a.startswith("-") and not a.startswith("--") and "d" in a) for a in args
        ):
            out.decoded, out.rows = True, out.rows | fed
        if name in _DUMPS and not args:
            out.secret, out.rows = True, out.rows | fed
        if any(_SECRET_PATH.search(a) for a in args) or any(
            _SECRET_PATH.search(self._redirect_target(r)) for r in redirects if self._is_input(r)
        ):
            out.secret, out.rows = True, out.rows | fed
        if name == "tee" and incoming.fetched:
            for a in args:
                if not a.startswith("-"):
                    self.result.downloads.append((_basename(a), incoming.fetched, incoming.rows | fed))
        for r in redirects:  # a socket as a file: > /dev/tcp/host/port
            target = self._redirect_target(r)
            if target.startswith(("/dev/tcp/", "/dev/udp/")) and (out.secret or incoming.secret):
                self._step("sends_secrets", (target.split("/")[3].lower(),), fed | out.rows)
            elif not self._is_input(r) and incoming.fetched and target:
                self.result.downloads.append((_basename(target), incoming.fetched, incoming.rows | fed))
        return out

    # what each kind of command does -------------------------------------------------------------
    def _interpreter(self, name: str, words: list[_Word], args: list[str], redirects: list[Node], incoming: _Flow, fed: frozenset[int], via_xargs: bool) -> None:
        # a script, code string or stdin: which one this interpreter runs
        code_at = next((i for i, a in enumerate(args) if a.lower() in _CODE_OPTIONS or (a.startswith("-") and not a.startswith("--") and a[1:].isalpha() and "c" in a[1:] and name not in ("python", "node"))), None)
        if name in ("pwsh", "powershell", "pwsh.exe", "powershell.exe") and any(_ENCODED_OPTIONS.match(a.lower()) and len(a) > 2 for a in args):
            self._step("decode_and_run", (), fed)
            return
        for w in words:  # bash <(curl ..), source <(curl ..), sh -c "$(curl ..)", eval "$(curl ..)"
            if _descendants(w.node, ("command_substitution", "process_substitution")):
                self._runs_output(self._substitution_flow(w.node), fed)
        for r in redirects:
            if r.type == "herestring_redirect":
                self._runs_output(self._substitution_flow(r), fed)
            elif self._is_input(r):
                self.result.runs.add(_basename(self._redirect_target(r)))
        if name == "eval" or code_at is not None:
            code = " ".join(args) if name == "eval" else (args[code_at + 1] if code_at + 1 < len(args) else "")
            if code_at is not None and args[code_at].lower() == "-m":
                return  # python -m module: a module by name, not stdin
            if not code and via_xargs:
                self._runs_output(incoming, fed)
                return
            nested = analyze(code, "python" if name.startswith(("python", "py")) else "powershell" if name.startswith(("pwsh", "powershell", "iex", "invoke-expression")) else "shell")
            for step in nested.steps:
                self._step(step.kind, step.hosts, fed)
            self.result.runs |= nested.runs
            self.result.downloads += [(f, h, fed) for f, h, _ in nested.downloads]
            return
        script = next((a for a in args if not a.startswith("-") or a == "-"), None)
        if name in ("source", ".") or script not in (None, "-", "/dev/stdin"):
            if script and _target_host(script) and "://" in script:  # deno run https://..., bun https://...
                self._step("fetch_and_run", (url_host(script) or "",), fed)
            elif script:
                self.result.runs.add(_basename(script))
            if "-s" not in args and not via_xargs:
                return
        self._runs_output(incoming, fed)

    def _runs_output(self, flow: _Flow, fed: frozenset[int]) -> None:
        if flow.fetched or flow.fetching:
            self._step("fetch_and_run", flow.fetched, fed | flow.rows)
        elif flow.decoded:
            self._step("decode_and_run", (), fed | flow.rows)

    def _fetch(self, name: str, args: list[str], redirects: list[Node], incoming: _Flow, fed: frozenset[int]) -> _Flow:
        hosts = self._targets(name, args)
        output, remote_name, uploads = _fetch_options(name, args)
        if incoming.secret and any(u in ("-", "@-", "/dev/stdin") for u in uploads):
            self._step("sends_secrets", hosts, fed | incoming.rows)
        if any(_SECRET_PATH.search(u) for u in uploads) or any("@" in a and _SECRET_PATH.search(a.split("@", 1)[1]) for a in args):
            self._step("sends_secrets", hosts, fed)
        redirected = [self._redirect_target(r) for r in redirects if not self._is_input(r)]
        urls = [a for a in args if "://" in a]
        if output and output != "-":
            self.result.downloads.append((_basename(output), hosts, fed))
            return _Flow()
        if remote_name or (name in ("wget", "wget2", "aria2c", "lwp-download") and output is None):
            for url in urls or args[-1:]:
                self.result.downloads.append((_basename(urlsplit(url).path if "://" in url else url), hosts, fed))
            return _Flow()
        if redirected and redirected[0] not in ("/dev/null", "&1", "&2"):
            self.result.downloads.append((_basename(redirected[0]), hosts, fed))
            return _Flow()
        named = bool(hosts) or any("$" in a for a in args)  # a host, or one held in a variable unknown here
        return _Flow(tuple(hosts), named, False, False, fed if named else frozenset())

    def _targets(self, name: str, args: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h for a in args if (h := _target_host(a))))

    def _socket_hosts(self, name: str, args: list[str]) -> tuple[str, ...]:
        hosts = []
        for a in args:
            if a.startswith("-"):
                continue
            head = a.split(":", 1)[0].split("@")[-1] if name in ("scp", "rsync", "sftp", "ssh") else a
            if name in ("scp", "rsync") and ":" not in a:
                continue
            if re.fullmatch(r"[\w.-]+", head) and not head.isdigit() and ("." in head or name in ("nc", "ncat", "netcat", "telnet")):
                hosts.append(head.lower())
        return tuple(dict.fromkeys(hosts)) or ("?",)

    def _package_index(self, args: list[str], fed: frozenset[int]) -> None:
        hosts = []
        for i, a in enumerate(args):
            key, _, value = a.partition("=")
            if key in _INDEX_OPTIONS and key not in ("-f", "--find-links"):
                value = value or (args[i + 1] if i + 1 < len(args) else "")
                hosts.append(url_host(value) or _target_host(value) or value)
            elif _INDEX_CONFIG_KEYS.match(a) and i + 1 < len(args):  # npm config set registry URL, pip config set global.index-url URL
                hosts.append(url_host(args[i + 1]) or args[i + 1])
        hosts = [h for h in hosts if h and h.lower() not in PUBLIC_REGISTRIES]
        if hosts:
            self._step("package_index", tuple(h.lower() for h in hosts), fed)

    def _is_input(self, redirect: Node) -> bool:
        return redirect.type == "file_redirect" and self.text(redirect).lstrip("0123456789").startswith("<")

    def _redirect_target(self, redirect: Node) -> str:
        dest = redirect.child_by_field_name("destination")
        return self.word(dest) if dest is not None else ""

    def _step(self, kind: str, hosts: tuple[str, ...] | list[str], rows: frozenset[int]) -> None:
        self.result.steps.append(Step(kind, tuple(hosts), frozenset(rows)))


def _fetch_options(name: str, args: list[str]) -> tuple[str | None, bool, list[str]]:
    """(output file or None for stdout / "-"; whether it saves under the remote name; upload sources)."""
    output, remote, uploads = None, False, []
    value_short = {"curl": "oduTFHXAeEK", "wget": "OPoaUeH"}.get(name, "o")
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        key, eq, val = a.partition("=")
        if a in ("-O", "--remote-name", "--remote-name-all") and name == "curl":
            remote = True
        elif key in ("-o", "--output") or (key in ("-O", "--output-document") and name != "curl") or key.lower() == "-outfile":
            output = val if eq else nxt
            i += 0 if eq else 1
        elif key in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "-T", "--upload-file", "--post-file", "--body-file", "-infile", "-body"):
            value = val if eq else nxt
            uploads.append(value.split("=", 1)[-1] if key in ("-F", "--form", "--data-urlencode") and "=" in value else value)
            uploads.append(value.lstrip("@"))
            i += 0 if eq else 1
        elif a.startswith("-") and not a.startswith("--") and len(a) > 2 and not a[1:2].isupper() or (a.startswith("-") and len(a) > 2 and name != "curl" and a[1] == "O"):
            # a cluster of short options: -fsSLo FILE, -qO-, -fsSLO
            body = a[1:]
            for j, letter in enumerate(body):
                if letter == "O" and name == "curl":
                    remote = True
                elif letter in value_short:
                    value = body[j + 1 :] or nxt
                    if letter in ("o",) or (letter == "O" and name != "curl"):
                        output = value
                    elif letter in ("d", "T", "F"):
                        uploads.append(value.lstrip("@"))
                    if not body[j + 1 :]:
                        i += 1
                    break
        i += 1
    if output is not None and output.lower().startswith(("-", "/dev/stdout")):
        output = "-"
    return output, remote, uploads


def _merge(a: _Flow, b: _Flow) -> _Flow:
    return _Flow(
        tuple(dict.fromkeys(a.fetched + b.fetched)), a.fetching or b.fetching, a.decoded or b.decoded, a.secret or b.secret, a.rows | b.rows
    )


def _descendants(node: Node, kinds: tuple[str, ...]) -> list[Node]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            found.append(current)
            continue
        stack.extend(current.children)
    return found


def _analyze_shell(code: str) -> Analysis:
    result = Analysis()
    source = code.encode("utf-8")
    tree = _parser("bash").parse(source)
    _Shell(source, result).walk(tree.root_node)
    return result


# PowerShell ------------------------------------------------------------------------------------
_PS_FETCH = re.compile(r"\b(?:iwr|irm|curl|wget|invoke-webrequest|invoke-restmethod|start-bitstransfer)\b|\.download(?:string|data|file)\b|net\.webclient|\bhttpclient\b|\.getstringasync\b", re.I)
_PS_RUN = re.compile(r"""(?:^|[\s|;(&{="'])(?:iex|invoke-expression|invoke-command|icm)\b|\[scriptblock\]::create|\.invoke\(\)|&\s*\(\s*\[scriptblock\]"""
    r"""|\|\s*&?\s*(?:python[0-9.]*|py|bash|sh|node|perl|ruby|pwsh|powershell|cmd)(?:\.exe)?(?:\s+-)?\s*(?:$|[;)|])""", re.I)
_PS_DECODE = re.compile(r"frombase64string|convertfrom-securestring|\bdecompress\b|gzipstream|deflatestream", re.I)
_PS_SECRET = re.compile(r"\benv:|get-childitem\s+env|\bgci\s+env|\bls\s+env:", re.I)
_PS_SEND = re.compile(r"(?:iwr|irm|invoke-webrequest|invoke-restmethod)\b[^|;\n]*-(?:body|infile)\b|\.upload(?:string|file|data)\b|\.sendasync\b|\.postasync\b", re.I)


def _analyze_powershell(code: str) -> Analysis:
    """PowerShell by its grammar: each statement's pipelines and what their elements call."""
    result = Analysis()
    # a line continued with PowerShell's backtick (or a shell's backslash) is one line; rows map back
    rows_of: list[int] = []
    joined: list[str] = []
    for row, line in enumerate(code.split("\n")):
        if joined and re.search(r"[`\\]\s*$", joined[-1]):
            joined[-1] = re.sub(r"[`\\]\s*$", " ", joined[-1]) + line
        else:
            joined.append(line)
            rows_of.append(row)
    total = code.count("\n") + 1

    def covers(j: int) -> range:
        j = min(j, len(rows_of) - 1)
        return range(rows_of[j], rows_of[j + 1] if j + 1 < len(rows_of) else total)

    source = "\n".join(joined).encode("utf-8")
    tree = _parser("powershell").parse(source)
    variables: dict[str, tuple[str, int]] = {}
    text = lambda n: source[n.start_byte : n.end_byte].decode("utf-8", "replace")  # noqa: E731
    for node in _descendants(tree.root_node, ("assignment_expression",)):
        parts = [c for c in node.children if c.is_named]
        if len(parts) >= 2:
            variables[text(parts[0]).strip().lower()] = (text(parts[-1]), node.start_point[0])
    statements = [(text(n), n.start_point[0], n.end_point[0]) for n in _descendants(tree.root_node, ("pipeline",))]
    if tree.root_node.has_error:  # the grammar gave up somewhere: each line is read whole as well
        statements += [(line, row, row) for row, line in enumerate(joined) if line.strip()]
    for body, first, last in statements:
        fed = set(range(first, last + 1))
        resolved = body
        for name, (value, row) in variables.items():
            if name in body.lower():
                resolved += " " + value
                fed.add(row)
        rows = frozenset(r for j in fed for r in covers(j))
        hosts = tuple(dict.fromkeys(hosts_in(resolved))) or tuple(
            dict.fromkeys(h for w in re.findall(r"[^\s'\"()]+", resolved) if (h := _target_host(w)) and not h.startswith("system."))
        )
        runs = _PS_RUN.search(body)
        if runs and _PS_FETCH.search(resolved):
            result.steps.append(Step("fetch_and_run", hosts, rows))
        elif runs and _PS_DECODE.search(resolved):
            result.steps.append(Step("decode_and_run", (), rows))
        if re.search(r"(?:^|\s)-e(?:nc(?:odedcommand)?|c)?\s+[A-Za-z0-9+/=]{16,}", body, re.I) and re.search(r"\b(?:powershell|pwsh)\b", body, re.I):
            result.steps.append(Step("decode_and_run", (), rows))
        if _PS_SEND.search(resolved) and (_PS_SECRET.search(resolved) or any(_SECRET_PATH.search(w) for w in re.findall(r"[^\s'\"()]+", resolved))):
            result.steps.append(Step("sends_secrets", hosts, rows))
        outfile = re.search(r"-outfile\s+['\"]?([^\s'\";)]+)", body, re.I)
        if outfile and _PS_FETCH.search(body):
            result.downloads.append((_basename(outfile.group(1)), hosts, rows))
        for ran in re.findall(r"(?:^|[\s;&|])(?:&\s*)?(?:\.[\\/]|start-process\s+|saps\s+|&\s*)['\"]?([^\s'\";|)]+)", body, re.I):
            result.runs.add(_basename(ran))
    return result


# Python ------------------------------------------------------------------------------------------
_PY_FETCH = {"urlopen", "urlretrieve", "get", "request", "post", "Request", "stream", "fetch", "read", "text", "content", "load_source"}
_PY_DECODE = {"b64decode", "b32decode", "b85decode", "a85decode", "decodebytes", "decompress", "loads", "unhexlify", "fromhex", "decode", "rot13"}
_PY_SEND = {"post", "put", "patch", "request", "urlopen", "sendall", "send", "connect"}


def _analyze_python(code: str) -> Analysis | None:
    """Python by its own grammar; None when ``code`` is not Python."""
    try:
        with warnings.catch_warnings():  # a docs snippet's "\p" is not our warning to give
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    result = Analysis()
    strings: dict[str, tuple[str, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    strings[target.id] = (node.value.value, node.lineno - 1)

    def called(node: ast.AST) -> set[str]:
        names = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                names.add(func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "")
            elif isinstance(sub, ast.Attribute):
                names.add(sub.attr)
        return names

    def literals(node: ast.AST) -> tuple[list[str], set[int]]:
        values, rows = [], {getattr(node, "lineno", 1) - 1}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                values.append(sub.value)
            elif isinstance(sub, ast.Name) and sub.id in strings:
                values.append(strings[sub.id][0])
                rows.add(strings[sub.id][1])
        return values, rows

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        values, rows = literals(node)
        hosts = tuple(dict.fromkeys(h for v in values for h in (hosts_in(v) or ([_target_host(v)] if _target_host(v) else []))))
        frows = frozenset(rows)
        if name in ("exec", "eval", "compile", "run_code", "exec_module"):
            inner = called(node)
            if inner & {"urlopen", "get", "request", "urlretrieve", "stream"} or (inner & {"read", "text", "content"} and hosts):
                result.steps.append(Step("fetch_and_run", hosts, frows))
            elif inner & _PY_DECODE:
                result.steps.append(Step("decode_and_run", (), frows))
        elif name in ("system", "popen", "run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"):
            for value in values:
                nested = _analyze_shell(value)
                result.steps += [Step(s.kind, s.hosts, frows) for s in nested.steps]
                result.downloads += [(f, h, frows) for f, h, _ in nested.downloads]
                result.runs |= nested.runs
        elif name == "urlretrieve" and len(values) >= 2:
            result.downloads.append((_basename(values[1]), hosts, frows))
        if name in _PY_SEND:
            inner = called(node)
            secret = any(_SECRET_PATH.search(v) for v in values) or "environ" in inner or "getenv" in inner
            if secret and hosts and name != "connect" or (secret and name in ("sendall", "send")):
                result.steps.append(Step("sends_secrets", hosts or ("?",), frows))
    return result


# entry point -----------------------------------------------------------------------------------
_POWERSHELL_HINT = re.compile(r"\b(?:iex|iwr|irm|invoke-\w+|new-object|start-process|get-content|get-childitem|\$env:|-outfile|scriptblock|frombase64string)\b|\.[\\]\w", re.I)
_PYTHON_HINT = re.compile(r"\b(?:import|exec|eval|urlopen|requests|subprocess|os\.system)\b")


def analyze(code: str, language: str = "any") -> Analysis:
    """Every risky step in ``code`` (a code block, a line, inline code), by the grammars that fit:
    shell always (the language of almost every command in docs), PowerShell when the code uses its
    commands, Python when it parses as Python and uses what could run code."""
    result = Analysis()
    if not code.strip() or len(code) > 200_000:
        return result
    if language in ("any", "shell"):
        result.extend(_analyze_shell(code))
    if language in ("any", "powershell") and _POWERSHELL_HINT.search(code) or language == "powershell":
        result.extend(_analyze_powershell(code))
    if language in ("any", "python") and _PYTHON_HINT.search(code) or language == "python":
        python = _analyze_python(code)
        if python is not None:
            result.extend(python)
    return result


def link_downloads(analysis: Analysis) -> list[Step]:
    """Downloads whose file a step on the same page runs: a fetch-and-run, written in two steps."""
    return [Step("fetch_and_run", hosts, rows) for name, hosts, rows in analysis.downloads if name and name in analysis.runs]
