"""The no-LLM backend: quote the best-supporting sentences of the top chunks, each cited.

Deterministic and fast; used by the tests, by the release gate, and as the fallback when an
endpoint fails. It writes the same marker format an LLM is asked for, so its output goes through
the same validator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..contract import HistoryTurn
from ..models.embedding_cache import EmbeddingCache, question_vector
from ..models.encoders import BiEncoder
from ..markers import with_markers, without_citations
from ..sentences import CUT_MARK, asked_clauses
from ..text import content_terms
from ..types import Chunk
from .base import Generation
from .prompt import NO_ANSWER
from .unit_features import NAMES, UnitScorer, UnitView, unit_features
from .units import (
    AnswerUnit,
    Piece,
    announces,
    bounded_code,
    continued,
    entry_signature,
    looks_like_term,
    read_pieces,
    unit_of,
)

PROMPT_VERSION = "extractive_v2"  # v2: answer units follow the docs' structure (units.py)
# A question that asks for an amount: an asking sentence, or its ", and ..." clause, opens with it
# ("How long does the PIN stay valid, and how many attempts ...?"); "How can I see how many ..." does not.
_ASKS_AMOUNT = re.compile(
    r"(?:^|[?.!]\s+|,\s*(?:and|or)\s+)(?:(?:and|so|ok|okay|roughly|approximately|about)[,\s]+)*"
    r"(?:how\s+(?:many|much|long|often|large|big|old)|what\s+(?:is|are)\s+the\s+(?:maximum|minimum|limit|limits|price|cost)\b)",
    re.IGNORECASE,
)
_AMOUNT = re.compile(
    r"\d|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    r"hundred|thousand|million|once|twice|unlimited|no\s+limit)\b",
    re.IGNORECASE,
)


MAX_ENTRIES = 2  # API entries an answer quotes at most
_CODE_BONUS = 0.2  # how far ahead a sentence naming code competes (see ``_choose``)


def _score(candidate: _Candidate, similarity: float, asked_terms: set[str]) -> float:
    """How well a sentence answers: its meaning, the asked words it repeats, and its chunk's rank."""
    overlap = len(asked_terms & content_terms(candidate.text)) / max(1, len(asked_terms))
    return 0.6 * similarity + 0.4 * overlap - 0.05 * candidate.ranked_as


def _preferred(candidate: _Candidate) -> float:
    """What orders sentences: the trained scorer's preference where one ran, else the hand-set score."""
    return candidate.score if candidate.preference is None else candidate.preference


def _views(prose: list[_Candidate]) -> list[UnitView]:
    return [UnitView(c.text, c.chunk.section, c.ranked_as, c.position) for c in prose]


def _names_code(candidate: _Candidate) -> bool:
    return "`" in candidate.text


def _quoted(piece: Piece, chunk_id: str) -> str:
    """A piece as the answer quotes it: code as a (bounded) block with the id below it, prose with its marker."""
    return bounded_code(piece.text) + f"\n[{chunk_id}]" if piece.kind == "code" else with_markers(piece.text, [chunk_id])


def _dangles(text: str) -> bool:
    return announces(text) or looks_like_term(text)


def _carries_code(candidate: _Candidate) -> bool:
    pieces = read_pieces(candidate.chunk.text)
    if candidate.continuation is not None:
        following, rest = candidate.continuation
        return any(read_pieces(following.text)[i].kind == "code" for i in rest.indices)
    return any(pieces[i].kind == "code" for i in candidate.unit.indices)


def _lead_entry(chosen: list[_Candidate], chunks: Sequence[Chunk]) -> tuple[str, str] | None:
    """The page and anchor of the API entry an answer leads with: when retrieval ranked an API entry first,
    the question is about an entry, and the quoted entry whose sentence answers it best comes first
    (its signature, then its description), even where a guide section ranked above it."""
    if not chunks or entry_signature(chunks[0]) is None:
        return None
    entries = [c for c in chosen if not c.is_code and entry_signature(c.chunk) is not None]
    if not entries:
        return None
    lead = max(entries, key=_preferred).chunk
    return lead.doc_path, lead.anchor


def _next_chunks(chunks: Sequence[Chunk]) -> dict[str, Chunk]:
    """Each retrieved chunk's successor in its section (``page#anchor/2`` after ``/1``), where retrieved too."""
    by_id = {c.id: c for c in chunks}
    out = {}
    for chunk in chunks:
        base, _, n = chunk.id.rpartition("/")
        if n.isdigit() and f"{base}/{int(n) + 1}" in by_id:
            out[chunk.id] = by_id[f"{base}/{int(n) + 1}"]
    return out


@dataclass
class _Candidate:
    chunk_rank: int
    position: int
    chunk: Chunk
    text: str
    is_code: bool
    unit: AnswerUnit  # what quoting it takes (units.py): a code block is its own unit
    ranked_as: int = 0  # the rank its score counts: its chunk's, or that of the chunk it continues
    # an announcement its chunk ends on: the section's next chunk (retrieved too) and what of it comes along
    continuation: tuple[Chunk, AnswerUnit] | None = None
    score: float = 0.0  # the hand-set score (``_score``): what the floors are measured on
    preference: float | None = None  # the trained scorer's, where one is used: what orders the sentences


class ExtractiveGenerator:
    name = "extractive"
    model = "extractive (all-MiniLM-L6-v2 sentence scoring)"

    def __init__(
        self, encoder: BiEncoder, min_sentence_score: float, max_units: int = 4, chunks_considered: int = 3,
        scorer: UnitScorer | None = None,
    ):
        self.encoder = encoder
        self.scorer = scorer  # the trained sentence scorer (unit_features.py); None: the hand-set score orders too
        self.sentences = EmbeddingCache(encoder, "extractive_sentences")  # docs text: reused across requests
        self.min_sentence_score = min_sentence_score
        self.max_units = max_units
        self.chunks_considered = chunks_considered

    def _candidates(self, chunks: Sequence[Chunk]) -> list[_Candidate]:
        """The quotable pieces of the top chunks, each with the unit quoting it takes. Consecutive
        chunks of a section overlap, so a sentence repeated in a later chunk is left out: quoted
        twice, it would fill a slot and say nothing new. A sentence that cannot be quoted whole (an
        announcement of what its chunk no longer holds, a step of a procedure the chunk holds only
        part of) is left out too. (Code stays: a sample is quoted once at most.)"""
        out = []
        seen: set[str] = set()
        cut_short: dict[str, int] = {}  # announcements a chunk ends on, by the rank of that chunk
        next_chunk = _next_chunks(chunks)
        for rank, chunk in enumerate(chunks[: self.chunks_considered]):
            pieces = read_pieces(chunk.text)
            signature = entry_signature(chunk)
            own = signature.split("\n")[-1] if signature else None
            for position, piece in enumerate(pieces):
                is_code = piece.kind == "code"
                if piece.text.strip("`") == own:
                    continue  # an API entry's signature is quoted as code, ahead of the entry's sentences
                unit = AnswerUnit((position,)) if is_code else unit_of(pieces, position)
                continuation = None
                if unit is None and position == len(pieces) - 1:
                    cut_short.setdefault(piece.text, rank)
                    following = next_chunk.get(chunk.id)
                    rest = continued(piece, read_pieces(following.text)) if following else None
                    if rest is None:
                        continue
                    unit, continuation = AnswerUnit((position,)), (following, rest)
                if unit is None:
                    continue
                if not is_code and len(content_terms(piece.text)) < 3:
                    continue  # fragments like "For example:" carry no claim
                if not is_code and piece.text in seen:
                    continue
                seen.add(piece.text)
                # the chunker repeats a chunk's last lines at the next chunk's start: an announcement
                # the earlier chunk ended on is quoted from the later one, as highly as it ranked there
                ranked_as = cut_short.get(piece.text, rank)
                out.append(_Candidate(rank, position, chunk, piece.text, is_code, unit, ranked_as, continuation))
        return out

    def _scored(self, question: str, candidates: list[_Candidate]) -> tuple[np.ndarray, list[float]]:
        """Each candidate's hand-set score, set on it; its vector and its similarity to the question. A
        sentence is embedded with its section heading, which often carries the topic it omits."""
        vectors = self.sentences.encode([f"{c.chunk.section}: {c.text}" for c in candidates])
        similarities = [float(s) for s in vectors @ question_vector(question, self.encoder)]
        asked = content_terms(question)
        for candidate, similarity in zip(candidates, similarities):
            candidate.score = _score(candidate, similarity, asked)
        return vectors, similarities

    @staticmethod
    def _prose_features(question: str, candidates: list[_Candidate], similarities: list[float]) -> tuple[list[_Candidate], np.ndarray]:
        """The prose candidates and their features (``unit_features.NAMES``): what a trained scorer reads."""
        pairs = [(c, s) for c, s in zip(candidates, similarities) if not c.is_code]
        prose = [c for c, _ in pairs]
        return prose, unit_features(question, _views(prose), [s for _, s in pairs])

    def generate(self, question: str, chunks: Sequence[Chunk], history: Sequence[HistoryTurn]) -> Generation:
        candidates = self._candidates(chunks)
        if not candidates:
            return self._decline("the retrieved docs hold no quotable sentence")
        vectors, similarities = self._scored(question, candidates)
        prose = [c for c in candidates if not c.is_code]
        if not prose:
            return self._decline("the retrieved docs hold no quotable sentence")
        if self.scorer is not None:
            _, features = self._prose_features(question, candidates, similarities)
            for candidate, preference in zip(prose, self.scorer.score(features)):
                candidate.preference = float(preference)
        chosen = self._choose(prose, candidates, self._clause_answers(question, candidates, vectors))
        if _ASKS_AMOUNT.search(question) and not any(_AMOUNT.search(c.text) for c in chosen):
            # an answer to "how many ...?" without a number does not answer it: quote the closest
            # passage that states one, else decline (the docs lack the asked figure)
            stated = max((c for c in candidates if _AMOUNT.search(c.text)), key=_preferred, default=None)
            if stated is None or stated.score < self.min_sentence_score:
                return self._decline("no sentence in the retrieved docs states the amount the question asks for")
            chosen.append(stated)
        return Generation(text=self._render(chosen, _lead_entry(chosen, chunks)), backend=self.name, model=self.model, prompt_version=PROMPT_VERSION)

    @staticmethod
    def _render(chosen: list[_Candidate], lead: tuple[str, str] | None = None) -> str:
        """The chosen pieces' units in the docs' order (the ``lead`` entry's chunks first), each piece
        cited to its chunk: an API entry's signature first (once, when two of its chunks are quoted),
        a cut list or table followed by the cut mark, a sentence two chunks share once, and never an
        announcement last."""
        lines: dict[tuple[bool, int, float], str] = {}
        quoted: set[str] = set()
        signed: set[str] = set()  # the entries whose signature is quoted: once, above its first chunk

        def place(candidate: _Candidate, at: float) -> tuple[bool, int, float]:
            return ((candidate.chunk.doc_path, candidate.chunk.anchor) != lead, candidate.chunk_rank, at)

        for candidate in sorted(chosen, key=lambda c: place(c, c.position)):
            chunk, ids = candidate.chunk, [candidate.chunk.id]
            pieces = read_pieces(chunk.text)
            signature = entry_signature(chunk)
            if signature is not None and chunk.anchor not in signed:
                signed.add(chunk.anchor)
                lines.setdefault(place(candidate, -1), f"```\n{signature}\n```\n[{chunk.id}]")
            for i in candidate.unit.indices:
                piece = pieces[i]
                if signature is not None and piece.text.strip("`") == signature.split("\n")[-1]:
                    continue  # already quoted, as code
                if piece.kind == "code" or piece.text not in quoted:
                    quoted.add(piece.text)
                    lines.setdefault(place(candidate, i), _quoted(piece, chunk.id))
            if candidate.unit.cut:
                lines.setdefault(place(candidate, candidate.unit.indices[-1] + 0.5), with_markers(CUT_MARK, ids))
            if candidate.continuation is not None:  # right after the announcement, cited to the next chunk
                following, rest = candidate.continuation
                key = candidate.unit.indices[-1]
                step = 1 / (len(rest.indices) + 2)  # their keys fall between the announcement's and the next piece's
                for n, piece in enumerate(read_pieces(following.text)[i] for i in rest.indices):
                    lines.setdefault(place(candidate, key + (n + 1) * step), _quoted(piece, following.id))
                if rest.cut:
                    lines.setdefault(place(candidate, key + 1 - step), with_markers(CUT_MARK, [following.id]))
        ordered = [lines[key] for key in sorted(lines)]
        # an announcement, or a term whose definition was quoted from another chunk, says nothing last
        while ordered and not ordered[-1].startswith("```") and _dangles(without_citations(ordered[-1]).strip()):
            ordered.pop()
        return "\n".join(ordered)

    def _clause_answers(self, question: str, candidates: list[_Candidate], vectors: np.ndarray) -> list[_Candidate]:
        """For a question that asks several things ("what command ..., and is there a conventional
        name ...?"), the prose sentence that best answers each (none for a single ask): scored against
        the whole question, the sentence answering its larger part outranks every answer to the rest."""
        clauses = asked_clauses(question)
        if len(clauses) < 2:
            return []
        similarities = vectors @ self.encoder.encode(clauses).T
        answers = []
        for n, clause in enumerate(clauses):
            terms = content_terms(clause)
            scored = [(_score(c, float(similarities[i, n]), terms), c) for i, c in enumerate(candidates) if not c.is_code]
            score, best = max(scored, key=lambda pair: pair[0] + _CODE_BONUS * _names_code(pair[1]))
            if score >= self.min_sentence_score and best not in answers:
                answers.append(best)
        return answers

    def _choose(self, prose: list[_Candidate], candidates: list[_Candidate], clause_answers: list[_Candidate]) -> list[_Candidate]:
        """The best sentence, the best for each thing the question asks, the section's lead, the next
        best up to ``max_units``, and the code sample that goes with them.

        Whether to answer was decided before generation (retrieval margin, question gate): a weak
        best sentence is still the closest the docs come. Declining on its score refused only
        answerable questions (7 of 7 such declines over every case set, 2026-11-25), mostly long
        questions whose story dilutes every sentence's score."""
        best = max(prose, key=_preferred)
        top = max(c.score for c in prose)  # the floors read the hand-set score, whichever scorer orders
        floor = max(self.min_sentence_score, 0.8 * top)
        chosen = [best, *(c for c in clause_answers if c is not best)]
        lead = next((c for c in prose if c.chunk_rank == 0), None)  # a section's opening states its point
        if lead is not None and lead not in chosen and lead.score >= 0.7 * top and len(chosen) < self.max_units:
            chosen.append(lead)
        # A sentence that names code (an option, a command, a function: what how-to answers hinge on)
        # qualifies down to 0.6 x the best score and competes for the last slots 0.2 ahead of prose
        # that names none (2026-11-25, every dev set: keyword correctness up on four, down on none).
        code_floor = max(self.min_sentence_score, 0.6 * top)
        # an API question is about the API entry among the top chunks whose sentence answers it best:
        # that sentence comes, whatever its score beside other sections' (its signature with it,
        # ``_render``); a second entry's best sentence comes too where it qualifies as code does
        # (``bisect_left`` ranked above ``insort`` for "add a value at the right position")
        entries: dict[str, _Candidate] = {}  # each entry's best sentence, best entry first
        for candidate in sorted(prose, key=lambda c: -_preferred(c)):
            if entry_signature(candidate.chunk) is not None:
                entries.setdefault(candidate.chunk.anchor, candidate)
        ranked = list(entries.values())
        if ranked and ranked[0] not in chosen and len(chosen) < self.max_units:
            chosen.append(ranked[0])
        quoted = {c.chunk.anchor for c in chosen} & entries.keys()
        for candidate in ranked:
            if len(chosen) >= self.max_units or len(quoted) >= MAX_ENTRIES or candidate.score < code_floor:
                break
            if candidate.chunk.anchor not in quoted:
                chosen.append(candidate)
                quoted.add(candidate.chunk.anchor)
        rest = sorted(
            (c for c in prose if c not in chosen and (c.score >= floor or (_names_code(c) and c.score >= code_floor))),
            key=lambda c: -(c.preference if c.preference is not None else c.score + _CODE_BONUS * _names_code(c)),
        )
        chosen += rest[: max(0, self.max_units - 1 - len(chosen))]
        code = None if any(c.is_code or _carries_code(c) for c in chosen) else self._code_sample(chosen, candidates)
        if code:
            chosen.append(code)
        return chosen

    @staticmethod
    def _code_sample(chosen: list[_Candidate], candidates: list[_Candidate]) -> _Candidate | None:
        """The code sample that goes with the chosen sentences: the one right after a chosen sentence
        (commands and config usually follow their prose; a sentence ending in a colon announces its
        sample, so its sample comes first), else the sample in a chosen sentence's chunk that best
        matches the question (a sample before its prose, or a paragraph away, still belongs to it)."""
        for sentence in sorted(chosen, key=lambda c: not c.text.rstrip().endswith(":")):
            for candidate in candidates:
                if (
                    candidate.is_code
                    and candidate.chunk is sentence.chunk
                    and 0 < candidate.position - sentence.position <= 2
                ):
                    return candidate
        chunks = {id(c.chunk) for c in chosen}
        return max((c for c in candidates if c.is_code and id(c.chunk) in chunks), key=lambda c: c.score, default=None)

    def _decline(self, reason: str) -> Generation:
        return Generation(
            text=f"{NO_ANSWER}: {reason}", backend=self.name, model=self.model, prompt_version=PROMPT_VERSION
        )

    def probe(self) -> str | None:
        return None  # always ready: needs nothing outside this process

    def rewrite_query(self, question: str, history: Sequence[HistoryTurn]) -> str | None:
        return None


def scoring_views(generator: ExtractiveGenerator, question: str, chunks: Sequence[Chunk]) -> tuple[list[_Candidate], np.ndarray, np.ndarray]:
    """The prose sentences ``generate`` chooses among for ``question``, their features
    (``unit_features.NAMES``) and the hand-set score of each: what a trained scorer is fitted on."""
    candidates = generator._candidates(chunks)
    if not candidates:
        return [], np.zeros((0, len(NAMES))), np.zeros(0)
    _, similarities = generator._scored(question, candidates)
    prose, features = generator._prose_features(question, candidates, similarities)
    return prose, features, np.asarray([c.score for c in prose])
