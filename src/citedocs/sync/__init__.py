"""Keeping corpora in sync with their docs: sources, sync jobs and workers, signed webhooks, uploads."""
