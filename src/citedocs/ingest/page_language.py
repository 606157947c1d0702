"""Which language each page is written in, known rather than assumed.

In order: what the page declares (frontmatter ``lang``/``language``/``locale``, or ``<html lang>``),
then where it sits (a folder named for a language: ``ru/``, ``zh-cn/``, Docusaurus's
``i18n/<lang>/``, Starlight's ``src/content/docs/<lang>/``), then what its text reads as
(``citedocs.language``: script, then py3langid). The ingest report counts pages per language and
says which languages' words are indexed unstemmed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from babel import Locale, UnknownLocaleError

from ..language import detect_language, known_languages
from ..text import has_stemmer
from .document import ParsedPage

_TAG = re.compile(r"^([a-z]{2,3})(?:[-_][A-Za-z0-9]{2,8})*$")
_FOLDER_TAG = re.compile(r"^([a-z]{2})(?:[-_][a-z0-9]{2,4})?$")  # ru, zh-cn, pt_br: not src, api, ts (Tsonga?)
_SAMPLE_CHARS = 4000  # enough text to tell a language; the whole page adds nothing


def language_tag(value: object) -> str | None:
    """The ISO 639 language of a tag such as ``ru``, ``zh-CN``, ``pt_BR`` (None: not a language tag)."""
    match = _TAG.match(str(value or "").strip().lower())
    if not match:
        return None
    try:
        Locale.parse(match.group(1))
    except (UnknownLocaleError, ValueError):
        return None
    return match.group(1)


def _folder_language(doc_path: str) -> str | None:
    parts = PurePosixPath(doc_path).parts[:-1]
    for n, part in enumerate(parts):
        if part == "i18n" and n + 1 < len(parts):
            return language_tag(parts[n + 1])
    # a folder named for a language that the identifier also knows (docs/ru/, content/docs/zh-cn/);
    # a two-letter folder such as "ts" (Tsonga to CLDR) is not taken for one
    for part in parts[:4]:
        match = _FOLDER_TAG.match(part.lower())
        if match and language_tag(part) and match.group(1) in known_languages():
            return match.group(1)
    return None


def page_language(page: ParsedPage, text: str) -> tuple[str, str]:
    """The page's language and how it was known (frontmatter, html, folder, text)."""
    for key in ("lang", "language", "locale"):
        tag = language_tag(page.frontmatter.get(key)) if isinstance(page.frontmatter, dict) else None
        if tag:
            return tag, "declared"
    folder = _folder_language(page.doc_path)
    if folder:
        return folder, "folder"
    return detect_language(text[:_SAMPLE_CHARS]), "text"


_DECLARED = re.compile(r"\A---\r?\n(?:.*?\n)??(?:lang|language|locale):[ \t]*[\"']?([A-Za-z_-]+)", re.S)
_HTML_LANG = re.compile(r"<html\b[^>]*?\blang=[\"']?([A-Za-z_-]+)", re.I)
_SAMPLE_FILES = 24  # files read to tell a corpus's language before its pages are parsed


def file_language(doc_path: str, text: str) -> str:
    """``page_language`` from a file's raw text, before it is parsed: its frontmatter's declared
    language, its folder, else its text (markup and all, which the identifier reads past)."""
    declared = _DECLARED.match(text) or _HTML_LANG.search(text[:_SAMPLE_CHARS])
    tag = language_tag(declared.group(1)) if declared else None
    return tag or _folder_language(doc_path) or detect_language(text[:_SAMPLE_CHARS])


def corpus_language(files: list[tuple[str, str]]) -> str:
    """The language most of ``files`` (path, text) are written in, from up to 24 of them spread evenly
    over the sorted list: what ingest chooses the dense model by (``dense_model = auto``)."""
    if not files:
        return "en"
    step = max(1, len(files) // _SAMPLE_FILES)
    counts = Counter(file_language(path, text) for path, text in sorted(files)[::step][:_SAMPLE_FILES])
    return counts.most_common(1)[0][0]


def language_notes(languages: Counter[str]) -> list[str]:
    """What the ingest report says about the corpus's languages."""
    notes = []
    unstemmed = sorted(lang for lang in languages if not has_stemmer(lang))
    if unstemmed:
        notes.append(
            "no Snowball stemmer for " + ", ".join(f"{lang} ({languages[lang]} pages)" for lang in unstemmed)
            + ": their words are indexed unstemmed (Chinese and Japanese as character bigrams)"
        )
    major = [lang for lang, n in languages.most_common() if n >= max(2, sum(languages.values()) // 10)]
    if len(major) > 1:
        notes.append(
            f"this corpus mixes languages ({', '.join(f'{lang} {languages[lang]}' for lang in major)}): ingest each "
            "language's folder as its own corpus so every question is answered from pages in one language"
        )
    return notes
