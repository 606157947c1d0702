"""Calibrating the one retrieval-confidence threshold on a labelled case file.

The pipeline runs once with the threshold disabled, recording each case's retrieval confidence (best rerank similarity) and
whether the later stages refused anyway; then every candidate threshold is scored by the refusal F1
the whole pipeline would reach with it. Ties go to the lower threshold (fewer needless refusals).
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

    def table(self) -> Table:
        table = Table(title=f"retrieval threshold: {self.threshold:.3f} (refusal F1 {self.f1:.3f})")
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


def calibrate_retrieval_threshold(cases: list[EvalCase], services: Services, corpus: str) -> Calibration:
    services.__dict__["thresholds"] = replace(services.thresholds, min_retrieval_score=float("-inf"))
    observations = []
    for case in cases:
        response = services.ask(
            AskRequest(
                question=case.question,
                corpus=corpus,
                history=[HistoryTurn(role=t.role, content=t.content) for t in case.history],
            )
        )
        trace = services.trace(response.trace_id) or {}
        top = trace["retrieval_confidence"] if trace.get("retrieved") else 0.0
        observations.append((case.should_refuse, top, response.refused))

    candidates = sorted({round(top, 4) for _, top, _ in observations})
    points = []
    for threshold in [candidates[0] - 1e-4, *candidates, candidates[-1] + 1e-4]:
        rows = [{"should_refuse": s, "refused": refused or top < threshold} for s, top, refused in observations]
        points.append((threshold, refusal_scores(rows)))
    best_threshold, best = max(points, key=lambda p: ((p[1]["f1"] or 0.0), -p[0]))
    return Calibration(threshold=best_threshold, f1=best["f1"] or 0.0, points=points)
