"""Which language a text is in: for the tokenizer's stemmer and stopwords, and for the checks that
can read only some languages (the support check's meaning test reads what its encoder was trained on).

A script that one language owns decides alone (Hebrew, Greek, Thai, Hangul; kana is Japanese, Han
without kana Chinese). Otherwise py3langid (a maintained fork of langid.py: a naive Bayes model over
byte n-grams, 97 languages, bundled with the package) ranks the languages; a short or mixed text it
is not sure of (an identifier, "sidebar") is read by its script: English for Latin letters, the
best-ranked language written in the text's script otherwise. Detection never fails: a text without
letters is ``default``.
"""

from __future__ import annotations

import functools
import threading
import unicodedata
from collections import Counter

import regex

# scripts (as Unicode names them) that one language owns, or whose texts citedocs treats as one language
_OWNED = {"HEBREW": "he", "GREEK": "el", "THAI": "th", "HANGUL": "ko", "HIRAGANA": "ja", "KATAKANA": "ja", "ARMENIAN": "hy", "GEORGIAN": "ka"}
# languages py3langid knows, by the script they are written in (its labels; yue is written Chinese)
_SCRIPT_LANGUAGES = {
    "CYRILLIC": ("ru", "uk", "bg", "sr", "mk", "be", "kk", "ky", "mn"),
    "ARABIC": ("ar", "fa", "ur", "ps", "ug"),
    "DEVANAGARI": ("hi", "mr", "ne"),
    "CJK": ("zh",),
}
_ALIASES = {"yue": "zh", "wuu": "zh"}
# the Latin-script languages a docs site is written in; a Latin text py3langid gives another label
# ("zxx": no language; "pcm": Nigerian Pidgin, for "See :ref:`x` for an example.") is English
_LATIN_LANGUAGES = frozenset(
    "en es pt fr de it nl sv da no nb fi pl cs sk sl hr bs sr ro hu tr et lv lt is ga cy eu ca gl af sq vi id ms tl sw eo".split()
)
MIN_CONFIDENCE = 0.5  # py3langid's normalised probability below which the script decides
# a unit of text: one Chinese or Japanese character (about a word's worth), or one word of any other script
_UNIT = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\W\d_]+")
_CODE = regex.compile(r"`[^`]*`|\S*[/_.=:]\S*")  # code spans and identifiers say little about the language
_lock = threading.Lock()


def script(char: str) -> str:
    """The Unicode script of a letter, by the first word of its name (``CJK`` for Han)."""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


def dominant_script(text: str) -> str:
    """The script most of the text's words are written in, a Chinese or Japanese character counting as
    a word ("" when it has none): "如何在 VitePress 中部署到 Heroku？" is Chinese."""
    counts = Counter(script(unit[0]) for unit in _UNIT.findall(text))
    if not counts:
        return ""
    if counts.get("HIRAGANA") or counts.get("KATAKANA"):
        return "KANA"  # Japanese mixes kana with Han: any kana makes it Japanese
    return counts.most_common(1)[0][0]


@functools.cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    with _lock:
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.lru_cache(maxsize=8192)
def detect_language(text: str, default: str = "en") -> str:
    """The ISO 639-1 code of the text's language (``default`` when it has no letters)."""
    prose = _CODE.sub(" ", text)
    main = dominant_script(prose) or dominant_script(text)
    if not main:
        return default
    if main == "KANA":
        return "ja"
    if main in _OWNED:
        return _OWNED[main]
    if main == "CJK":
        return "zh"
    ranked = [(_ALIASES.get(lang, lang), p) for lang, p in _identifier().rank(prose if prose.strip() else text)]
    best, confidence = ranked[0]
    candidates = _SCRIPT_LANGUAGES.get(main)
    if main == "LATIN":
        return best if confidence >= MIN_CONFIDENCE and best in _LATIN_LANGUAGES else "en"
    if candidates is None:  # a script py3langid reads as one language
        return best
    if best in candidates and confidence >= MIN_CONFIDENCE:
        return best
    return next((lang for lang, _ in ranked if lang in candidates), candidates[0])


def known_languages() -> frozenset[str]:
    """The languages the identifier can name."""
    return frozenset(_ALIASES.get(lang, lang) for lang in _identifier().nb_classes)


_PAGES_MARK = regex.compile(r"\+pages-([a-z]{2,3})\b")


def pages_mark(language: str) -> str:
    """A corpus's main language as its pipeline string records it (ingest): none for English, so an
    index built before languages were recorded keeps its pipeline and is not re-embedded."""
    return "" if language == "en" else f"+pages-{language}"


def pipeline_language(pipeline: str) -> str:
    """A corpus's main language, read back from its pipeline string."""
    match = _PAGES_MARK.search(pipeline)
    return match.group(1) if match else "en"
