"""Generate: an answer from retrieved chunks, every sentence carrying ``[chunk-id]`` markers.

The backends behind one interface (``base``): extractive quoting with no LLM (``extractive``), any
OpenAI-compatible endpoint (``openai_compat``, ``structured``), the local llama.cpp model
(``local``, ``llm_server``), the quote answer style (``quote``), LLM grading of passages
(``grader``, ``yesno``); ``select`` picks one from the settings.

Layer: under ``retrieve`` and ``validate``, which may use its LLM clients. May import ``models``
and the shared modules (``config``, ``contract``, ``markers``, ``sentences``, ``text``, ``types``,
``threads``); never ``validate``, ``retrieve``, ``index``, ``ask`` or above.
"""
