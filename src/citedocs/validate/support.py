"""Does a cited chunk support a claim?

No PyPI package ships an NLI/entailment model with its weights (docs/reference/models.md), so support is
judged by three checks that each catch a distinct way a claim can outrun its source:

* **specifics**: every code identifier, flag, number and quoted value in the claim must occur in the
  evidence (an invented option is the commonest confident-wrong answer);
* **coverage**: most of the claim's content words must occur in the evidence;
* **meaning**: the claim must be close, by the bundled bi-encoder, to an actual evidence sentence,
  and must not flip its polarity (a "not"/"never" present on one side only, in any language).

Words are read in every script (``text.py``), so a claim's Russian or Chinese words count as much
as its identifiers: a fabricated claim cannot pass on the option names it shares with the passage.
The meaning test needs an encoder that reads the claim's language (``BiEncoder.languages``); where
it does not, the check fails safe: the claim must be a **quote**, every content word of it in one
evidence sentence in the same order. A paraphrase in such a language is then left to the LLM
verifier (``entailment.py``) or dropped.

A code token of the claim is found in the evidence when its words occur, in order, inside one code
token of the evidence, split by the same tokenizer on both sides: ``0.15`` is in ``0.15-0.16``.

The thresholds are global (``thresholds.toml``), never per question.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from ..language import detect_language
from ..models.embedding_cache import EmbeddingCache
from ..models.encoders import BiEncoder
from ..sentences import split_units
from ..text import content_sequence, content_terms, raw_tokens, search_terms, word_parts
from ..types import Chunk
from .thresholds import Thresholds

_CODE_SPAN = re.compile(r"`([^`]+)`")
# flags, dotted/colon/slash/equals tokens, camelCase, UPPER_SNAKE (environment variables, constants), numbers
_CODE_TOKEN = re.compile(
    r"(?:(?<![\w-])--?[A-Za-z][\w-]*|[\w$@]+(?:[.:/=][\w$@*]+)+|\b[a-z]+[A-Z]\w*|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\d+(?:\.\d+)*)"
)
_NEGATIONS = frozenset("not no never cannot can't don't doesn't isn't aren't won't without neither nor".split())
# negation words of other languages (ru uk es pt fr de it nl pl ar he el tr), and the characters that
# negate in Chinese and Japanese, where words are not separated
_OTHER_NEGATIONS = frozenset(
    """не нет ни никогда нельзя без ні ніколи no nunca jamás sin ni tampoco não jamais sem nem ne n pas
    sans aucun aucune nicht kein keine keinen keinem keiner keines nie niemals ohne non mai senza né
    niet geen nooit zonder nigdy bez لا ليس ليست لم لن غير بدون לא אין אל בלי δεν μην όχι ποτέ χωρίς
    değil yok hiç فلا ولا فلن ولن فلم ولم فليس وليس بلا""".split()
)
_CJK_NEGATIONS = ("不", "没", "沒", "無", "无", "未", "非", "别", "別", "勿", "ない", "ません", "ず")
_NEGATION_WORD = re.compile(r"[^\W\d_]+(?:'t)?")
QUOTE_SHARE = 1.0  # where meaning cannot be read: every content word of the claim, in order, in one sentence


def specific_terms(text: str) -> set[str]:
    """Compound terms for code spans and code-like tokens: they must match exactly, not loosely."""
    found: set[str] = set()
    for span in _CODE_SPAN.findall(text):
        found.update(t for t in search_terms(span) if "_" in t or not t.isalpha())
        parts = word_parts(span)
        if len(parts) == 1:
            found.add(parts[0])
    stripped = _CODE_SPAN.sub(" ", text)
    for token in _CODE_TOKEN.findall(stripped):
        parts = word_parts(token)
        if parts:
            found.add("_".join(parts))
    return found


@functools.lru_cache(maxsize=1024)
def _code_runs(evidence_text: str) -> str:
    """Each whitespace-free token of the evidence as its words, one token a line: `` 0 15 0 16 ``."""
    return "\n".join(f" {' '.join(word_parts(raw))} " for raw in raw_tokens(evidence_text))


def in_evidence(term: str, evidence_text: str, evidence_terms: set[str]) -> bool:
    """A specific term occurs in the evidence: as a search term, or as a run of words inside one of
    its code tokens (the claim's ``0.15`` in the evidence's ``0.15-0.16``)."""
    return term in evidence_terms or f" {' '.join(term.split('_'))} " in _code_runs(evidence_text)


def has_negation(text: str) -> bool:
    """Whether an English text negates."""
    return bool(_NEGATIONS & set(re.findall(r"[a-z']+", text.lower())))


def negation_count(text: str) -> int:
    """How many negations a text in any language holds: a quote holds as many as its source
    sentence, a claim that drops one of two "не" does not."""
    words = _NEGATION_WORD.findall(text.casefold())
    return sum(w in _NEGATIONS or w in _OTHER_NEGATIONS for w in words) + sum(text.count(c) for c in _CJK_NEGATIONS)


@functools.cache
def _negation_terms() -> frozenset[str]:
    return frozenset(t for word in _NEGATIONS | _OTHER_NEGATIONS for t in search_terms(word))


def quote_sequence(text: str) -> tuple[str, ...]:
    """The content terms in order, with the negation words a stopword list would drop."""
    return content_sequence(text, keep=_negation_terms())


def quoted_share(claim: tuple[str, ...], sentence: tuple[str, ...]) -> float:
    """The share of the claim's terms that the sentence holds in the same order (longest common
    subsequence over the claim's length)."""
    if not claim:
        return 0.0
    previous = [0] * (len(sentence) + 1)
    for term in claim:
        current = [0]
        for j, other in enumerate(sentence):
            current.append(previous[j] + 1 if term == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1] / len(claim)


@dataclass
class SupportVerdict:
    supported: bool
    coverage: float
    similarity: float
    missing_specifics: list[str] = field(default_factory=list)
    polarity_mismatch: bool = False
    best_sentence: str = ""
    language: str = "en"
    quoted: float | None = None  # set when the encoder cannot read the claim's language

    def reason(self) -> str:
        if self.missing_specifics:
            return f"cited text never mentions {', '.join(sorted(self.missing_specifics))}"
        if self.polarity_mismatch:
            return "claim negates what the cited text says (or the reverse)"
        if self.quoted is not None:
            return (
                f"not a quote of the cited text (word coverage {self.coverage:.2f}, in order {self.quoted:.2f}),"
                f" and the meaning check cannot read its language ({self.language})"
            )
        return f"weak support (word coverage {self.coverage:.2f}, similarity {self.similarity:.2f})"


class SupportChecker:
    def __init__(self, encoder: BiEncoder, thresholds: Thresholds) -> None:
        self.encoder = encoder
        # claims and evidence are mostly docs sentences (the extractive backend quotes them): reused across requests
        self.sentences = EmbeddingCache(encoder, "support_sentences")
        self.thresholds = thresholds

    def check(self, claim: str, evidence: list[Chunk]) -> SupportVerdict:
        evidence_text = "\n".join(f"{c.title} {' '.join(c.heading_path)}\n{c.text}" for c in evidence)
        evidence_terms = content_terms(evidence_text)
        evidence_specifics = {t for t in search_terms(evidence_text)} | evidence_terms
        claim_terms = content_terms(claim)
        coverage = len(claim_terms & evidence_terms) / len(claim_terms) if claim_terms else 0.0
        missing = sorted(t for t in specific_terms(claim) if not in_evidence(t, evidence_text, evidence_specifics))

        sentences = [u.text for u in split_units("\n".join(c.text for c in evidence)) if not u.is_code]
        ranked = sorted(sentences, key=lambda s: -len(claim_terms & content_terms(s)))[:4]
        language = detect_language(claim)
        t = self.thresholds
        if language not in self.encoder.languages:
            return self._check_quote(claim, ranked, coverage, missing, language)
        similarity, best = 0.0, ""
        if ranked:
            vectors = self.sentences.encode([claim, *ranked])
            scores = vectors[1:] @ vectors[0]
            best_index = int(np.argmax(scores))
            similarity, best = float(scores[best_index]), ranked[best_index]
        mismatch = bool(best) and has_negation(claim) != has_negation(best)
        supported = (
            not missing and coverage >= t.support_min_coverage and similarity >= t.support_min_similarity and not mismatch
        )
        return SupportVerdict(supported, coverage, similarity, missing, mismatch, best, language)

    def _check_quote(self, claim: str, ranked: list[str], coverage: float, missing: list[str], language: str) -> SupportVerdict:
        """The claim's language is one the encoder cannot read: support only a quote of one sentence."""
        sequence = quote_sequence(claim)
        shares = [quoted_share(sequence, quote_sequence(s)) for s in ranked]
        quoted = max(shares, default=0.0)
        best = ranked[shares.index(quoted)] if ranked else ""
        mismatch = bool(best) and negation_count(claim) != negation_count(best)
        supported = not missing and coverage >= self.thresholds.support_min_coverage and quoted >= QUOTE_SHARE and not mismatch
        return SupportVerdict(supported, coverage, 0.0, missing, mismatch, best, language, quoted)
