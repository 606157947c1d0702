"""How much text the embedder reads: its word-piece limit and a counter for it.

The bi-encoder (all-MiniLM-L6-v2) reads at most 256 word pieces, [CLS] and [SEP] included, and
silently drops the rest, so the tail of a longer chunk is invisible to dense search. The chunker
sizes chunks with the model's own tokenizer (the ``tokenizers`` library, no torch), so what it
counts is exactly what the model sees.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..models.encoders import BI_ENCODER_PACKAGE, package_model_dir


@dataclass(frozen=True)
class PieceBudget:
    max_pieces: int  # the model's max sequence length, special tokens included
    count: Callable[[str], int]  # word pieces of a text as the model encodes it, special tokens included

    def pieces(self, text: str) -> int:
        """Word pieces ``text`` adds after a newline in a longer input (no special tokens).

        The tokenizer splits at whitespace first, so counts of newline-joined parts add up."""
        return self.count(text) - 2


@lru_cache(maxsize=1)
def embedder_budget() -> PieceBudget:
    from tokenizers import Tokenizer

    model_dir = package_model_dir(BI_ENCODER_PACKAGE)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    max_pieces = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    return PieceBudget(max_pieces, lambda text: len(tokenizer.encode(text).ids))
