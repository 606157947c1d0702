"""Evaluation: case files (``cases``) run through the full /ask pipeline (``harness``), graded
(``metrics``, ``llm_judge``, ``retrieval``), reported (``report``), gated; ``calibrate`` sets the
refusal threshold from labelled cases.

Layer: under ``cli``, ``api`` and ``sync`` (whose release gate runs an eval on a new docs version).
May import ``service`` and anything below it.
"""
