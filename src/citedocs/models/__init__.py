"""The models citedocs runs, each shipped inside a package and pinned: the MiniLM bi-encoder (torch or
ONNX Runtime), the optional all-mpnet-base-v2 dense model and the local LLM's GGUF file.

Layer: below every pipeline stage (ingest, index, retrieve, generate, validate import from here);
imports only ``citedocs.config``, ``citedocs.threads`` and ``citedocs.metrics``. Inside the package
imports go one way: ``encoders`` -> ``onnx_graph``, ``mpnet`` -> ``files``; ``llm_file`` -> ``files``.
"""
