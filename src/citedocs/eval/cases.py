"""Eval case files: JSONL, one case per line (format: evals/README-cases.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator


class Turn(BaseModel):
    role: str = Field(pattern="^(user|assistant)$")
    content: str


class EvalCase(BaseModel):
    id: str
    question: str = Field(min_length=1)
    bucket: str
    should_refuse: bool
    expected_sources: list[str] = []
    requires_all: bool = False
    expected_keywords: list[str] = []
    history: list[Turn] = []
    rationale: str = ""

    @field_validator("expected_sources")
    @classmethod
    def _sources_are_paths(cls, sources: list[str]) -> list[str]:
        for source in sources:
            if not source.split("#", 1)[0]:
                raise ValueError(f"expected source {source!r} has no file path")
        return sources

    @property
    def answerable(self) -> bool:
        return not self.should_refuse

    def expected(self) -> list[tuple[str, str | None]]:
        """(file path, anchor or None for the whole page) per expected source."""
        out = []
        for source in self.expected_sources:
            path, _, anchor = source.partition("#")
            out.append((path, anchor or None))
        return out


class CaseFileError(ValueError):
    pass


def load_cases(path: Path) -> list[EvalCase]:
    """Load and validate a case file; every problem names its line, and duplicate ids are refused."""
    if not path.is_file():
        raise CaseFileError(f"case file not found: {path}")
    cases: list[EvalCase] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = EvalCase.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        except ValidationError as exc:
            first = exc.errors()[0]
            problems.append(f"line {number}: field {'.'.join(map(str, first['loc']))}: {first['msg']}")
            continue
        if case.id in seen:
            problems.append(f"line {number}: duplicate case id {case.id!r} (first on line {seen[case.id]})")
            continue
        seen[case.id] = number
        cases.append(case)
    if problems:
        raise CaseFileError(f"{path}: " + "; ".join(problems))
    if not cases:
        raise CaseFileError(f"{path}: no cases")
    return cases


def corpus_named_by(path: Path) -> str:
    """The corpus a case file is about, from its name: ``mkdocs-material-dev.jsonl`` -> ``mkdocs-material``.

    The shared dev sets are named ``<corpus>-dev.jsonl``; ``--corpus`` overrides."""
    return re.sub(r"-(dev|test|holdout|extra)$", "", path.stem)
