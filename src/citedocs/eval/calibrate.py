"""Calibrating the one retrieval threshold on labelled case files: a margin above each corpus's floor.

The pipeline runs once with the threshold disabled, recording each case's retrieval margin (best
rerank similarity minus its corpus's floor, ``retrieve/null_level.py``) and whether the later stages
refused anyway; then every candidate threshold is scored by the refusal F1 the whole pipeline would
reach with it, over every case file together (one global value). Ties go to the lower threshold
(fewer needless refusals).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.table import Table

from ..contract import AskRequest, HistoryTurn
from ..service import Services
from .cases import EvalCase
from .metrics import refusal_scores


@dataclass
class Calibration:
    threshold: float
    f1: float
    points: list[tuple[float, dict]]
    label: str = "retrieval threshold"

    def table(self) -> Table:
        table = Table(title=f"{self.label}: {self.threshold:.3f} (refusal F1 {self.f1:.3f})")
        for column in ("threshold", "precision", "recall", "F1", "FP", "FN"):
            table.add_column(column)
        for threshold, scores in self.points[:: max(1, len(self.points) // 15)]:
            table.add_row(
                f"{threshold:.3f}",
                *(f"{scores[k]:.3f}" if scores[k] is not None else "n/a" for k in ("precision", "recall", "f1")),
                str(scores["fp"]),
                str(scores["fn"]),
            )
        return table


def calibrate_retrieval_margin(case_sets: list[tuple[list[EvalCase], str]], services: Services) -> Calibration:
    """``case_sets``: each case file's cases and the corpus they ask about."""
    services.__dict__["thresholds"] = replace(services.thresholds, min_retrieval_margin=float("-inf"))
    observations = []
    for cases, corpus in case_sets:
        for case in cases:
            response = services.ask(
                AskRequest(
                    question=case.question,
                    corpus=corpus,
                    history=[HistoryTurn(role=t.role, content=t.content) for t in case.history],
                )
            )
            trace = services.trace(response.trace_id) or {}
            margin = trace["retrieval_confidence"] - trace["retrieval_floor"] if trace.get("retrieved") else -1.0
            observations.append((case.should_refuse, margin, response.refused))

    candidates = sorted({round(margin, 4) for _, margin, _ in observations})
    points = []
    for threshold in [candidates[0] - 1e-4, *candidates, candidates[-1] + 1e-4]:
        rows = [{"should_refuse": s, "refused": refused or margin < threshold} for s, margin, refused in observations]
        points.append((threshold, refusal_scores(rows)))
    best_threshold, best = max(points, key=lambda p: ((p[1]["f1"] or 0.0), -p[0]))
    return Calibration(threshold=best_threshold, f1=best["f1"] or 0.0, points=points, label="retrieval margin")


def calibrate_grade_threshold(rows: list[dict], run_min_grade: float) -> Calibration:
    """The LLM grader's ``min_grade`` that maximises refusal F1 over eval rows (all dev sets together:
    one global value), from the grades each row's trace recorded.

    A case is refused at threshold t when the run refused it for another reason, or when no graded
    chunk reaches t. Runs drop chunks below their own ``min_grade``, so only thresholds at or above
    it can be replayed (what the model would have answered from a dropped chunk is unknown). A quote
    style run stops grading once it has kept enough chunks, so a higher threshold replayed on its rows
    may refuse a case that an ungraded chunk would have kept: calibrate on write-style runs.
    """
    observations = []
    for row in rows:
        grades = [g["p_relevant"] for g in row.get("grades") or [] if g.get("p_relevant") is not None]
        best = max(grades) if grades else None
        other = row["refused"] and not (row.get("refusal_reason") or "").startswith("no_relevant_passage")
        observations.append((row["should_refuse"], best, other))
    candidates = sorted({round(b, 4) for _, b, _ in observations if b is not None and b >= run_min_grade})
    points = []
    for threshold in [run_min_grade, *candidates, (candidates[-1] + 1e-4) if candidates else 1.0]:
        replay = [
            {"should_refuse": s, "refused": other or (best is not None and best < threshold)} for s, best, other in observations
        ]
        points.append((threshold, refusal_scores(replay)))
    best_threshold, best = max(points, key=lambda p: ((p[1]["f1"] or 0.0), -p[0]))
    return Calibration(threshold=best_threshold, f1=best["f1"] or 0.0, points=points, label="LLM grade threshold")
