"""Search terms for lexical retrieval, shared by indexing and querying, in every script.

Docs questions are full of code identifiers (``import.meta.env``, ``astro:assets``, ``--host``,
``minimumFailingSeverity``). Each identifier is indexed three ways so that any spelling a user
types still matches: its parts (``import``, ``meta``, ``env``), a compound term joining the
parts (``import_meta_env``), and camelCase pieces (``minimum failing severity``).

Words are Unicode words (letters, combining marks and digits of any script), NFKC-normalised and
casefolded. A word outside ASCII is stemmed by the Snowball stemmer of its language (given, or else
the language its script is mostly written in: Cyrillic Russian, Arabic Arabic, Greek Greek;
a script with no stemmer, such as Hebrew, is left unstemmed), then loses the combining marks no
letter composes with (niqqud, harakat, vowel signs: FTS5's ``unicode61`` tokenizer would split a
word at them), and a Latin letter its accent (as ``unicode61`` drops it).
ASCII words are stemmed later, by the store (FTS5's Porter), exactly as before.
Chinese and Japanese, written without spaces, are indexed as overlapping character bigrams
(Lucene's CJK analyzer's method): no dictionary, and a two-character word is one bigram.

The same tokenizer gives the content terms (stopwords dropped, lightly stemmed) that the extractive
backend, the question gate, the support check and the eval's judge compare.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata

import regex
import snowballstemmer
import stopwordsiso

from .language import script

_CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}\u30fc"
_CJK_RUN = regex.compile(rf"[{_CJK_CLASS}]+")
_RAW = regex.compile(r"-{0,2}[\w$@][\w$@.:/\-]*")
_PART = regex.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# the same two patterns for ASCII text, where ``re`` gives the same matches about three times faster
_RAW_ASCII = re.compile(r"-{0,2}[\w$@][\w$@.:/\-]*", re.ASCII)
_PART_ASCII = re.compile(r"[A-Za-z0-9]+")
_MARK = regex.compile(r"\p{M}+")

STOPWORDS = frozenset(
    """a an and are as at be but by can could do does for from has have how i if in into is it its
    me my of on or our should so than that the their them then there these they this to was we what
    when where which while who why will with would you your use using want need get way""".split()
)

# Snowball's stemmers by ISO 639-1 code, and the language a script's words get when none is given
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nb": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
SCRIPT_LANGUAGE = {"CYRILLIC": "ru", "ARABIC": "ar", "GREEK": "el", "ARMENIAN": "hy", "TAMIL": "ta", "DEVANAGARI": "hi", "HEBREW": "he"}
_LANGUAGE_SCRIPT = {"uk": "CYRILLIC", "bg": "CYRILLIC", "sr": "CYRILLIC", "be": "CYRILLIC", "fa": "ARABIC", "ur": "ARABIC", "ne": "DEVANAGARI", "yi": "HEBREW"}
_LANGUAGE_SCRIPT.update({lang: s for s, lang in SCRIPT_LANGUAGE.items()})
_stemmers = threading.local()  # a snowballstemmer stemmer keeps its state while it stems: one per thread


def has_stemmer(language: str) -> bool:
    """Whether words of ``language`` are stemmed (English: by the store's Porter stemmer)."""
    return language == "en" or language in SNOWBALL


def _stemmer(language: str):
    cache = getattr(_stemmers, "by_language", None)
    if cache is None:
        cache = _stemmers.by_language = {}
    if language not in cache:
        cache[language] = snowballstemmer.stemmer(SNOWBALL[language])
    return cache[language]


@functools.lru_cache(maxsize=1 << 18)
def _word_term(word: str, language: str | None) -> str:
    """A non-ASCII word's index term: casefolded, stemmed in its language, without combining marks."""
    folded = word.casefold()
    if folded.isascii():
        return folded
    word_script = script(next((c for c in folded if c.isalpha()), "x"))
    if language is None or _LANGUAGE_SCRIPT.get(language, "LATIN") != word_script:
        language = SCRIPT_LANGUAGE.get(word_script)
    if language in SNOWBALL:
        folded = _stemmer(language).stemWord(folded) or folded
    if word_script == "LATIN":  # accents go, as FTS5's ``remove_diacritics`` drops them
        folded = unicodedata.normalize("NFC", _MARK.sub("", unicodedata.normalize("NFD", folded)))
    return _MARK.sub("", folded) or folded  # marks no letter composes with: vowel signs, niqqud, harakat


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


@functools.lru_cache(maxsize=4096)
def _normalized(text: str) -> str:
    """NFKC (full-width letters, ligatures, superscripts become plain), Chinese and Japanese set apart."""
    text = unicodedata.normalize("NFKC", text)
    return _CJK_RUN.sub(r" \g<0> ", text) if not text.isascii() else text


def search_terms(text: str, language: str | None = None) -> list[str]:
    terms: list[str] = []
    text = _normalized(text)
    ascii_text = text.isascii()
    raw_pattern, part_pattern = (_RAW_ASCII, _PART_ASCII) if ascii_text else (_RAW, _PART)
    for raw in raw_pattern.findall(text):
        if not ascii_text and _CJK_RUN.fullmatch(raw):
            terms.extend(_bigrams(raw))
            continue
        words = part_pattern.findall(raw)
        if not words:
            continue
        parts = [w.lower() if w.isascii() else _word_term(w, language) for w in words]
        terms.extend(parts)
        if len(parts) > 1:
            terms.append("_".join(parts))
        for word in words if ascii_text else filter(str.isascii, words):
            pieces = _CAMEL.findall(word)
            if len(pieces) > 1:
                terms.extend(p.lower() for p in pieces)
    return terms


def word_parts(text: str) -> list[str]:
    """The lowercased words of a code token (``0.15-0.16`` -> ``0 15 0 16``), as ``search_terms`` splits it."""
    return [w.lower() if w.isascii() else _word_term(w, None) for w in _PART.findall(_normalized(text))]


def raw_tokens(text: str) -> list[str]:
    """The whitespace-free runs ``search_terms`` reads one by one (a code token is one of them)."""
    return _RAW.findall(_normalized(text))


def query_terms(text: str, language: str | None = None) -> list[str]:
    """Distinct search terms of a question, stopwords removed (unless nothing else is left)."""
    terms = list(dict.fromkeys(search_terms(text, language)))
    content = [t for t in terms if t not in STOPWORDS and (t.isascii() or t not in foreign_stop_terms())]
    return content or terms


def fts_match_expression(terms: list[str], match_all: bool = False) -> str:
    """An FTS5 MATCH expression over quoted terms (quoting keeps FTS5 syntax out of user input)."""
    return (" AND " if match_all else " OR ").join(f'"{t}"' for t in terms)


def normalize_term(term: str) -> str:
    """A light stemmer, so 'loads' matches 'load' and 'loading' matches 'load' (other scripts'
    words are stemmed by Snowball already)."""
    if not term.isascii():
        return term
    if len(term) > 6 and term.endswith("ing"):
        return term[:-3]
    if len(term) > 5 and term.endswith("ed"):
        return term[:-2]
    if len(term) > 4 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


@functools.cache
def foreign_stop_terms() -> frozenset[str]:
    """The stopwords (stopwords-iso) of the languages non-ASCII words are read in, as index terms.
    ASCII words keep the English list above, so English text is read as it always was (and never
    loads these lists: about a second, once per process)."""
    terms: set[str] = set()
    for language in {*SCRIPT_LANGUAGE.values(), *_LANGUAGE_SCRIPT, *SNOWBALL}:
        if language != "en" and stopwordsiso.has_lang(language):
            for word in stopwordsiso.stopwords(language):
                terms.update(t for t in search_terms(word, language) if not t.isascii())
    return frozenset(terms)


@functools.lru_cache(maxsize=16_384)
def content_terms(text: str) -> frozenset[str]:
    """Remembered by text: the same chunk and sentence texts are tokenised by the extractive backend,
    the question gate and every support check of a request, and again whenever they are retrieved."""
    return frozenset(content_sequence(text))


@functools.lru_cache(maxsize=16_384)
def content_sequence(text: str, keep: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The content terms in the order the text says them (compounds and camelCase pieces included),
    and the terms in ``keep`` even where they are stopwords."""
    return tuple(
        normalize_term(t)
        for t in search_terms(text)
        if t in keep or (t not in STOPWORDS and len(t) > 1 and (t.isascii() or t not in foreign_stop_terms()))
    )
