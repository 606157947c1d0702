"""Keeping corpora in sync with their docs: sources, sync jobs and workers, signed webhooks, uploads,
and the release gate that holds a new docs version whose answers got worse.

Layer: under ``cli`` and ``api``, over ``eval``. May import ``eval``, ``service`` and anything below them.
"""
