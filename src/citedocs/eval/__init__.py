"""Evaluation: case files (``cases``) run through the full /ask pipeline (``harness``), graded
(``metrics``, ``llm_judge``, ``retrieval``), reported (``report``), gated; ``calibrate`` sets the
refusal threshold from labelled cases.

Layer: beside ``api``, under only ``cli``. May import ``service`` and anything below it; nothing
in the product imports it.
"""
