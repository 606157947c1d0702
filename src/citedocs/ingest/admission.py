"""The admission registry: which files of a corpus may be evidence, decided outside the documents.

A policy (TOML) names include/exclude globs, frontmatter rules and, optionally, approvals that pin
document paths to the sha256 of their bytes. Every file gets an ``AdmissionDecision``; only admitted
files are parsed and indexed.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from .. import config

DEFAULT_INCLUDE = ("*.md", "*.mdx", "*.markdown", "*.rst", "*.html", "*.htm")  # every reader's sources; the reader picks its own
_POLICY_KEYS = {
    "include", "exclude", "frontmatter", "require_approval", "approvals", "allowed_hosts", "approved_sentences",
    "security_advice_pages",
}  # fmt: skip
_RULE_KEYS = {"field", "equals", "action"}
_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?$", re.S | re.M)


class PolicyError(ValueError):
    """The policy file cannot be used; nothing was written."""


@dataclass(frozen=True)
class FrontmatterRule:
    field: str
    equals: object
    action: str = "exclude"  # the only action: a matching document is not admitted

    def matches(self, meta: dict) -> bool:
        return self.field in meta and meta[self.field] == self.equals

    def describe(self) -> str:
        return f"{self.field}={json.dumps(self.equals)}"


DEFAULT_FRONTMATTER = (FrontmatterRule("draft", True),)


@dataclass(frozen=True)
class AdmissionDecision:
    path: str
    admitted: bool
    reason: str = ""  # empty when admitted


@dataclass(frozen=True)
class AdmissionPolicy:
    source: Path | None = None  # the policy file; None for the default policy
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    frontmatter: tuple[FrontmatterRule, ...] = DEFAULT_FRONTMATTER
    require_approval: bool = False
    approvals_file: Path | None = None  # None when approvals are inline (or absent)
    approvals: dict[str, str] = field(default_factory=dict)  # path -> sha256 of the file bytes
    # Planted-instruction screen (see planted.py): hosts whose fetch-and-run commands are legitimate
    # (the corpus's own site always is), flagged sentences approved by their sha256, and pages (globs)
    # whose subject is a security setting, so telling the reader to change it is not planted there.
    allowed_hosts: tuple[str, ...] = ()
    approved_sentences: frozenset[str] = frozenset()
    security_advice_pages: tuple[str, ...] = ()

    def decide(self, path: str, data: bytes) -> AdmissionDecision:
        if not any(fnmatchcase(path, g) for g in self.include):
            return AdmissionDecision(path, False, f"not_included: matches none of {list(self.include)}")
        excluded_by = next((g for g in self.exclude if fnmatchcase(path, g)), None)
        if excluded_by:
            return AdmissionDecision(path, False, f"excluded_by_glob: {excluded_by}")
        meta = _frontmatter(data, {r.field for r in self.frontmatter})
        rule = next((r for r in self.frontmatter if r.matches(meta)), None)
        if rule:
            return AdmissionDecision(path, False, f"frontmatter: {rule.describe()}")
        if self.require_approval:
            approved, now = self.approvals.get(path), file_sha256(data)
            if approved is None:
                return AdmissionDecision(path, False, "not_approved")
            if approved != now:
                return AdmissionDecision(path, False, f"hash_mismatch: approved {approved}, now {now}")
        return AdmissionDecision(path, True)


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _frontmatter(data: bytes, fields: set[str]) -> dict:
    """The frontmatter mapping, or {} when absent or unreadable (the parser reports broken files).

    Read only when it may hold one of ``fields`` (its text names one, or holds an escape that could
    spell one): YAML in Python costs ~8 ms a page, most of a no-change sync's time."""
    match = _FRONTMATTER.match(data.decode("utf-8", errors="replace"))
    if match and not any(name in match.group(1) for name in fields) and "\\" not in match.group(1):
        return {}
    try:
        meta = yaml.safe_load(match.group(1)) if match else None
    except yaml.YAMLError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _fail(path: Path, problem: str, todo: str) -> PolicyError:
    return PolicyError(f"admission policy {path}: {problem}. {todo} Nothing was changed.")


def _strings(path: Path, data: dict, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = data.get(key, list(default))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"`{key}` must be a list of glob strings, got {value!r}", f'Write e.g. {key} = ["guides/*"].')
    return tuple(value)


def _rules(path: Path, value: object) -> tuple[FrontmatterRule, ...]:
    todo = 'Write each rule as [[frontmatter]] field = "draft", equals = true, action = "exclude".'
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise _fail(path, "`frontmatter` must be an array of tables", todo)
    rules = []
    for rule in value:
        unknown = set(rule) - _RULE_KEYS
        if unknown or not isinstance(rule.get("field"), str) or "equals" not in rule:
            raise _fail(path, f"bad frontmatter rule {rule!r} (keys: field, equals, action)", todo)
        if rule.get("action", "exclude") != "exclude":
            raise _fail(path, f"unknown frontmatter action {rule['action']!r}", 'The only action is "exclude".')
        rules.append(FrontmatterRule(rule["field"], rule["equals"]))
    return tuple(rules)


def _read_approvals(policy_path: Path, file: Path) -> dict[str, str]:
    if not file.is_file():
        raise _fail(
            policy_path,
            f"approvals file {file} does not exist",
            "Create it with `citedocs admission approve DIR --corpus NAME`, or fix the `approvals` path.",
        )
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(policy_path, f"approvals file {file} is not valid TOML ({exc})", "Fix or regenerate it.") from exc
    return _approval_table(policy_path, data, str(file))


def _approval_table(policy_path: Path, data: object, where: str) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) for v in data.values()):
        raise _fail(policy_path, f"approvals in {where} must map paths to sha256 hex digests", 'Write "path.mdx" = "<sha256>".')
    return dict(data)


def _digests(path: Path, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) for v in value):
        raise _fail(
            path,
            f"`approved_sentences` must be a list of sha256 hex digests, got {value!r}",
            "Copy the sha256 of a flagged sentence from the admission report.",
        )
    return value


def load_policy(path: Path) -> AdmissionPolicy:
    """Read and check a policy file; raises PolicyError naming the file, the problem and the fix."""
    path = path.resolve()
    if not path.is_file():
        raise _fail(path, "file not found", "Check the --admission path.")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, f"not valid TOML ({exc})", "Fix the syntax.") from exc
    unknown = sorted(set(data) - _POLICY_KEYS)
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(unknown)}", f"Allowed keys: {', '.join(sorted(_POLICY_KEYS))}.")
    require = data.get("require_approval", False)
    if not isinstance(require, bool):
        raise _fail(path, f"`require_approval` must be true or false, got {require!r}", "Use a TOML boolean.")
    approvals = data.get("approvals", {})
    approvals_file = None
    if isinstance(approvals, str):
        approvals_file = (path.parent / approvals).resolve()
        table = _read_approvals(path, approvals_file)
    else:
        table = _approval_table(path, approvals, "the inline `approvals` table")
    return AdmissionPolicy(
        source=path,
        include=_strings(path, data, "include", DEFAULT_INCLUDE),
        exclude=_strings(path, data, "exclude", ()),
        frontmatter=_rules(path, data["frontmatter"]) if "frontmatter" in data else DEFAULT_FRONTMATTER,
        require_approval=require,
        approvals_file=approvals_file,
        approvals=table,
        allowed_hosts=_strings(path, data, "allowed_hosts", ()),
        approved_sentences=frozenset(_digests(path, data.get("approved_sentences", []))),
        security_advice_pages=_strings(path, data, "security_advice_pages", ()),
    )


def _remembered(corpus: str) -> Path:
    return config.home() / "admission" / f"{corpus}.policy"


def remembered_policy(corpus: str) -> Path | None:
    """The policy file remembered for the corpus, if any (a sync's candidate version reads under it)."""
    remembered = _remembered(corpus)
    return Path(remembered.read_text(encoding="utf-8").strip()) if remembered.is_file() else None


def resolve_policy(corpus: str, path: Path | None) -> AdmissionPolicy:
    """The given policy, else the one remembered for the corpus, else the default."""
    if path is not None:
        return load_policy(path)
    remembered = _remembered(corpus)
    if remembered.is_file():
        return load_policy(Path(remembered.read_text(encoding="utf-8").strip()))
    return AdmissionPolicy()


def remember_policy(corpus: str, policy: AdmissionPolicy) -> None:
    """Record the policy's path for the corpus (after a successful ingest)."""
    if policy.source is not None:
        target = _remembered(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(policy.source), encoding="utf-8")


def default_report_path(corpus: str) -> Path:
    return config.home() / "reports" / f"{corpus}-admission.json"


def approve(policy: AdmissionPolicy, source_dir: Path, paths: list[str]) -> dict[str, str]:
    """Pin ``paths`` (corpus-relative) to their current sha256 in the approvals file; return them."""
    if policy.approvals_file is None:
        where = f"admission policy {policy.source}" if policy.source else "the corpus uses the default admission policy, which"
        raise PolicyError(
            f"{where} has no approvals file. Pass --admission POLICY.toml with "
            '`approvals = "approved.toml"` in it, then approve again.'
        )
    pinned = {}
    for rel in paths:
        file = source_dir / rel
        if not file.is_file():
            raise PolicyError(f"cannot approve {rel}: {file} is not a file. Pass paths relative to {source_dir}.")
        pinned[rel] = file_sha256(file.read_bytes())
    table = policy.approvals | pinned
    lines = [f"{json.dumps(p)} = {json.dumps(h)}" for p, h in sorted(table.items())]
    policy.approvals_file.write_text("# written by `citedocs admission approve`\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return pinned
