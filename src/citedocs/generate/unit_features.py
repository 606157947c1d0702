"""What the extractive backend reads to choose the sentence it quotes, as numbers a trained scorer weighs.

The hand-set score (``0.6 * similarity + 0.4 * overlap - 0.05 * rank``) picks a sentence that is
*about* the question more often than the one that *states* the asked detail. These features add what
a reader notices: whether the sentence holds the question's rare words (the ones few candidates hold,
which name the asked detail) rather than the topic words every candidate shares, whether its section
heading already says the topic, where it stands in its passage, and whether it names code. The same
function serves training (``scripts/reader/train_unit_scorer.py``) and answering, so what a model was
fitted on is what it scores.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from .. import config
from ..text import content_terms

NAMES = (
    "similarity",  # cosine of the question and "section: sentence" (the bi-encoder)
    "overlap",  # share of the question's content words the sentence holds
    "rare_overlap",  # share of the question's rare words (held by at most one candidate) the sentence holds
    "heading_overlap",  # share of the question's content words its section heading holds
    "rank",  # the rank of the passage it is quoted from (0 = best)
    "position",  # its place in the passage, 0 = first, capped at 8, over 8
    "names_code",  # it names code in backticks
    "length",  # log(1 + its content words)
)


@dataclass(frozen=True)
class UnitView:
    """One quotable sentence as the scorer sees it."""

    text: str
    section: str
    rank: int
    position: int


def unit_features(question: str, units: Sequence[UnitView], similarities: Sequence[float]) -> np.ndarray:
    """The ``NAMES`` features of every unit (rows), read against the question and each other."""
    asked = set(content_terms(question))
    held = [content_terms(u.text) for u in units]
    holders = Counter(term for terms in held for term in terms & asked)
    rare = {term for term in asked if holders[term] <= 1}
    rows = []
    for unit, terms, similarity in zip(units, held, similarities):
        rows.append((
            float(similarity),
            len(asked & terms) / max(1, len(asked)),
            len(rare & terms) / max(1, len(rare)) if rare else 0.0,
            len(asked & content_terms(unit.section)) / max(1, len(asked)),
            float(unit.rank),
            min(unit.position, 8) / 8,
            float("`" in unit.text),
            math.log1p(len(terms)),
        ))
    return np.asarray(rows, dtype=np.float64).reshape(len(units), len(NAMES))


# The weights ``scripts/reader/train_unit_scorer.py --fit`` wrote (figures: docs/decisions/2026-12-01-unit-scorer.md),
# pinned: a changed file is refused, and the hand-set score is used instead, said in /healthz.
SCORER_FILE = Path(str(resources.files("citedocs.generate") / "data" / "unit_scorer.json"))
SCORER_SHA256 = "d912b83f9b2e93b33425486f00b492d7f022dc528dce25a75c92b3586eaddc9e"
log = logging.getLogger(__name__)


class ScorerFileError(RuntimeError):
    """The trained scorer's file is missing, altered or unreadable."""


@dataclass(frozen=True)
class UnitScorer:
    """A linear score over ``NAMES``: higher is likelier the sentence that states the answer."""

    weights: np.ndarray

    def score(self, features: np.ndarray) -> np.ndarray:
        return features @ self.weights


def load_unit_scorer(path: Path = SCORER_FILE, sha256: str = SCORER_SHA256) -> UnitScorer:
    """The trained scorer, checked against its pinned sha256; ``ScorerFileError`` naming the file otherwise."""
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise ScorerFileError(f"the unit scorer's file {path} cannot be read ({exc}); reinstall citedocs") from exc
    digest = hashlib.sha256(body).hexdigest()
    if digest != sha256:
        raise ScorerFileError(f"the unit scorer's file {path} has sha256 {digest}, not the pinned {sha256}; reinstall citedocs")
    spec = json.loads(body)
    if tuple(spec["features"]) != NAMES:
        raise ScorerFileError(f"the unit scorer's file {path} weighs features {spec['features']}, not {list(NAMES)}")
    return UnitScorer(np.asarray(spec["weights"], dtype=np.float64))


def configured_unit_scorer() -> tuple[UnitScorer | None, str]:
    """The scorer the ``extractive_unit_scorer`` setting asks for, and what /healthz says of it: the
    hand-set score when the setting says so, or (logged, never silently) when the file fails its check."""
    if config.setting("extractive_unit_scorer") == "hand-set":
        return None, "hand-set (setting extractive_unit_scorer)"
    scorer, problem = _shipped_scorer()
    if scorer is None:
        return None, f"hand-set (fallback: {problem})"
    return scorer, f"trained ({SCORER_FILE.name}, sha256 {SCORER_SHA256[:12]})"


@functools.lru_cache(maxsize=1)
def _shipped_scorer() -> tuple[UnitScorer | None, str]:
    try:
        return load_unit_scorer(SCORER_FILE, SCORER_SHA256), ""
    except ScorerFileError as exc:
        log.warning("%s; the extractive backend orders sentences by the hand-set score", exc)
        return None, str(exc)
