"""What citedocs itself says, in the user's language: refusal reasons, "Sources", the labels of the
chat, the widget and the console. The quoted docs text is never translated.

Catalogs are gettext's (``locale/<lang>/LC_MESSAGES/citedocs.po``, compiled to ``.mo`` and committed,
so a plain clone and an editable install need no build step); Babel extracts the messages from the
Python and JavaScript sources (``make messages``) and negotiates ``Accept-Language``. A catalog that
is missing raises rather than falling back silently: a deployment without its translations is broken,
not English.

Which language: the one the request names (a ``language`` field, or ``Accept-Language``), else the
question's detected language, and English when that language has no catalog.
"""

from __future__ import annotations

import functools
import gettext
from pathlib import Path

from babel.core import Locale, UnknownLocaleError, negotiate_locale

DOMAIN = "citedocs"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
SOURCE_LANGUAGE = "en"  # the msgids are English
LANGUAGES = ("en", "de", "es", "fr", "ja", "pt", "ru", "zh")  # each but English has a catalog in LOCALE_DIR


@functools.cache
def _catalog(language: str) -> gettext.NullTranslations:
    if language == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])  # FileNotFoundError when missing


def N_(msgid: str) -> str:
    """Marks a msgid kept in a constant, for the extractor; it is translated where it is said."""
    return msgid


class LanguageName(str):
    """A language code said as its name in the user's language ("ru" is "Russian", "русский")."""

    def named_in(self, language: str) -> str:
        try:
            return Locale.parse(str(self).replace("-", "_")).get_display_name(language) or str(self)
        except (UnknownLocaleError, ValueError):
            return str(self)

    def __format__(self, spec: str) -> str:
        return format(self.named_in(SOURCE_LANGUAGE), spec)


def translate(language: str, msgid: str, **params: object) -> str:
    """``msgid`` in ``language`` (a code from LANGUAGES), its ``{name}`` placeholders filled."""
    language = language if language in LANGUAGES else SOURCE_LANGUAGE
    text = _catalog(language).gettext(msgid)
    params = {k: v.named_in(language) if isinstance(v, LanguageName) else v for k, v in params.items()}
    return text.format(**params) if params else text


def messages(language: str) -> dict[str, str]:
    """Every message of ``language``'s catalog, msgid -> translation (the browser side's strings)."""
    if language == SOURCE_LANGUAGE:
        return {}
    return {k: v for k, v in _catalog(language)._catalog.items() if isinstance(k, str) and k}  # type: ignore[attr-defined]


class Message(str):
    """A sentence citedocs says, kept with its msgid: as a ``str`` it is the English text (what
    traces, logs and ``refusal_reason`` carry); ``in_language`` gives it in the user's language."""

    msgid: str
    params: dict[str, object]

    def __new__(cls, msgid: str, **params: object) -> Message:
        made = super().__new__(cls, msgid.format(**params) if params else msgid)
        made.msgid, made.params = msgid, params
        return made

    @classmethod
    def verbatim(cls, text: str) -> Message:
        """A text that is said as it is in every language (a model's own words)."""
        made = super().__new__(cls, text)
        made.msgid, made.params = "{text}", {"text": text}
        return made

    def in_language(self, language: str) -> str:
        return translate(language, self.msgid, **self.params)


def _preferences(accept_language: str) -> list[str]:
    """The header's language tags, most preferred first (q=0 and ``*`` dropped)."""
    ranked = []
    for position, item in enumerate(accept_language.split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        tag = tag.strip()
        if tag and tag != "*" and quality > 0:
            ranked.append((-quality, position, tag.replace("_", "-")))
    return [tag for _, _, tag in sorted(ranked)]


def negotiate(accept_language: str | None) -> str | None:
    """The language an ``Accept-Language`` header asks for: the first of its languages citedocs
    speaks, English when it names languages but none of those; None when it states no preference
    (absent, empty or ``*``), so that the question's language decides."""
    preferred = _preferences(accept_language or "")
    if not preferred:
        return None
    primaries = [tag.split("-")[0].lower() for tag in preferred]
    try:
        chosen = negotiate_locale(primaries, list(LANGUAGES))
    except UnknownLocaleError:
        chosen = None
    return chosen or SOURCE_LANGUAGE


def requested_language(field: str | None, accept_language: str | None) -> str | None:
    """The language a request names: its ``language`` field, else its ``Accept-Language`` header."""
    return field or negotiate(accept_language)


def choose_language(requested: str | None, question_language: str) -> str:
    """The language citedocs answers a request in: ``requested`` (a request field or a negotiated
    header) when given, else the question's; either way English when citedocs has no catalog for it."""
    wanted = (requested or question_language or SOURCE_LANGUAGE).replace("_", "-").split("-")[0].lower()
    return wanted if wanted in LANGUAGES else SOURCE_LANGUAGE
