"""citedocs: answers from your docs with a citation on every claim, or an honest refusal."""

__version__ = "0.1.0"
