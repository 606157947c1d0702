"""Ingest: a docs folder (or a crawled site) into a corpus of chunks in the index.

Detect the site generator (``detect``), read each page with its format's reader (``readers/``) into
titled sections, pack them into chunks (``chunker``), admit only what may be evidence (``admission``,
``planted``), embed, and write the changes in one transaction (``pipeline``); ``crawl`` mirrors a
published site first.

Layer: a pipeline stage, beside ``ask`` and ``auth``, under ``service``. May import ``index``,
``models`` and the shared modules (``config``, ``types``, ``sentences``, ``text``); never ``retrieve``,
``generate``, ``validate``, ``service`` or an adapter.
"""
