"""The citation validator: every backend's output passes through here before a user sees it.

Guarantees, in order:
1. an id that was not retrieved for this request never reaches the user;
2. a sentence without a valid citation is dropped;
3. a sentence its cited chunks do not support is re-cited to a retrieved chunk that does, or dropped;
4. code must be copied from a retrieved chunk (its text, or its heading: an API entry's signature);
5. if nothing verifiable remains, the answer becomes a refusal.
Every decision is recorded for the trace.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ..contract import RefusalReason
from ..generate.prompt import NO_ANSWER
from ..i18n import Message
from ..sentences import CODE_CUT_MARK, CUT_MARK, Unit, split_units
from ..types import Chunk
from ..markers import parse_markers, with_markers
from .support import SupportChecker, content_terms


@dataclass
class Decision:
    sentence: str
    action: str  # kept | recited | dropped
    reason: str
    cited: list[str] = field(default_factory=list)  # ids as the model wrote them (valid ones)
    final_ids: list[str] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    coverage: float | None = None
    similarity: float | None = None
    entailment: dict | None = None  # LLM verifier: chunk id -> entailment/contradiction/neutral probabilities


@dataclass
class AcceptedSentence:
    text: str  # without markers
    ids: list[str]

    def rendered(self) -> str:
        if self.text.startswith("```"):
            return self.text + "\n" + " ".join(f"[{i}]" for i in self.ids)  # a fence must close its own line
        return with_markers(self.text, self.ids)


@dataclass
class ValidationResult:
    sentences: list[AcceptedSentence]
    decisions: list[Decision]
    refusal: RefusalReason | None = None
    refusal_detail: Message = Message.verbatim("")  # English as a str; in the user's language on the refusal

    @property
    def answer(self) -> str:
        """Prose sentences run on; a code block stands on its own lines."""
        parts: list[str] = []
        for sentence in self.sentences:
            if sentence.text.startswith("```"):
                parts.append("\n\n" + sentence.rendered() + "\n\n")
            else:
                parts.append(sentence.rendered() + " ")
        return "".join(parts).strip().replace("\n\n\n\n", "\n\n")

    def decisions_as_dicts(self) -> list[dict]:
        return [asdict(d) for d in self.decisions]


def _normalize_code(text: str) -> str:
    """The code's lines as one space-separated run, without its fence or the cut mark that ends a
    block quoted only in part (its lines up to the cut must still be the source's, verbatim)."""
    body = re.sub(r"^```[^\n]*\n|\n?```$", "", text.strip())
    lines = body.split("\n")
    if len(lines) > 1 and lines[-1].strip() == CODE_CUT_MARK:
        lines.pop()
    return " ".join(" ".join(lines).split())


def parse_no_answer(raw: str) -> str | None:
    """The model's refusal reason if it used the NO_ANSWER protocol anywhere in its output."""
    match = re.search(rf"{NO_ANSWER}\s*:?\s*(.*)", raw)
    return match.group(1).strip() if match else None


class CitationValidator:
    def __init__(self, checker: SupportChecker) -> None:
        self.checker = checker

    def validate(self, raw: str, retrieved: list[Chunk]) -> ValidationResult:
        session = self.session(retrieved)
        for unit in split_units(raw):
            session.feed(unit)
        return session.finish(raw)

    def session(self, retrieved: list[Chunk]) -> ValidationSession:
        """Validation one unit at a time, so a streamed answer can show each sentence once it passes."""
        return ValidationSession(self, retrieved)

    def check_unit(self, unit: Unit, retrieved: list[Chunk], by_id: dict[str, Chunk]) -> Decision:
        parsed = parse_markers(unit.text)
        valid = [i for i in parsed.ids if i in by_id]
        decision = Decision(
            sentence=parsed.text,
            action="dropped",
            reason="",
            cited=valid,
            invented=[i for i in parsed.ids if i not in by_id],
            malformed=parsed.malformed,
        )
        if not parsed.text or not re.search(r"\w", parsed.text):
            decision.reason = "empty after removing markers"
        elif unit.is_code:
            decision.sentence = unit.text.strip()  # code as written: its indentation and its ``a[1]`` kept
            self._check_code(decision.sentence, valid, retrieved, decision)
        else:
            self._check_claim(parsed.text, valid, retrieved, by_id, decision)
        return decision

    def _check_code(self, code: str, cited: list[str], retrieved: list[Chunk], decision: Decision) -> None:
        needle = _normalize_code(code)
        sources = sorted(retrieved, key=lambda c: c.id not in cited)  # cited chunks first
        for chunk in sources:
            # an API entry's headings are its signature (with its class's): code may be copied from them too
            sources = (chunk.text, "\n".join(chunk.heading_path))
            if needle and any(needle in " ".join(source.split()) for source in sources):
                decision.action = "kept" if chunk.id in cited else "recited"
                decision.final_ids = [chunk.id]
                decision.reason = "code found verbatim in the chunk"
                return
        decision.reason = "code not found in any retrieved chunk"

    def _check_claim(
        self, text: str, cited: list[str], retrieved: list[Chunk], by_id: dict[str, Chunk], decision: Decision
    ) -> None:
        if not cited:
            decision.reason = "no valid citation" + (" (invented id removed)" if decision.invented else "")
            return
        verdict = self.checker.check(text, [by_id[i] for i in cited])
        decision.coverage, decision.similarity = verdict.coverage, verdict.similarity
        decision.entailment = dict(getattr(verdict, "entailment", None) or {}) or None
        if verdict.supported:
            decision.action, decision.final_ids, decision.reason = "kept", cited, "supported by cited chunk(s)"
            return
        for chunk in retrieved:
            if chunk.id in cited:
                continue
            alternative = self.checker.check(text, [chunk])
            if alternative.supported:
                decision.action, decision.final_ids = "recited", [chunk.id]
                decision.reason = f"cited chunk(s) did not support it ({verdict.reason()}); re-cited"
                decision.coverage, decision.similarity = alternative.coverage, alternative.similarity
                if getattr(alternative, "entailment", None):
                    decision.entailment = {**(decision.entailment or {}), **alternative.entailment}
                return
        decision.reason = f"unsupported: {verdict.reason()}"


class ValidationSession:
    """The validator's state over one answer: units go in as they complete, decisions accumulate,
    and ``finish`` gives exactly what ``CitationValidator.validate`` gives for the whole text."""

    def __init__(self, validator: CitationValidator, retrieved: list[Chunk]) -> None:
        self.validator = validator
        self.retrieved = retrieved
        self.by_id = {c.id: c for c in retrieved}
        self.accepted: list[AcceptedSentence] = []
        self.decisions: list[Decision] = []
        self.declined = False

    def feed(self, unit: Unit) -> AcceptedSentence | None:
        """The unit as the user may see it, or None when it is dropped (or the model declined)."""
        if NO_ANSWER in unit.text:
            self.declined = True
        if self.declined:
            return None
        if parse_markers(unit.text).text == CUT_MARK:
            return self._cut_mark()
        decision = self.validator.check_unit(unit, self.retrieved, self.by_id)
        self.decisions.append(decision)
        if decision.action == "dropped":
            return None
        sentence = AcceptedSentence(decision.sentence, decision.final_ids)
        self.accepted.append(sentence)
        return sentence

    def _cut_mark(self) -> AcceptedSentence | None:
        """``(…)`` says the list or table above goes on in the docs: it stands only right after a
        unit that was kept, cited as that unit is; it states nothing, so nothing else is checked."""
        last = self.decisions[-1] if self.decisions else None
        decision = Decision(sentence=CUT_MARK, action="dropped", reason="cut mark after a dropped unit")
        if last is not None and last.action != "dropped":
            decision.action, decision.final_ids, decision.reason = "kept", list(last.final_ids), "cut mark of the unit above"
        self.decisions.append(decision)
        if decision.action == "dropped":
            return None
        sentence = AcceptedSentence(CUT_MARK, decision.final_ids)
        self.accepted.append(sentence)
        return sentence

    def finish(self, raw: str) -> ValidationResult:
        declined = parse_no_answer(raw)
        if declined is not None:
            said = Message.verbatim(declined.rstrip(".") + ".") if declined else Message("the model found no answer.")
            return ValidationResult([], [], RefusalReason.model_declined, said)
        if not any(content_terms(s.text) for s in self.accepted if not s.text.startswith("```")):
            return ValidationResult([], self.decisions, RefusalReason.nothing_verifiable, Message("no sentence survived validation."))
        return ValidationResult(self.accepted, self.decisions)
