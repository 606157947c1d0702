"""The corpus's inventory: every external host, package index and risky executable step its docs name.

A list of patterns can always be varied around; a list of what the docs point readers at cannot.
At each ingest every page is inventoried (page, line, and the git commit when the docs folder is in
a git work tree): the hosts of its URLs, and the steps ``commands.py`` finds (fetch-and-run,
decode-and-run, secrets sent to the network, a package index). The corpus's own host and the
hosts the operator approved are trusted; a look-alike of one (confusable letters, punycode) is a
different host. Risky steps from a host nobody approved are withheld by the screen (planted.py)
until an admin approves the host (``citedocs inventory approve``, ``POST /admin/inventory/...``);
a sync whose docs add a host or a risky step the live version did not have is held, and the live
version keeps serving, until an admin approves what is new.

Stored per corpus under ``<home>/inventory/``: ``<corpus>.json`` (the live version's entries),
``<corpus>.approved.json`` (approved hosts, who and when), ``<corpus>.pending.json`` (what a held
sync would add). Writes are atomic (a temporary file renamed) under a lock, so two admins
approving at once both count.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from .. import config
from . import commands
from .document import ParsedPage
from .planted import Screen, _analyze, _code_lines, _lookalike_hosts, _unit_runs, command_candidates, perceived

_SHA256 = re.compile(r"[0-9a-f]{64}")
_LOCAL = ("localhost", "127.0.0.1", "0.0.0.0", "::1", "example.com", "example.org", "example.net")


@dataclass(frozen=True)
class Entry:
    kind: str  # "host", or a risky step's kind
    value: str  # the host (a decode-and-run step: "inline payload")
    path: str
    line: int  # 1-based line in the source file (0: not found in the source as written)
    commit: str | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.value}"


def _external(host: str) -> bool:
    return bool(host) and host not in _LOCAL and not host.endswith((".local", ".localhost", ".test", ".invalid", ".example"))


def page_entries(page: ParsedPage, source: str, commit: str | None = None) -> list[Entry]:
    """What one page names: its hosts and its risky steps, each at the first line that holds it."""
    lines = source.splitlines()

    def line_of(needle: str) -> int:
        needle = needle.strip().splitlines()[0][:60] if needle.strip() else ""
        return next((n for n, line in enumerate(lines, 1) if needle and needle in line), 0)

    found: dict[str, Entry] = {}

    def add(kind: str, value: str, where: str) -> None:
        key = f"{kind}:{value}"
        if key not in found:
            found[key] = Entry(kind, value, page.doc_path, line_of(where), commit)

    for section in page.sections:
        for block in section.blocks:
            for prose, code in _unit_runs(block.text):
                pieces = [(unit, command_candidates(perceived(unit, fold_case=False))) for unit in prose]
                if code is not None:
                    body, units = _code_lines(code)
                    pieces.append((units[0][0] if units else body, [perceived(body, fold_case=False)]))
                for where, candidates in pieces:
                    for host in [*commands.hosts_in(where), *_lookalike_hosts(where)]:
                        if _external(host):
                            add("host", host, host)
                    for candidate in candidates:
                        for step in _analyze(candidate).steps + commands.link_downloads(_analyze(candidate)):
                            for host in step.hosts or ("inline payload" if step.kind == "decode_and_run" else "an unknown host",):
                                add(step.kind, host, where)
    return list(found.values())


def git_commit(folder: Path) -> str | None:
    """The commit checked out where ``folder`` lies in a git work tree, else None."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# storage -----------------------------------------------------------------------------------------
def _folder() -> Path:
    return config.home() / "inventory"


def _file(corpus: str, kind: str = "") -> Path:
    return _folder() / f"{corpus}{'.' + kind if kind else ''}.json"


@contextmanager
def _locked(corpus: str) -> Iterator[None]:
    _folder().mkdir(parents=True, exist_ok=True)
    with open(_folder() / f"{corpus}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(path: Path, default):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def _write(path: Path, body) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def entries(corpus: str) -> list[Entry]:
    """The live version's inventory."""
    return [Entry(**e) for e in _read(_file(corpus), {"entries": []})["entries"]]


def save(corpus: str, kept_paths: Iterable[str], fresh: list[Entry], withheld: list[dict]) -> None:
    """After an ingest: the entries of unchanged pages (``kept_paths``) stay, re-read pages' are
    replaced by ``fresh``, and the withheld sentences are recorded (what answers say awaits review)."""
    kept = set(kept_paths)
    with _locked(corpus):
        old = _read(_file(corpus), {"entries": [], "withheld": []})
        merged = [e for e in old["entries"] if e["path"] in kept] + [asdict(e) for e in fresh]
        held = [w for w in old.get("withheld", []) if w["path"] in kept] + withheld
        _write(_file(corpus), {"entries": merged, "withheld": held})


def withheld(corpus: str) -> list[dict]:
    """Sentences withheld from the live version: path, title, reason, sentence."""
    return _read(_file(corpus), {"withheld": []}).get("withheld", [])


def approved_hosts(corpus: str) -> dict[str, dict]:
    """Hosts (and withheld sentences, by sha256) an admin approved for the corpus: -> {by, at}."""
    return _read(_file(corpus, "approved"), {})


def approve(corpus: str, hosts: list[str], by: str) -> list[str]:
    """Approve hosts or withheld sentences by sha256 (under the lock: two admins approving at once both count); those newly approved.
    A host a later sync removes stays approved, harmlessly: it names nothing then."""
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with _locked(corpus):
        table = approved_hosts(corpus)
        new = [h for h in dict.fromkeys(h.strip().lower().rstrip(".") for h in hosts) if h and h not in table]
        table.update({h: {"by": by, "at": at} for h in new})
        _write(_file(corpus, "approved"), table)
        pending = _read(_file(corpus, "pending"), None)
        if pending is not None:
            pending["entries"] = [e for e in pending["entries"] if e["value"] not in table]
            _write(_file(corpus, "pending"), pending)
    return new


def pending(corpus: str) -> list[Entry]:
    """What a held sync would add that nobody approved yet."""
    return [Entry(**e) for e in (_read(_file(corpus, "pending"), None) or {"entries": []})["entries"]]


def hold(corpus: str, new: list[Entry], job_id: str) -> None:
    with _locked(corpus):
        _write(_file(corpus, "pending"), {"job": job_id, "entries": [asdict(e) for e in new]})


def clear_pending(corpus: str) -> None:
    _file(corpus, "pending").unlink(missing_ok=True)


def trusted(entry: Entry, screen: Screen) -> bool:
    return entry.kind != "decode_and_run" and screen.host_trusted(entry.value)


def new_since_live(corpus: str, candidate: list[Entry], screen: Screen) -> list[Entry]:
    """Entries of a candidate version the live one does not have, from hosts nobody vouches for."""
    if not _file(corpus).is_file():  # no inventory yet (indexed before there was one): this one is the baseline
        return []
    live = {e.key for e in entries(corpus)}
    return [e for e in candidate if e.key not in live and not trusted(e, screen)]


def listing(corpus: str, screen: Screen, offset: int = 0, limit: int = 100, kind: str | None = None) -> dict:
    """One page of the inventory, with each entry's status (trusted, or awaiting approval)."""
    rows = sorted(entries(corpus), key=lambda e: (e.kind != "host", e.kind, e.value, e.path, e.line))
    if kind:
        rows = [e for e in rows if e.kind == kind]
    approved = approved_hosts(corpus)
    page = [
        asdict(e) | {"status": "approved" if e.value in approved else "trusted" if trusted(e, screen) else "awaiting approval"}
        for e in rows[offset : offset + limit]
    ]
    return {"total": len(rows), "offset": offset, "limit": limit, "entries": page}


def screen_for(corpus: str, base_url: str, policy) -> Screen:
    """The screen ingest uses for ``corpus``: its own host, the policy's and the approved hosts, and
    the sentences approved in the policy or here."""
    hosts, sentences = approvals(corpus)
    return Screen.for_corpus(base_url, policy.allowed_hosts + hosts, policy.approved_sentences | sentences, policy.security_advice_pages)


def approvals(corpus: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """(approved hosts, approved withheld sentences by sha256)."""
    table = approved_hosts(corpus)
    return tuple(k for k in table if not _SHA256.fullmatch(k)), frozenset(k for k in table if _SHA256.fullmatch(k))


def scan_folder(folder: Path, docs_format: str | None, base_url: str, remembered: tuple[str, str] | None) -> list[Entry]:
    """The inventory a folder of docs would have, read as ingest would read it (nothing stored)."""
    from .detect import plan_ingest

    plan = plan_ingest(folder, docs_format, base_url, remembered, base_url)
    commit = git_commit(plan.docs_dir)
    found = []
    for page in plan.pages():
        source_file = plan.docs_dir / page.doc_path
        source = source_file.read_text(encoding="utf-8", errors="replace") if source_file.is_file() else ""
        found += page_entries(page, source, commit)
    return found


def awaiting_review(corpus: str, question: str, cited_urls: tuple[str, ...] | None = None, introduces: bool = False) -> str | None:
    """The page whose withheld passage a question needs, or None: the withheld sentence (with its
    page title) shares at least two of the question's content words and half of them. For an answer
    (``cited_urls``), a passage withheld from a cited page counts when the answer quotes what
    introduced it (``introduces``: a sentence ending in a colon, in a cited section) or when the
    question names the section it was withheld from (every word of its anchor) and the answer cites
    another: the answer then quotes what was left around it. What the answer says instead of
    quoting a weaker sentence."""
    from ..text import content_terms

    asked = content_terms(question)
    if len(asked) < 2:
        return None
    cited_pages = {url.split("#", 1)[0] for url in cited_urls or ()}
    best, score = None, 0
    for row in _withheld_cached(corpus):
        url = row.get("url") or ""
        if cited_urls is not None:
            page, _, anchor = url.partition("#")
            in_cited_section = introduces and url in cited_urls
            named = content_terms(anchor.replace("-", " "))
            section_asked = url not in cited_urls and page in cited_pages and bool(named) and named <= asked
            if not (in_cited_section or section_asked):
                continue
        shared = len(asked & content_terms(f"{row['title']} {row['sentence']}"))
        if shared > score:
            best, score = row, shared
    if best is None or score < max(2, (len(asked) + 1) // 2):
        return None
    return f"{best['title']} ({best['path']})" if best["title"] else best["path"]


_CACHE: dict[str, tuple[float, list[dict]]] = {}


def _withheld_cached(corpus: str) -> list[dict]:
    """``withheld(corpus)``, read again only when its file changed (every refused question asks)."""
    try:
        mtime = _file(corpus).stat().st_mtime
    except FileNotFoundError:
        return []
    cached = _CACHE.get(corpus)
    if cached is None or cached[0] != mtime:
        cached = _CACHE[corpus] = (mtime, withheld(corpus))
    return cached[1]
