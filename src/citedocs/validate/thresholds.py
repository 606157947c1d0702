"""Global decision thresholds, read from the checked-in thresholds.toml.

`citedocs calibrate CASES.jsonl ...` recomputes the retrieval margin from case files (every dev set
together: one global value) and rewrites the file; nothing is ever set per question or per corpus.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import config

DEFAULT_PATH = Path(__file__).with_name("thresholds.toml")


@dataclass(frozen=True)
class Thresholds:
    # best reranker similarity among the candidates, minus the corpus's floor (retrieve/null_level.py),
    # below this: refuse before generating
    min_retrieval_margin: float
    support_min_coverage: float  # share of a claim's content words found in its cited chunks
    support_min_similarity: float  # bi-encoder cosine between a claim and its best evidence sentence
    extractive_min_sentence_score: float  # extractive backend: weakest sentence it quotes beside the best one
    min_grade: float = 0.5  # LLM grader: P(passage helps) below this drops the chunk before generation
    min_entailment: float = 0.5  # LLM verifier: P(entailment) at least this for a cited chunk to support a claim
    calibrated_on: str = ""  # what min_retrieval_margin was fitted on
    min_grade_calibrated_on: str = ""  # the eval runs min_grade was fitted on (`citedocs calibrate-grade`)

    def as_dict(self) -> dict:
        return asdict(self)


def thresholds_path() -> Path:
    """The file in use: the ``thresholds`` setting, else the bundled one."""
    return Path(config.setting("thresholds") or DEFAULT_PATH)


class ThresholdsError(config.ConfigError):
    """A thresholds file citedocs cannot use; the message says how to fix it."""


def load_thresholds(path: Path | None = None) -> Thresholds:
    path = path or thresholds_path()
    data = tomllib.loads(path.read_text(encoding="utf-8"))["thresholds"]
    if "min_retrieval_score" in data:
        raise ThresholdsError(
            f"{path}: min_retrieval_score (an absolute similarity) was replaced by min_retrieval_margin, the "
            "margin above each corpus's floor; run `citedocs calibrate CASES.jsonl --write` or copy the bundled "
            f"value from {DEFAULT_PATH}"
        )
    return Thresholds(**data)


def write_thresholds(thresholds: Thresholds, path: Path | None = None) -> None:
    """Rewrite the file in use (``thresholds_path()``, so a calibration never lands in the bundled
    file while another one is configured)."""
    path = path or thresholds_path()
    lines = ["# Written by `citedocs calibrate`; global values, never per question.", "[thresholds]"]
    for key, value in thresholds.as_dict().items():
        lines.append(f"{key} = {value!r}" if not isinstance(value, str) else f'{key} = "{value}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
