"""Retrieve: the chunks of a corpus that best match a question.

BM25 and dense candidates fused by reciprocal rank, then reranked (``hybrid``, ``rerank``); a
follow-up rewritten into a standalone query (``rewrite``); the corpus's floor for "nothing here"
(``null_level``); optional query expansion with an LLM-written passage (``expand``).

Layer: under ``ask``, beside ``validate`` (neither imports the other). May import ``generate`` (only
for the expansion's LLM call), ``index``, ``models`` and the shared modules; never ``ingest``,
``ask``, ``service`` or an adapter.
"""
