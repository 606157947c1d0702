"""A corpus's postings read out of its FTS5 table, tokenized by FTS5 itself.

The impact index (``bm25.py``) must see exactly the lexemes, frequencies and lengths FTS5's
``bm25()`` sees, or rankings drift. Rather than re-implementing FTS5's Porter stemmer, every
distinct word is run through FTS5's own tokenizer (an in-memory table with the corpus tables'
tokenizer, read back through ``fts5vocab``). Words are split at whitespace first, which the
``unicode61`` tokenizer always treats as a separator, so tokenizing word by word gives the same
token stream as tokenizing the whole text.
"""

from __future__ import annotations

import sqlite3
import itertools
import threading
from collections.abc import Sequence

import numpy as np

from ..types import ChunkId
from .bm25 import FIELD_WEIGHTS, Postings


class Fts5Tokenizer:
    """FTS5's tokenizer (as declared by ``table_sql``), applied to arbitrary strings."""

    def __init__(self, table_sql: str) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(table_sql.format(table="words"))
        self._db.execute("CREATE VIRTUAL TABLE words_instances USING fts5vocab(words, 'instance')")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, texts: Sequence[str]) -> list[tuple[str, ...]]:
        """The lexemes FTS5 indexes for each text, in order (texts seen before are remembered)."""
        known = {text: self._cache.get(text) for text in texts}
        missing = [text for text, lexemes in known.items() if lexemes is None]
        if missing:
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT INTO words (rowid, body) VALUES (?, ?)", enumerate(missing, start=1))
                found: dict[int, list[str]] = {}
                for doc, term in self._db.execute("SELECT doc, term FROM words_instances ORDER BY doc, offset"):
                    found.setdefault(doc, []).append(term)
                self._db.execute("ROLLBACK")
            if len(self._cache) > 100_000:  # query terms are unbounded user input
                self._cache.clear()
            for n, text in enumerate(missing, start=1):
                known[text] = self._cache[text] = tuple(found.get(n, ()))
        return [known[text] for text in texts]


def read_postings(rows: Sequence[tuple[str, str, str, str]], tokenizer: Fts5Tokenizer) -> Postings:
    """Postings from ``(chunk id, title, headings, body)`` rows of an FTS5 table, in row-id order.

    Vectorised: Python touches each chunk field and each distinct word once; the per-token work
    (word to id, counting, summing) runs in C and numpy, as 100k chunks hold ~10M tokens.
    """
    chunk_ids = [ChunkId(r[0]) for r in rows]
    word_lists: list[list[str]] = []
    entry_chunks: list[np.ndarray] = []
    entry_weights: list[np.ndarray] = []
    for column, weight in enumerate(FIELD_WEIGHTS, start=1):
        split = [r[column].split() for r in rows]
        counts = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        word_lists.append(list(itertools.chain.from_iterable(split)))
        entry_chunks.append(np.repeat(np.arange(len(rows), dtype=np.int64), counts))
        entry_weights.append(np.full(int(counts.sum()), weight))
    words = list(itertools.chain.from_iterable(word_lists))
    vocabulary = {word: n for n, word in enumerate(dict.fromkeys(words))}
    word_ids = np.fromiter(map(vocabulary.__getitem__, words), dtype=np.int64, count=len(words))
    chunks = np.concatenate(entry_chunks)
    weights = np.concatenate(entry_weights)
    # each distinct word's lexemes: one for the search terms citedocs indexes, any number in general
    lexemes: dict[str, int] = {}
    per_word = [[lexemes.setdefault(s, len(lexemes)) for s in stems] for stems in tokenizer.tokens(list(vocabulary))]
    counts = np.array([len(p) for p in per_word], dtype=np.int64)
    flat = np.array([row for p in per_word for row in p], dtype=np.int64)
    repeat = counts[word_ids]
    # a chunk's length is its token count, FTS5's xColumnSize over all columns
    lengths = np.bincount(chunks, weights=repeat, minlength=len(chunk_ids)).astype(np.int64)
    # one entry per word occurrence becomes one per lexeme of the word
    offsets = np.arange(int(repeat.sum())) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    first = np.cumsum(counts) - counts
    return Postings.from_entries(
        chunk_ids=chunk_ids,
        lengths=lengths,
        lexemes=list(lexemes),
        lexeme_rows=flat[np.repeat(first[word_ids], repeat) + offsets],
        chunks=np.repeat(chunks, repeat),
        frequencies=np.repeat(weights, repeat),
    )
