"""Install-time steps of the Makefile: ``python -m citedocs.models prepare`` exports the bi-encoder's
ONNX graph once into the cache (so the first ingest does not) and checks multilingual-e5's pinned
weights; ``python -m citedocs.models mpnet install|verify`` assembles and checks the optional dense model."""

from __future__ import annotations

import sys

from . import mpnet, multilingual
from .encoders import bi_encoder, dense_encoder

USAGE = "usage: python -m citedocs.models prepare | mpnet install|verify"


def main(argv: list[str]) -> int:
    if argv == ["prepare"]:
        print(f"encoder ready: {bi_encoder().name}")
        try:  # installed with citedocs: a wrong or missing weights file is said at install, not at the first ingest
            print(f"multilingual dense model verified at {multilingual.verify_weights()}")
        except multilingual.MultilingualMissing as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if len(argv) != 2 or argv[0] != "mpnet" or argv[1] not in ("install", "verify"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        path = mpnet.install_model() if argv[1] == "install" else mpnet.verify_model()
    except mpnet.MpnetMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"all-mpnet-base-v2 verified at {path}")
    if argv[1] == "install":  # its ONNX graph, exported once into the model cache
        print(f"encoder ready: {dense_encoder('mpnet').name} on ONNX Runtime")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
