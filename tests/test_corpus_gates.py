"""Every dev corpus CI can afford holds its measured floors, retrieval and answers alike.

Each ``gates/corpus-<name>.toml`` names its shared docs folder and dev set (``[corpus]``), the
``citedocs eval-retrieval`` floors of hybrid+rerank (``[retrieval.min]``) and, for the small
corpora, the extractive ``citedocs eval`` floors (``[min]``/``[max]``). The small corpora are
ingested here from scratch into one SQLite home (their folders, format detected, as a user would;
a gate that names a ``build`` command, such as citedocs's own docs site, builds its folder first);
Astro reuses the session's full index, and its answer floors stay in ``gates/ci-extractive.toml``
(``test_eval.py``). python-html (25k chunks) is too slow to embed in CI: its floors are enforced by
``make gate-python-html``.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from dataclasses import asdict
from pathlib import Path

import pytest

from citedocs.eval.cases import load_cases
from citedocs.eval.harness import check_gate, run_eval
from citedocs.eval.retrieval import GATED_MODE, check_retrieval_floors, run_retrieval_eval, summarize
from conftest import ASTRO_CORPUS

ROOT = Path(__file__).resolve().parent.parent


def corpus_gate(name: str) -> tuple[Path, dict]:
    path = ROOT / "gates" / f"corpus-{name}.toml"
    return path, tomllib.loads(path.read_text(encoding="utf-8"))["corpus"]


def in_ci(path: Path) -> bool:
    return tomllib.loads(path.read_text(encoding="utf-8"))["corpus"]["ci"]


CI_CORPORA = sorted(p.stem.removeprefix("corpus-") for p in (ROOT / "gates").glob("corpus-*.toml") if in_ci(p))
SMALL_CORPORA = [name for name in CI_CORPORA if name != ASTRO_CORPUS]


@pytest.fixture(scope="session")
def dev_corpora_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dev-corpora") / "citedocs.sqlite3"


def test_every_dev_set_has_a_gate_and_only_python_html_is_gated_outside_ci():
    dev_sets = {p.name.removesuffix("-dev.jsonl") for p in (ROOT / "evals").glob("*-dev.jsonl")}
    gated = {p.stem.removeprefix("corpus-") for p in (ROOT / "gates").glob("corpus-*.toml")}
    assert dev_sets <= gated, f"dev sets without a gate file: {sorted(dev_sets - gated)}"
    assert set(CI_CORPORA) == gated - {"python-html"}


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL_CORPORA)
def test_small_corpus_ingested_from_its_folder_holds_its_floors(name: str, dev_corpora_home: Path, monkeypatch):
    from citedocs.service import Services

    gate, spec = corpus_gate(name)
    services = Services.open(dev_corpora_home, backend="extractive")
    if spec.get("build"):  # a built site (citedocs's own docs): built now, as `make eval` builds it
        command = [sys.executable if arg == "python" else arg for arg in shlex.split(spec["build"])]
        subprocess.run(command, cwd=ROOT, check=True, timeout=600)
    if spec.get("question_languages"):  # asked in other languages than its pages' (a Russian set over English docs)
        monkeypatch.setenv("CITEDOCS_QUESTION_LANGUAGES", spec["question_languages"])
    try:
        services.ingest(ROOT / spec["docs"], name, spec.get("base_url"))  # a page it cannot read is reported, as for a user
        cases_path = ROOT / spec["cases"]
        cases = load_cases(cases_path)
        retrieval = summarize(run_retrieval_eval(cases, services, name, GATED_MODE))
        failures = check_retrieval_floors(asdict(retrieval), gate)
        answers = run_eval(cases, cases_path, services, name)
        failures += check_gate(answers.summary, gate, [c.id for c in cases])
    finally:
        services.store.close()
    assert failures == [], failures
    assert answers.summary["overall"]["invented_citation_rate"] == 0.0


def test_astro_retrieval_holds_its_floors(astro_services):
    gate, spec = corpus_gate(ASTRO_CORPUS)
    cases = load_cases(ROOT / spec["cases"])
    retrieval = summarize(run_retrieval_eval(cases, astro_services, ASTRO_CORPUS, GATED_MODE))
    assert check_retrieval_floors(asdict(retrieval), gate) == []


def test_a_retrieval_floor_above_the_measured_value_fails_and_names_the_metric(tmp_path):
    gate = tmp_path / "gate.toml"
    gate.write_text('[retrieval.min]\n"anchor_recall@8" = 0.9\n"page_recal@8" = 0.5\n')
    summary = {"recall_page": {"@8": 1.0}, "recall_anchor": {"@8": 0.75}, "mrr": 1.0, "ndcg8": 1.0}
    failures = check_retrieval_floors(summary, gate)
    assert failures[0] == f"{GATED_MODE} anchor_recall@8 = 0.750 is below the gate's minimum 0.9"
    assert "unknown retrieval floor 'page_recal@8'" in failures[1]
    gate.write_text("[min]\ncite_coverage = 0.9\n")
    assert check_retrieval_floors(summary, gate) == ["gate.toml has no [retrieval.min] floors; record the ones this run measured"]
