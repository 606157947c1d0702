"""Does a cited chunk support a claim?

No PyPI package ships an NLI/entailment model with its weights (docs/reference/models.md), so support is
judged by three checks that each catch a distinct way a claim can outrun its source:

* **specifics**: every code identifier, flag, number and quoted value in the claim must occur in the
  evidence (an invented option is the commonest confident-wrong answer);
* **coverage**: most of the claim's content words must occur in the evidence;
* **meaning**: the claim must be close, by the bundled bi-encoder, to an actual evidence sentence,
  and must not flip its polarity (a "not"/"never" present on one side only).

The thresholds are global (``thresholds.toml``), never per question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..models.embedding_cache import EmbeddingCache
from ..models.encoders import BiEncoder
from ..sentences import split_units
from ..text import content_terms, search_terms
from ..types import Chunk
from .thresholds import Thresholds

_CODE_SPAN = re.compile(r"`([^`]+)`")
_CODE_TOKEN = re.compile(r"(?:(?<![\w-])--?[A-Za-z][\w-]*|[\w$@]+(?:[.:/=][\w$@*]+)+|\b[a-z]+[A-Z]\w*|\d+(?:\.\d+)*)")
_NEGATIONS = frozenset("not no never cannot can't don't doesn't isn't aren't won't without neither nor".split())


def specific_terms(text: str) -> set[str]:
    """Compound terms for code spans and code-like tokens: they must match exactly, not loosely."""
    found: set[str] = set()
    for span in _CODE_SPAN.findall(text):
        found.update(t for t in search_terms(span) if "_" in t or not t.isalpha())
        parts = [p for p in re.findall(r"[A-Za-z0-9]+", span.lower())]
        if len(parts) == 1:
            found.add(parts[0])
    stripped = _CODE_SPAN.sub(" ", text)
    for token in _CODE_TOKEN.findall(stripped):
        parts = re.findall(r"[A-Za-z0-9]+", token.lower())
        if parts:
            found.add("_".join(parts))
    return found


def _has_negation(text: str) -> bool:
    return bool(_NEGATIONS & set(re.findall(r"[a-z']+", text.lower())))


@dataclass
class SupportVerdict:
    supported: bool
    coverage: float
    similarity: float
    missing_specifics: list[str] = field(default_factory=list)
    polarity_mismatch: bool = False
    best_sentence: str = ""

    def reason(self) -> str:
        if self.missing_specifics:
            return f"cited text never mentions {', '.join(sorted(self.missing_specifics))}"
        if self.polarity_mismatch:
            return "claim negates what the cited text says (or the reverse)"
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
        missing = sorted(t for t in specific_terms(claim) if t not in evidence_specifics)

        sentences = [u.text for u in split_units("\n".join(c.text for c in evidence)) if not u.is_code]
        ranked = sorted(sentences, key=lambda s: -len(claim_terms & content_terms(s)))[:4]
        similarity, best = 0.0, ""
        if ranked:
            vectors = self.sentences.encode([claim, *ranked])
            scores = vectors[1:] @ vectors[0]
            best_index = int(np.argmax(scores))
            similarity, best = float(scores[best_index]), ranked[best_index]
        mismatch = bool(best) and _has_negation(claim) != _has_negation(best)
        t = self.thresholds
        supported = (
            not missing and coverage >= t.support_min_coverage and similarity >= t.support_min_similarity and not mismatch
        )
        return SupportVerdict(supported, coverage, similarity, missing, mismatch, best)
