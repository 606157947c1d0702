"""Validate: only sentences whose cited chunks support them reach the user; else an honest refusal.

The validator (``validator``) checks every backend's output sentence by sentence: lexical and
embedding support (``support``), or LLM entailment when a backend has an LLM (``entailment``);
``question`` refuses before generating when the question names things the docs never mention;
``thresholds`` reads the global, calibrated thresholds (``thresholds.toml``).

Layer: under ``ask``, beside ``retrieve``. May import ``generate`` (the refusal text, the LLM judge),
``models`` and the shared modules; never ``retrieve``, ``index``, ``ingest``, ``ask`` or above.
"""
