"""Top-k BM25 over an in-memory impact index, shared by the SQLite and PostgreSQL stores.

Why not in SQL: FTS5's ``bm25()`` and the PostgreSQL store's BM25 statement score every posting of
every query term one row at a time through the SQL engine, so at 100k chunks a question holding a
common term (``astro`` occurs in nearly every chunk) took 421 ms p50 (FTS5) and 997 ms (PostgreSQL).
Here a corpus's postings are three flat arrays (lexeme rows in CSR form: chunk positions and the
term-frequency half of BM25, precomputed once per corpus version), so a query is one vectorised
add per query term and a partial sort for the top k; the work per posting is a few nanoseconds.

The formula is FTS5's ``bm25()`` (``fts5_aux.c``), written in the same double-precision operations
in the same order, so the scores are bit-identical to FTS5's and the order of ties (ascending row
id, the order FTS5 visits rows) is kept:

    idf(t)    = ln((N - n_t + 0.5) / (n_t + 0.5)), at least 1e-6
    score(d)  = sum over query phrases t in query order of idf(t) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

with f the field-weighted frequency of t in d (title 2, heading path 3, body 1), D the chunk's
length in tokens over all fields, avgdl the corpus average, k1 = 1.2 and b = 0.75. The ``tf_part``
stored per posting is the quotient; the idf is applied per query.

A phrase of several lexemes matches a chunk holding all of them and scores the sum of their terms
(the PostgreSQL store's reading: its postings keep no positions). The SQLite store sends such
phrases to FTS5 itself, which checks adjacency.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..types import ChunkId

FIELD_WEIGHTS = (2.0, 3.0, 1.0)  # page title, heading path, body
K1, B = 1.2, 0.75
_MIN_IDF = 1e-6
SNAPSHOT_FORMAT = "csr-1"  # the layout ``BM25Index.dump`` writes; a change to the index changes it


@dataclass(frozen=True)
class Postings:
    """One corpus's inverted index as the scorer holds it, in CSR form: lexeme ``i``'s entries are
    ``indptr[i]:indptr[i + 1]``, each a chunk position (ascending and unique within a lexeme) with
    its field-weighted term frequency. Chunks are numbered by their position in ``chunk_ids`` (the
    store's row-id order)."""

    chunk_ids: list[ChunkId]
    lengths: np.ndarray  # tokens per chunk over all fields, by position
    lexemes: list[str]
    indptr: np.ndarray  # len(lexemes) + 1 offsets into the two arrays below
    chunks: np.ndarray  # int32 chunk positions
    frequencies: np.ndarray  # field-weighted term frequencies

    @classmethod
    def from_entries(
        cls,
        chunk_ids: list[ChunkId],
        lengths: np.ndarray,
        lexemes: list[str],
        lexeme_rows: np.ndarray,
        chunks: np.ndarray,
        frequencies: np.ndarray,
    ) -> Postings:
        """From one entry per (lexeme, chunk) occurrence, in any order (duplicates are summed): what
        a reader that counts words one by one produces."""
        n = max(len(chunk_ids), 1)
        keys = np.asarray(lexeme_rows, dtype=np.int64) * n + np.asarray(chunks, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.zeros(0, dtype=np.int64)
        summed = np.add.reduceat(np.asarray(frequencies, dtype=np.float64)[order], starts) if len(keys) else np.zeros(0)
        unique_keys = keys[starts]
        return cls(
            chunk_ids=chunk_ids,
            lengths=np.asarray(lengths),
            lexemes=lexemes,
            indptr=np.searchsorted(unique_keys // n, np.arange(len(lexemes) + 1)),
            chunks=(unique_keys % n).astype(np.int32),
            frequencies=summed,
        )


class BM25Index:
    """The impact index of one corpus version; immutable, safe to share between threads."""

    def __init__(
        self, chunk_ids: list[ChunkId], lexemes: list[str], avgdl: float, chunks: np.ndarray, tf_part: np.ndarray, indptr: np.ndarray
    ) -> None:
        self.chunk_ids = chunk_ids
        self.n_chunks = len(chunk_ids)
        self.avgdl = avgdl
        self._chunks = chunks
        self._tf_part = tf_part
        self._indptr = indptr
        self._row = {lexeme: i for i, lexeme in enumerate(lexemes)}
        self._df = np.diff(indptr)

    @classmethod
    def from_postings(cls, postings: Postings) -> BM25Index:
        n = len(postings.chunk_ids)
        # FTS5: (double)nToken / (double)nRow, both exact integers
        avgdl = int(np.asarray(postings.lengths, dtype=np.int64).sum()) / n if n else 1.0
        frequencies = np.asarray(postings.frequencies, dtype=np.float64)
        # the quotient of FTS5's bm25(), f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)), operation
        # for operation (in place, in an order that gives the same doubles: + and * commute exactly),
        # so that a 1M-chunk corpus's build holds two arrays of its postings' size, not six
        denominator = np.asarray(postings.lengths, dtype=np.float64)[postings.chunks]
        denominator *= B
        denominator /= avgdl
        denominator += 1 - B
        denominator *= K1
        denominator += frequencies
        tf_part = frequencies * (K1 + 1.0)
        tf_part /= denominator
        return cls(postings.chunk_ids, postings.lexemes, avgdl, postings.chunks, tf_part, postings.indptr)

    def dump(self) -> bytearray:
        """The index as bytes that ``load`` turns back into an equal index (``SNAPSHOT_FORMAT``): what
        the PostgreSQL store keeps so that other processes load a big corpus's index instead of
        building it again. A JSON header (the average length; each array's type, length and
        offset), then the arrays' bytes, 8-byte aligned, so that ``load`` reads them in place."""
        lexemes = sorted(self._row, key=self._row.__getitem__)
        arrays = {
            "chunk_ids": np.frombuffer("\0".join(self.chunk_ids).encode(), dtype=np.uint8),
            "lexemes": np.frombuffer("\0".join(lexemes).encode(), dtype=np.uint8),
            "chunks": self._chunks,
            "tf_part": self._tf_part,
            "indptr": self._indptr,
        }
        layout, offset = {}, 0
        for name, array in arrays.items():
            layout[name] = (array.dtype.str, len(array), offset)
            offset += -(-array.nbytes // 8) * 8
        header = json.dumps({"format": SNAPSHOT_FORMAT, "avgdl": self.avgdl, "arrays": layout}).encode()
        header += b" " * (-len(header) % 8)
        out = bytearray(8 + len(header) + offset)
        out[:8] = len(header).to_bytes(8, "little")
        out[8 : 8 + len(header)] = header
        for name, array in arrays.items():
            at = 8 + len(header) + layout[name][2]
            out[at : at + array.nbytes] = array.tobytes()
        return out

    @classmethod
    def load(cls, data: bytearray) -> BM25Index:
        """The index ``dump`` wrote; its arrays are views of ``data``. ValueError when ``data`` is not one."""
        size = int.from_bytes(data[:8], "little")
        try:
            header = json.loads(bytes(data[8 : 8 + size]))
            if header.get("format") != SNAPSHOT_FORMAT:
                raise ValueError(f"a BM25 snapshot of format {header.get('format')!r}, not {SNAPSHOT_FORMAT!r}")
            arrays = {
                name: np.frombuffer(data, dtype=np.dtype(kind), count=count, offset=8 + size + offset)
                for name, (kind, count, offset) in header["arrays"].items()
            }
            words = [arrays[name].tobytes().decode().split("\0") if len(arrays[name]) else [] for name in ("chunk_ids", "lexemes")]
            return cls([ChunkId(i) for i in words[0]], words[1], float(header["avgdl"]), arrays["chunks"], arrays["tf_part"], arrays["indptr"])
        except (KeyError, TypeError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a BM25 snapshot: {exc}") from exc

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (the lexeme dictionary and chunk-id list come on top)."""
        return self._chunks.nbytes + self._tf_part.nbytes + self._indptr.nbytes + self._df.nbytes

    def _idf(self, row: int) -> float:
        idf = math.log((self.n_chunks - int(self._df[row]) + 0.5) / (int(self._df[row]) + 0.5))
        return idf if idf > 0.0 else _MIN_IDF

    def _phrase(self, phrase: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Chunk positions holding every lexeme of the phrase, and the phrase's score in each."""
        rows = [self._row.get(lexeme) for lexeme in phrase]
        if not rows or any(row is None for row in rows):
            return None
        slices = [slice(self._indptr[row], self._indptr[row + 1]) for row in rows]
        if len(rows) == 1:
            return self._chunks[slices[0]], self._idf(rows[0]) * self._tf_part[slices[0]]
        common = self._chunks[slices[0]]
        for part in slices[1:]:
            common = np.intersect1d(common, self._chunks[part], assume_unique=True)
        score = np.zeros(len(common))
        for row, part in zip(rows, slices):
            positions = np.searchsorted(self._chunks[part], common)
            score += self._idf(row) * self._tf_part[part][positions]
        return common, score

    def top_k(self, phrases: Sequence[Sequence[str]], limit: int, match_all: bool = False) -> list[tuple[ChunkId, float]]:
        """The ``limit`` best chunks for chunks matching any phrase (every phrase with ``match_all``),
        best first, ties in chunk order; scores are higher-is-better (FTS5's negated)."""
        if not phrases or limit <= 0 or not self.n_chunks:
            return []
        scores = np.zeros(self.n_chunks)
        matched = np.zeros(self.n_chunks, dtype=np.int32)
        for phrase in phrases:
            hit = self._phrase(phrase)
            if hit is None:
                if match_all:
                    return []
                continue
            chunks, score = hit
            scores[chunks] += score
            matched[chunks] += 1
        candidates = np.flatnonzero(matched >= (len(phrases) if match_all else 1))
        values = scores[candidates]
        if len(candidates) > limit:
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            candidates, values = candidates[keep], values[keep]
        order = np.lexsort((candidates, -values))[:limit]
        return [(self.chunk_ids[candidates[i]], float(values[i])) for i in order]
