"""Refuse before generating when the question asks about things the docs never mention.

Six general signals, none tuned per question:
* code the user quotes (a backticked span or a quoted value) whose tokens never appear in that
  order anywhere in the corpus: the user names a setting the docs do not have (call arguments,
  string values, file paths and URLs are the user's own and are not looked up);
* a code-like term in the question (``client:hover``, ``--prod``) whose parts do not co-occur in
  any retrieved chunk: the question presupposes an option the evidence lacks;
* an API name written without backticks (``@app.after_response``, ``config.from_toml()``) that,
  like quoted code, occurs nowhere in the corpus, and so a keyword argument (``the timeout= argument
  of CliRunner.invoke``) whose name the corpus never mentions;
* a proper name (capitalised, not sentence-initial) that occurs nowhere in the corpus: the
  question is about a product or service the docs do not cover;
* a lowercase name the question uses as a tool or library ("with gevent", "the gevent worker") that
  occurs nowhere in the corpus;
* a command line written without backticks ("run citedocs backup", "the citedocs backup command")
  of a program the corpus runs (a code line starts with it) but never with that subcommand.

A code-like term the retrieved passages lack is looked up in the whole corpus too: the refusal says
"the docs don't mention X" only when that is true (``QuestionTerms.absent``); a term the docs have
elsewhere is ``QuestionTerms.elsewhere``, not a docs gap. Terms are named as the user wrote them
(``pipelining=True``, not ``pipelining_true``).

What the user names as their own is never looked up: quoted file names and paths, URLs, call
arguments, code introduced as theirs ("a component called `mybanner`", "my docs/api/ folder"),
quoted statements of their own code (`[y for x in data if y := f(x)]`), a command line of a program
the corpus never names (`pybabel extract`) and whatever a sentence that does not ask names ("My CLI
has --json and --csv flags. How do I ...?"). A contraction or possessive
("I'm", "IDE's") is not a proper name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Protocol

from babel import Locale

from ..language import detect_language
from ..sentences import asked_sentences, question_sentences
from ..text import STOPWORDS
from ..types import Chunk
from ..text import content_terms
from .support import specific_terms

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9']*")
_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]{1,60})\"")
_PART = re.compile(r"[a-z0-9]+")
_URL = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)+/\S*")
_FILE_PATH = re.compile(r"^[\w.@~-]*/[\w./@~-]*\.\w+$|^[\w-]+\.(?:json|ya?ml|md|mdx|ts|js|mjs|astro|css|html|txt|toml)$")
_CALL_ARGUMENTS = re.compile(r"\((?:[^()]|\([^()]*\))*\)|'[^']*'|\"[^\"]*\"")
# "called `x`", "named `x`", "my `x`": the user introduces a name of their own, in each language of
# citedocs' own words (en ru de fr es pt zh; Japanese names it before: "`x`という")
_USER_NAMED = re.compile(
    r"(?:\b(?:called|named|my"
    r"|с\s+именем|под\s+(?:именем|названием)|называем\w*|названн\w*|(?:мо|сво)(?:й|я|ё|е|и|его|ей|им|ем|ю|их)"
    r"|namens|genannt\w*|mein\w*"
    r"|nommée?s?|appelée?s?|mon|ma|mes"
    r"|llamad[oa]s?|mis?|de\s+nombre"
    r"|chamad[oa]s?|meus?|minhas?|de\s+nome)|名为|名叫|叫做|我的)\s*$",
    re.IGNORECASE,
)
_USER_NAMED_AFTER = re.compile(r"^\s*(?:という|って|と呼ぶ)")
_USER_OWN_TOKEN = re.compile(r"\b(my\s+)[\w.@~/-]*[/._:][\w.@~/:-]*", re.IGNORECASE)
_API_NAME = re.compile(r"(?<![\w.$@])@?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
# ``timeout=`` written as a keyword argument: a parameter the user expects some API to take
_KEYWORD_ARGUMENT = re.compile(r"(?<![\w.$@=-])([A-Za-z_][A-Za-z0-9_]*)=(?![=>])")
_CLITIC = re.compile(r"'(?:s|m|re|ve|ll|d|t)$", re.IGNORECASE)
_PROGRAM = re.compile(r"[a-z][a-z0-9_-]*")  # the first word of a command line
# words that make a quoted span a statement of the user's own code, not a name the docs should define
_STATEMENT_WORDS = frozenset("for in if else as import from def return lambda await async with while class const let var function except try yield".split())
_NAME = r"[a-z][a-z0-9_-]*[a-z0-9]"  # a lowercase tool, package or (sub)command name
# "run citedocs backup?", "run citedocs sync --dry-run?", "the citedocs backup command": a command
# line written as plain words (program, subcommand, flags)
_FLAGS = r"((?:\s+--?[a-z][\w-]*)*)"
_COMMAND_LINES = (
    re.compile(
        rf"\b(?:run|runs|running|execute|executing|invoke|invoking)\s+({_NAME})\s+({_NAME}){_FLAGS}"
        r"(?=\s*(?:[?.,;:!)]|$)|\s+(?:to|for|command|subcommand)\b)"
    ),
    re.compile(rf"\b({_NAME})\s+({_NAME}){_FLAGS}\s+(?:sub)?command\b"),
)
# "with gevent", "using gevent", "the gevent worker": a lowercase word used as the name of a tool
_TOOL_NAMES = (
    re.compile(rf"\b(?:with|using|via|under|behind)\s+({_NAME})\b(?![-.:/=(])"),
    re.compile(rf"\b({_NAME})\s+(?:library|package|module|plugin|extension|integration|adapter|driver|server|worker|backend)s?\b"),
)


class CorpusProbe(Protocol):
    def mentions(self, term: str) -> bool: ...

    def has_sequence(self, parts: list[str]) -> bool: ...

    def runs_program(self, program: str) -> bool: ...


def starts_command_line(program: str, text: str) -> bool:
    """Whether ``text`` runs ``program``: a code line, or a code span, that starts with it (after a
    ``$`` prompt): ``astro dev``, not "unit tests"."""
    pattern = rf"^[ \t]*(?:\$\s*)?{re.escape(program)}(?:[ \t]|$)|`(?:\$\s*)?{re.escape(program)} [^`\n]*`"
    return re.search(pattern, text, re.M) is not None


def contains_sequence(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def code_parts(text: str) -> list[str]:
    return _PART.findall(text.lower())


def _quoted_code_missing(question: str, probe: CorpusProbe) -> list[str]:
    missing = []
    for match in _QUOTED.finditer(question):
        span = (match.group(1) or match.group(2)).strip()
        if _URL.search(span) or _FILE_PATH.match(span) or _USER_NAMED.search(question[: match.start()]) or _USER_NAMED_AFTER.match(question[match.end() :]):
            continue
        words = span.split()
        if len(_STATEMENT_WORDS & {w.rstrip("*:") for w in words}) >= 2:
            continue  # `[y for x in data if y := f(x)]`, `except* ValueError as e:`: their own code
        if len(words) >= 2 and _PROGRAM.fullmatch(words[0]) and not probe.mentions(words[0]):
            continue  # `pybabel extract`: a command line of a program the docs never name is another tool's
        code = span if match.group(2) else _CALL_ARGUMENTS.sub("", span)
        parts = code_parts(code)
        if parts and not probe.has_sequence(parts):
            missing.append(span)
    return missing


@functools.cache
def _place_and_language_names() -> re.Pattern:
    """The English names of every language and territory CLDR knows (via Babel): "Brazilian
    Portuguese", "Spanish", "Germany". In a question they are the user's values (a locale to route,
    a market to serve), not a product the docs should cover."""
    english = Locale("en")
    names = sorted({*english.languages.values(), *english.territories.values()}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(name) for name in names) + r")\b")


def _proper_names(question: str) -> list[str]:
    """Capitalised words, not sentence-initial, that are no language or place name. German capitalises
    every noun, so there a capital marks no name and none is read as one."""
    if detect_language(question) == "de":
        return []
    places = {w for m in _place_and_language_names().finditer(question) for w in m.group(0).split()}
    names = []
    for sentence in question_sentences(question):
        words = [_CLITIC.sub("", w) for w in _WORD.findall(re.sub(r"`[^`]*`", " ", sentence))]
        for word in words[1:]:
            if word[0].isupper() and len(word) >= 3 and word.lower() not in STOPWORDS and not word.isupper() and word not in places:
                names.append(word)
    return names


def _as_written(term: str, question: str) -> str:
    """``client_hover`` as the user typed it (``client:hover``, ``pipelining=True``, ``--prod``), for
    the refusal message: the shortest run of the question whose parts are the term's, joined by
    code punctuation (no spaces), with a leading ``-``/``@``/``$``."""
    parts = term.split("_")
    found = list(_PART.finditer(question.lower()))
    for i in range(len(found) - len(parts) + 1):
        run = found[i : i + len(parts)]
        start, end = run[0].start(), run[-1].end()
        if [m.group() for m in run] == parts and not any(c.isspace() for c in question[start:end]):
            while start and question[start - 1] in "-@$":
                start -= 1
            return question[start:end]
    return term


def asked_part(question: str) -> str:
    """The sentences that ask, or the whole question when none does.

    A sentence that states the user's situation ("My CLI has --json and --csv output flags.", "I
    also want it to restart when I edit settings.yaml.") names their own things, not the docs'."""
    return " ".join(asked_sentences(question))


def _command_lines_missing(unquoted: str, probe: CorpusProbe) -> list[str]:
    """Unquoted command lines (``run citedocs backup``) of a program the corpus names, with a
    subcommand it never gives that program; another tool's commands are the user's own."""
    missing = []
    for pattern in _COMMAND_LINES:
        for program, sub, flags in pattern.findall(unquoted):
            if {program, sub} & STOPWORDS or not probe.runs_program(program):
                continue  # not a program the docs run: words ("run unit tests"), or another tool's command
            if not probe.has_sequence(code_parts(f"{program} {sub}{flags}")):
                missing.append(f"{program} {sub}{flags}")
    return missing


def _tool_names_missing(unquoted: str, probe: CorpusProbe) -> list[str]:
    """Lowercase words used as the name of a tool or library ("with gevent") the corpus never uses, in
    any form (a word is looked up stemmed, as search reads it: "caching" is there if "cache" is)."""
    names = [name for pattern in _TOOL_NAMES for name in pattern.findall(unquoted)]
    return [
        n for n in names
        if n not in STOPWORDS and len(n) >= 3 and not (probe.mentions(n) if n.isalnum() else probe.has_sequence(code_parts(n)))
    ]


@dataclass
class QuestionTerms:
    """What the question names that the evidence cannot speak to, as the user wrote it."""

    absent: list[str] = field(default_factory=list)  # the whole corpus never mentions them
    elsewhere: list[str] = field(default_factory=list)  # the corpus does, but no retrieved passage

    @property
    def all(self) -> list[str]:
        return self.absent + self.elsewhere


def unsupported_question_terms(question: str, evidence: list[Chunk], probe: CorpusProbe) -> QuestionTerms:
    """Terms of the question the docs cannot speak to (none: nothing suspicious)."""
    question = _URL.sub(" ", asked_part(question))
    missing: list[str] = _quoted_code_missing(question, probe)
    unquoted = re.sub(r"`[^`]*`|\"[^\"]*\"", " ", question)
    unquoted = _USER_OWN_TOKEN.sub(r"\1", unquoted)
    elsewhere: list[str] = []
    chunk_terms = [content_terms(f"{c.title} {' '.join(c.heading_path)} {c.text}") for c in evidence]
    for term in sorted(specific_terms(unquoted)):
        parts = {p for p in term.split("_") if len(p) > 1}
        if not parts or all(p.isdigit() for p in parts):
            continue
        normalized = {next(iter(content_terms(p)), p) for p in parts}
        if not any(normalized <= terms for terms in chunk_terms):
            found = probe.has_sequence(term.split("_"))
            (elsewhere if found else missing).append(_as_written(term, unquoted))
    missing += _command_lines_missing(unquoted, probe)
    missing += _tool_names_missing(unquoted, probe)
    for name in _API_NAME.findall(unquoted):
        parts = code_parts(name)
        abbreviation = all(len(p) == 1 for p in parts)  # "i.e.", "e.g."
        if len(parts) > 1 and not abbreviation and not probe.has_sequence(parts):
            missing.append(name)
    for name in _KEYWORD_ARGUMENT.findall(_CALL_ARGUMENTS.sub(" ", unquoted)):  # not the user's own call's
        if not probe.has_sequence(code_parts(name)):
            missing.append(f"{name}=")
    for name in _proper_names(question):
        if not probe.mentions(name.lower()):
            missing.append(name)
    absent = _one_mention_each(missing)
    named = [code_parts(term) for term in absent]
    return QuestionTerms(absent, [t for t in _one_mention_each(elsewhere) if not _within(code_parts(t), named)])


def _within(parts: list[str], others: list[list[str]]) -> bool:
    return any(contains_sequence(other, parts) for other in others)


def _one_mention_each(terms: list[str]) -> list[str]:
    """The first spelling of each term (`app.x` and `@app.x` are one), without the terms that are a
    piece of another (`pipelining=` of `pipelining=True`, `LoadMode` of `@Env.LoadMode`)."""
    first_spelling: dict[tuple[str, ...], str] = {}
    for term in terms:
        first_spelling.setdefault(tuple(code_parts(term)), term)
    keys = [list(k) for k in first_spelling]
    return [t for k, t in first_spelling.items() if not _within(list(k), [o for o in keys if o != list(k)])]
